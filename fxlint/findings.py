"""The findings model: what a rule reports, and the report a lint returns."""

from __future__ import annotations

import enum
import os
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields, is_dataclass, replace
from types import MappingProxyType
from typing import Any, ClassVar

from ._present import as_html, as_text


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"error": 3, "warning": 2, "info": 1}[self.value]

    @classmethod
    def parse(cls, value: str | Severity) -> Severity:
        if isinstance(value, Severity):
            return value
        try:
            return cls(str(value).lower())
        except ValueError:
            from .errors import ConfigError

            raise ConfigError(
                f"unknown severity {value!r}; expected one of error, warning, info"
            ) from None

    def __str__(self) -> str:
        return self.value


class Violation:
    """What one rule reports about one site: a small frozen dataclass per rule, in the rule's module.

    Its fields are the facts (names, shapes, bytes as the rule computed them); ``message()`` and
    ``fix_title()`` turn them into the user's text, so the words live next to the data they read
    (ruff's ``Violation``). ``to_dict()`` is what JSON output exports under ``details``; the JSON
    schema (``fxlint.reporting.schema``) is generated from the field annotations.
    """

    #: whether the finding says its copy can go (the default), or only that another spelling makes the same copy
    #: faster (FXL402): the runtime confirms the latter with any copy of the op on its line, one every program
    #: pays (``profiler.UNAVOIDABLE``: a selection, a segment statistic) included
    claims_avoidable: ClassVar[bool] = True

    def message(self) -> str:  # pragma: no cover - every violation type overrides it
        raise NotImplementedError(type(self).__name__)

    def fix_title(self) -> str | None:
        """How to fix it, in a sentence (None: no advice beyond the message)."""
        return None

    def gain(self) -> str | None:
        """What fixing it gains besides bytes, in a few words (a gradient cut: the parameters that train
        again); None: nothing beyond the bytes it copies."""
        return None

    def to_dict(self) -> dict[str, Any]:
        """The fields as they are (``Finding.to_dict`` makes them JSON-friendly)."""
        if not is_dataclass(self):
            return {}
        return {f.name: getattr(self, f.name) for f in fields(self) if not f.name.startswith("_")}


def _plain(v: Any) -> Any:
    """A JSON-friendly value: tuples become lists, enums their value, other objects their text."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, enum.Enum):
        return v.value
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if is_dataclass(v) and not isinstance(v, type):
        return {f.name: _plain(getattr(v, f.name)) for f in fields(v)}
    return str(v)


@dataclass(frozen=True)
class Saving:
    """What fixing a finding (or a group of them) is expected to save: never an invented number.

    * ``bytes_per_call``: the bytes its copies move per call (the finding's ``bytes``); None when it is
      not a copy finding (a gradient cut, a graph break) or the size is symbolic;
    * ``bytes_per_step``: with the backward's copies (``backward_bytes``) added, per training step;
      None when the backward is not modelled for the site or adds nothing;
    * ``time_ns``: measured, with the runtime audit (``confirm=True``): the time of the copies that back
      it, the call timed without the profiler split by the profiled shares (``Finding.time_ns``; with
      ``train=True`` per training step); None when not measured;
    * ``gain``: what a fix gains that is not bytes (a gradient cut: which parameters train again).
    """

    bytes_per_call: int | None = None
    bytes_per_step: int | None = None
    time_ns: int | None = None
    gain: str | None = None

    @staticmethod
    def of(code: str, bytes: int | None, backward_bytes: int | None, time_ns: int | None,
           gain: str | None = None) -> Saving:
        if code.startswith(GRADIENT_FAMILY) and not bytes:  # a cut moves no bytes: the gain is the gradient
            return Saving(gain=gain)
        step = bytes + backward_bytes if bytes is not None and backward_bytes else None
        return Saving(bytes_per_call=bytes, bytes_per_step=step, time_ns=time_ns or None, gain=gain)

    def __bool__(self) -> bool:
        return bool(self.bytes_per_call or self.time_ns or self.gain)

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


#: the gradient rules (FXL3xx): their fix saves no bytes, it makes parameters train
GRADIENT_FAMILY = "FXL3"


@dataclass(frozen=True)
class Finding:
    """One problem at one place in the user's program.

    ``file``/``line`` point at the user's source (never a torch or fxlint frame);
    ``bytes`` is the estimated number of bytes copied per call (None when the
    rule is not about a copy or the size depends on dynamic shapes, in which
    case ``bytes_expr`` holds the formula).

    The typed fields the runtime cross-check, JSON/SARIF export and de-duplication read:

    * ``copy_sizes``: the bytes of each copy event the finding stands for (a kernel that copies
      once per batch, a line a loop runs three times); None when one event of ``bytes``, or when
      a size is symbolic;
    * ``backward_bytes``: what the training step's backward copies again because of this site
      (0: nothing; None: not modelled for this site, or not a copy finding); ``backward_sites``: the
      other (file, line) where autograd makes those copies, when they are not the finding's own line;
    * ``repeats``: how many times the line runs per call (an unrolled loop), ``bytes`` the total;
      ``nodes`` the FX node of each instance (None when one);
    * ``tensor_shape``: the tensor the finding is about, for a claim that something is *not*
      copied (FXL108): the cross-check looks for a copy of that shape on the line;
    * ``dedup``: told apart from other findings of the same code, line and module by this key;
    * ``time_ns``: with the runtime audit, the measured time of the copies that back it
      (forward, and backward with ``train=True``): the call timed without the profiler, split by the
      profiled shares (docs/audit.md "Times");
    * ``ranks``: under ``torch.distributed``, after ``Session.gather()``, the ranks that found it
      (None: one process, or not gathered);
    * ``compiled``: for a copy finding, what Inductor's lowering of the graph does with the copy
      (``fxlint.compiled``): ``"survives"`` (``compiled_bytes`` per call in the compiled program),
      ``"fused"`` (no memory traffic of its own: ``compiled_bytes`` 0) or ``"unknown"``; None when
      not asked (an eager inner backend) or not a copy finding; ``compiled_backward_bytes``: what the
      compiled backward graph copies for it per training step (None when no backward was read);
    * ``compiled_only``: the line sits in a branch only ``torch.compile`` takes (``if is_compiling():``):
      the condition and where it is; eager runs the other branch. ``eager_site``: with the runtime
      audit, the line (file, line) where eager makes the same copy instead, when it found one;
    * ``via``: the frames inside the reported line, outermost first (``einops/einops.py:600 in
      rearrange``...): the line is the innermost one outside torch and the pass-through libraries;
    * ``violation``: the rule's typed record (``details`` is its data plus the fields above).

    ``saving`` (derived, in JSON too) is what fixing it is expected to save (``Saving``).
    """

    code: str
    name: str
    severity: Severity
    message: str
    file: str | None = None
    line: int | None = None
    module_path: str | None = None
    bytes: int | None = None
    fix: str | None = None
    bytes_expr: str | None = None
    source: str | None = None  # the user's source line, stripped
    node: str | None = None  # FX node name, for graphs without source locations
    graph: str | None = None  # which captured graph ("graph 0", "forward")
    status: str | None = None  # runtime confirmation: confirmed / refuted / not-run
    suppressed: bool = False
    copy_sizes: tuple[int, ...] | None = None
    backward_bytes: int | None = None
    backward_sites: tuple[tuple[str, int], ...] = ()  # other lines where the backward makes those copies
    repeats: int = 1
    tensor_shape: tuple[int, ...] | None = None
    dedup: str = ""
    time_ns: int | None = None
    ranks: tuple[int, ...] | None = None
    nodes: tuple[str, ...] | None = None  # with repeats > 1: the FX node of each instance
    compiled: str | None = None  # under Inductor (fxlint.compiled): survives / fused / unknown
    compiled_bytes: int | None = None
    compiled_backward_bytes: int | None = None  # what the compiled backward copies for it (None: not read)
    via: tuple[str, ...] | None = None  # the frames inside the line (a pass-through library's, torch's)
    compiled_only: str | None = None  # "`if is_compiling():` at pkg/mod.py:264": eager takes the other branch
    eager_site: tuple[str, int] | None = None  # where eager makes the copy instead (the audit found it)
    violation: Violation | None = field(default=None, compare=False, hash=False, repr=False)

    @property
    def location(self) -> str:
        if self.file is None:
            return f"<graph>:{self.node}" if self.node else "<unknown>"
        path = _display_path(self.file)
        return f"{path}:{self.line}" if self.line is not None else path

    @property
    def details(self) -> Mapping[str, Any]:
        """Read-only: the violation's data and the typed cost fields, as one mapping."""
        d: dict[str, Any] = dict(self.violation.to_dict()) if self.violation is not None else {}
        d.update(copy_sizes=list(self.copy_sizes) if self.copy_sizes is not None else None,
                 backward_bytes=self.backward_bytes, repeats=self.repeats, dedup=self.dedup)
        if self.tensor_shape is not None:
            d.setdefault("shape", self.tensor_shape)
        return MappingProxyType(d)

    @property
    def judged_compiled(self) -> bool:
        """Judged on the compiled program: Inductor's lowering said what happens to the copy."""
        return self.compiled in ("survives", "fused") and (self.compiled_bytes is not None
                                                           or self.compiled_backward_bytes is not None)

    @property
    def cost_bytes(self) -> int | None:
        """The bytes per call of the program the finding is judged on: what the compiled program copies
        (``compiled_bytes``) when Inductor's lowering said (survives or fused), else eager's ``bytes``.
        Harm order, savings and the per-line figures read this."""
        return (self.compiled_bytes or 0) if self.judged_compiled else self.bytes

    @property
    def saving(self) -> Saving:
        """What fixing it is expected to save: its bytes per call (``cost_bytes``: the compiled program's
        when judged under Inductor; and per training step, where eager's backward copies again), the
        measured time with the audit, or for a gradient cut what it gains instead (``Saving``)."""
        gain = self.violation.gain() if self.violation is not None else None
        backward = self.compiled_backward_bytes if self.compiled is not None else self.backward_bytes
        return Saving.of(self.code, self.cost_bytes, backward, self.time_ns, gain)

    def key(self) -> tuple:
        """Identity used to deduplicate the same finding across graphs and recompiles."""
        where = (self.file, self.line) if self.file is not None else (None, self.node)
        return (self.code, *where, self.module_path, self.dedup)

    def with_(self, **changes: Any) -> Finding:
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``fxlint.reporting.schema.FINDING`` documents every key)."""
        d: dict[str, Any] = {f.name: _plain(getattr(self, f.name)) for f in fields(self) if f.name != "violation"}
        d["details"] = _plain(self.violation.to_dict()) if self.violation is not None else {}
        d["saving"] = self.saving.to_dict()
        return d


def _display_path(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:  # different drive on Windows
        return path
    return path if rel.startswith("..") else rel


def dedupe(findings: Iterable[Finding]) -> list[Finding]:
    """Keep the first finding per ``Finding.key()``, preserving order."""
    seen: set[tuple] = set()
    out: list[Finding] = []
    for f in findings:
        k = f.key()
        if k not in seen:
            seen.add(k)
            out.append(f)
    return out


def sort_by_harm(findings: Iterable[Finding]) -> list[Finding]:
    """Most harmful first: errors (a parameter that never trains, a program that raises on the target
    device), then warnings, then infos; within each, the most bytes per call first (``cost_bytes``: the
    compiled program's under Inductor), then by location."""
    return sorted(
        findings,
        key=lambda f: (
            -f.severity.rank,
            -(f.cost_bytes or 0),
            f.file or "",
            f.line or 0,
            f.code,
        ),
    )


@dataclass
class FirstCall:
    """What the first call does that the later ones do not: it filled ``caches`` (module attributes,
    ``blocks.0.attn.attention_bias_cache``), and ``findings`` are that call's alone (the lint reports
    the second call, the program that runs on every call)."""

    caches: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"caches": list(self.caches), "findings": [f.to_dict() for f in self.findings]}


def first_call_only(first: Report, steady: Report, caches: list[str]) -> FirstCall:
    """The findings of the first call's report that the steady-state report has not (same rule, same
    line), with the caches that call filled."""
    def key(f: Finding) -> tuple:
        return (f.code, f.file, f.line) if f.file is not None else (f.code, f.node)

    seen = {key(f) for f in [*steady.findings, *steady.suppressed, *steady.baselined]}
    return FirstCall(list(caches), [f for f in first.findings if key(f) not in seen])


@dataclass
class Report:
    """The result of a lint: active findings, silenced ones, and any internal errors."""

    findings: list[Finding] = field(default_factory=list)
    suppressed: list[Finding] = field(default_factory=list)
    baselined: list[Finding] = field(default_factory=list)  # known findings a baseline file filtered out
    graphs: int = 0
    graph_breaks: int = 0
    errors: list[str] = field(default_factory=list)  # fxlint internal failures, per rule
    unexplained: list[dict[str, Any]] = field(default_factory=list)  # runtime copies no finding explains
    audit_summary: dict[str, Any] | None = None  # set when the report was confirmed by the audit
    first_call: FirstCall | None = None  # set when the first call filled a cache (the report is the second's)
    extras: dict[str, Any] = field(default_factory=dict)

    def __iter__(self) -> Iterator[Finding]:
        return iter(self.findings)

    def __len__(self) -> int:
        return len(self.findings)

    def codes(self) -> set[str]:
        return {f.code for f in self.findings}

    def by_code(self, code: str) -> list[Finding]:
        return [f for f in self.findings if f.code == code]

    def at_or_above(self, severity: Severity | str) -> list[Finding]:
        sev = Severity.parse(severity)
        return [f for f in self.findings if f.severity.rank >= sev.rank]

    @property
    def total_bytes(self) -> int:
        return sum(f.bytes or 0 for f in self.findings)

    def summary(self) -> dict[str, Any]:
        counts = Counter(f.severity.value for f in self.findings)
        return {
            "findings": len(self.findings),
            "errors": counts.get("error", 0),
            "warnings": counts.get("warning", 0),
            "infos": counts.get("info", 0),
            "suppressed": len(self.suppressed),
            "baselined": len(self.baselined),
            "bytes_per_call": self.total_bytes,
            "graphs": self.graphs,
            "graph_breaks": self.graph_breaks,
            "internal_errors": len(self.errors),
            **({"compiled": {v: sum(f.compiled == v for f in self.findings) for v in ("survives", "fused", "unknown")}
                | {"bytes_per_call": sum(f.compiled_bytes or 0 for f in self.findings if f.compiled == "survives")}
                | ({"backward_bytes_per_step": sum(f.compiled_backward_bytes or 0 for f in self.findings)}
                   if any(f.compiled_backward_bytes is not None for f in self.findings) else {})}
               if any(f.compiled is not None for f in self.findings) else {}),
            **({"confirmed": sum(f.status == "confirmed" for f in self.findings),
                "refuted": sum(f.status == "refuted" for f in self.findings),
                "not_run": sum(f.status == "not-run" for f in self.findings)}
               if self.audit_summary is not None else {}),
            "by_code": dict(sorted(Counter(f.code for f in self.findings).items())),
        }

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "findings": [f.to_dict() for f in sort_by_harm(self.findings)],
            "suppressed": [f.to_dict() for f in self.suppressed],
            "baselined": [f.to_dict() for f in self.baselined],
            "summary": self.summary(),
            "errors": list(self.errors),
        }
        if self.audit_summary is not None:
            d["runtime"] = {"audit": self.audit_summary, "unexplained": self.unexplained}
        if self.first_call is not None:
            d["first_call"] = self.first_call.to_dict()
        return d

    def __str__(self) -> str:
        return as_text(self)  # fxlint.renderers.text.render_text

    def __repr__(self) -> str:
        counts = Counter(f.code for f in self.findings)
        codes = ", ".join(f"{c} x{n}" if n > 1 else c for c, n in sorted(counts.items()))
        n = len(self.findings)
        return (f"<fxlint.Report: {n} finding{'s' if n != 1 else ''}{' (' + codes + ')' if codes else ''}, "
                f"{self.graphs} graph{'s' if self.graphs != 1 else ''}; print() it for the table>")

    def _repr_html_(self) -> str | None:
        return as_html(self)  # fxlint.renderers.html: the report page, inline in a notebook
