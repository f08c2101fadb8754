"""The runtime copy audit: what the program really copies, measured with ``torch.profiler``.

``audit(model, example_inputs, train=False)`` runs the model eagerly (one
warm-up call, then one profiled call), records every data copy including the
ones kernels make internally, attributes each to the user's source line and
module, and aggregates them per line. With ``train=True`` the profiled call is
a training step: forward, then backward of a scalar made from the outputs
(each floating output times a fixed random tensor, summed, so the gradients
flowing back are dense and the loss itself adds no copies).

The model is left as it was found: buffers, ``.grad`` of parameters and the
RNG state are restored.
"""

from __future__ import annotations

import contextlib
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from .._present import as_html, as_text
from ..errors import CaptureError, ModelError
from .profiler import CopyEvent, profile_copies

__all__ = ["AuditReport", "CopyEvent", "LineStat", "audit"]


@dataclass
class LineStat:
    """The copies made by one source line (and phase) in one call."""

    file: str | None
    line: int | None
    function: str | None
    code: str | None
    module_path: str | None
    phase: str
    count: int
    bytes: int
    share: float  # of all copied bytes
    ops: tuple[str, ...]
    kinds: tuple[str, ...]
    avoidable: bool
    reason: str | None
    location: str = ""
    time_ns: int = 0  # measured time of these copies (profiler)


@dataclass
class AuditReport:
    copies: list[CopyEvent] = field(default_factory=list)
    train: bool = False
    lines_run: set[tuple[str, int]] = field(default_factory=set)  # user lines that ran a torch op
    #: (file, line, module path) of each user line that ran, per module that ran it: a line shared
    #: by several modules (a library's attention function called by every layer) tells them apart
    sites_run: set[tuple[str, int, str | None]] = field(default_factory=set)
    nodes_run: set[str] = field(default_factory=set)  # GraphModule nodes (no source) that ran
    internal_bytes: int = 0  # copies made by fxlint's own loss (train=True), excluded
    #: how long one call takes (forward, with train=True also the loss and backward), and per phase.
    #: The profiler inflates every duration many times over, so no duration it measured is kept as a
    #: time: the call is timed without it (``torch.utils.benchmark``, the median of ``wall_runs`` runs,
    #: interquartile range ``wall_iqr_ns``), and each copy's ``time_ns`` and each phase are that time
    #: split by the profiled shares (a copy that took 10% of the profiled call is 10% of the real one).
    #: ``profiled_call_ns`` is the profiler's own figure, for reference only. When the unprofiled timing
    #: fails, every duration is 0 and ``wall_runs`` is 0: unknown, never a profiled figure.
    call_ns: int = 0
    phase_ns: dict[str, int] = field(default_factory=dict)
    wall_iqr_ns: int = 0
    wall_runs: int = 0
    profiled_call_ns: int = 0

    def __iter__(self) -> Iterator[CopyEvent]:
        return iter(self.copies)

    def __len__(self) -> int:
        return len(self.copies)

    @property
    def total_bytes(self) -> int:
        return sum(c.bytes for c in self.copies)

    @property
    def avoidable_bytes(self) -> int:
        return sum(c.bytes for c in self.copies if c.avoidable)

    @property
    def copy_ns(self) -> int:
        return sum(c.time_ns for c in self.copies)

    def at(self, file: str, line: int, phase: str | None = None) -> list[CopyEvent]:
        return [c for c in self.copies if c.file == file and c.line == line and (phase is None or c.phase == phase)]

    def ran(self, file: str | None, line: int | None) -> bool:
        return file is not None and line is not None and (file, line) in self.lines_run

    def by_line(self) -> list[LineStat]:
        """Copies aggregated per (line, phase, avoidable), most bytes first."""
        groups: dict[tuple, list[CopyEvent]] = defaultdict(list)
        for c in self.copies:
            function = c.function if c.file in (None, "<graph>") else None  # a graph's copies: per function
            groups[(c.file, c.line, function, c.phase, c.avoidable)].append(c)
        total = self.total_bytes or 1
        stats = []
        for (_file, _line, _fn, phase, avoidable), cs in groups.items():
            first = cs[0]
            nbytes = sum(c.bytes for c in cs)
            stats.append(LineStat(
                file=first.file, line=first.line, function=first.function, code=first.code,
                module_path=first.module_path, phase=phase, count=len(cs), bytes=nbytes, share=nbytes / total,
                ops=tuple(dict.fromkeys(f"{c.top_op}>{c.op}" if c.top_op != c.op else c.op for c in cs)),
                kinds=tuple(dict.fromkeys(c.kind for c in cs)), avoidable=avoidable, reason=first.reason,
                location=first.location, time_ns=sum(c.time_ns for c in cs),
            ))
        return sorted(stats, key=lambda s: (-s.bytes, s.file or "", s.line or 0, s.phase))

    def summary(self) -> dict[str, Any]:
        return {
            "copies": len(self.copies),
            "bytes_per_call": self.total_bytes,
            "avoidable_bytes_per_call": self.avoidable_bytes,
            "unavoidable_bytes_per_call": self.total_bytes - self.avoidable_bytes,
            "forward_bytes": sum(c.bytes for c in self.copies if c.phase == "forward"),
            "backward_bytes": sum(c.bytes for c in self.copies if c.phase == "backward"),
            "lines": len({(c.file, c.line) for c in self.copies}),
            "train": self.train,
            "call_ns": self.call_ns,
            "call_iqr_ns": self.wall_iqr_ns,
            "call_runs": self.wall_runs,
            "profiled_call_ns": self.profiled_call_ns,
            "copy_ns": self.copy_ns,
            "unavoidable_copy_ns": sum(c.time_ns for c in self.copies if not c.avoidable),
            **{f"{phase}_ns": ns for phase, ns in self.phase_ns.items()},
        }

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        return {"summary": self.summary(), "lines": [asdict(s) for s in self.by_line()],
                "copies": [asdict(c) for c in self.copies]}

    def __str__(self) -> str:
        return as_text(self)  # fxlint.renderers.audit.render_audit_text

    def __repr__(self) -> str:
        from ..tensor.info import human_bytes

        n, lines = len(self.copies), len({(c.file, c.line) for c in self.copies})
        what = "training step" if self.train else "forward call"
        return (f"<fxlint.AuditReport: {n} cop{'ies' if n != 1 else 'y'}, {human_bytes(self.total_bytes)} per {what} "
                f"({human_bytes(self.avoidable_bytes)} avoidable) on {lines} line{'s' if lines != 1 else ''}; "
                "print() it for the table>")

    def _repr_html_(self) -> str | None:
        return as_html(self)  # fxlint.renderers.audit.render_audit_html: the table, in a notebook


# --------------------------------------------------------------------------- running


def _as_runnable(target: Any) -> tuple[Callable[..., Any], torch.nn.Module | None]:
    if isinstance(target, torch.export.ExportedProgram):
        mod = target.module()
        return mod, mod
    orig = getattr(target, "_orig_mod", None)  # a torch.compile'd module: audit the eager original
    if isinstance(orig, torch.nn.Module):
        target = orig
    if isinstance(target, torch.nn.Module):
        return target, target
    if callable(target):
        owner = getattr(target, "__self__", None)
        return target, owner if isinstance(owner, torch.nn.Module) else None
    raise CaptureError(f"cannot audit {type(target).__name__}: expected an nn.Module, a callable or an ExportedProgram")


def training_loss(out: Any, weights: dict[int, torch.Tensor]) -> torch.Tensor | None:
    """The scalar a training step differentiates: each floating output that requires grad times a
    fixed random tensor of its shape (kept in ``weights`` across calls), summed. The gradient that
    flows back is dense, so the loss adds no copies of its own (``.sum()`` alone would send back
    stride-0 gradients that make kernels copy). None when no output requires grad."""
    from ..capture.graphs import tensors_in

    outs = [o for o in tensors_in(out) if o.requires_grad and (o.dtype.is_floating_point or o.dtype.is_complex)]
    loss = None
    for i, o in enumerate(outs):
        w = weights.get(i)
        if w is None or w.shape != o.shape or w.dtype != o.dtype or w.device != o.device:
            gen = torch.Generator(device=o.device).manual_seed(i) if o.device.type != "meta" else None
            w = weights[i] = torch.randn(o.shape, dtype=o.dtype, device=o.device, generator=gen)
        term = (o * w).sum()
        loss = term if loss is None else loss + term
    return loss


#: how long the audit times the unprofiled call, in seconds (``torch.utils.benchmark``'s ``min_run_time``):
#: ``FXLINT_AUDIT_TIMING_S`` overrides it (the test suite, which audits hundreds of models, uses less)
DEFAULT_TIMING_S = 0.2


def unprofiled_time(step: Callable[[], Any], min_run_time: float | None = None) -> tuple[int, int, int] | None:
    """One call of ``step`` timed without the profiler: (median ns, interquartile range ns, runs), with
    ``torch.utils.benchmark`` on the threads torch uses, for ``min_run_time`` seconds at least (default
    ``FXLINT_AUDIT_TIMING_S``, else 0.2); None when it cannot be timed."""
    import os

    from torch.utils.benchmark import Timer

    if min_run_time is None:
        try:
            min_run_time = float(os.environ.get("FXLINT_AUDIT_TIMING_S", DEFAULT_TIMING_S))
        except ValueError:
            min_run_time = DEFAULT_TIMING_S

    try:
        m = Timer(stmt="step()", globals={"step": step}, num_threads=torch.get_num_threads()) \
            .blocked_autorange(min_run_time=min_run_time)
    except Exception:  # noqa: BLE001 - no time is better than a wrong one
        return None
    return round(m.median * 1e9), round(m.iqr * 1e9), len(m.times) * m.number_per_run


def audit(target: Any, example_inputs: Any = None, *, train: bool = False, attribute: bool = True) -> AuditReport:
    """Measure every copy ``target`` makes on ``example_inputs`` (see module docstring).

    ``attribute=False`` skips the source-line labelling (copies carry no
    location): for compiled callables, where a torch-function mode would make
    Dynamo recompile what it runs.
    """
    from ..capture.graphs import normalise_inputs, preserved_state, require_tensor_output

    fn, module = _as_runnable(target)
    args, kwargs = normalise_inputs(example_inputs)
    weights: dict[int, torch.Tensor] = {}
    params = list(module.parameters()) if module is not None else []
    leaves = params + [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor) and a.is_leaf
                       and a.requires_grad]
    saved_grads = [(p, p.grad) for p in leaves]

    def step(timer: Any = None) -> Any:
        timed = timer if timer is not None else (lambda phase: contextlib.nullcontext())
        with timed("forward"):
            out = fn(*args, **kwargs)
        require_tensor_output(out)
        if train:
            loss = training_loss(out, weights)
            if loss is None:
                raise ModelError("train=True needs a floating-point output that requires grad; none did")
            with timed("backward"):
                loss.backward()
            for p in leaves:
                p.grad = None
        return out

    try:
        with preserved_state(module, (args, kwargs)):
            try:
                with torch.set_grad_enabled(train or torch.is_grad_enabled()):
                    step()  # warm-up: lazy initialisation and first-call caches are not per-call costs
                    trained = [p for p in params if p.requires_grad] if train else []
                    raw = profile_copies(step, module, attribute=attribute, timed=True, trained=trained)
                    wall = unprofiled_time(step)
            except (ModelError, CaptureError):
                raise
            except Exception as exc:
                from ..capture.model_errors import model_error

                raise model_error(exc) from exc
    finally:
        for p, g in saved_grads:
            p.grad = g
    profiled = raw.phase_ns.get("call", 0)
    median, iqr, runs = wall if wall is not None else (0, 0, 0)
    share = median / profiled if profiled and median else 0.0  # profiled ns -> ns of the unprofiled call
    copies = [replace(c, time_ns=round(c.time_ns * share)) for c in raw.copies]
    report = AuditReport(copies=copies, train=train, internal_bytes=raw.internal_bytes, call_ns=median,
                         phase_ns={k: round(v * share) for k, v in raw.phase_ns.items() if k != "call"},
                         wall_iqr_ns=iqr, wall_runs=runs, profiled_call_ns=profiled)
    for site in raw.sites.values():
        if site.location is not None and not site.internal:
            if site.location.file == "<graph>":
                report.nodes_run.add(site.location.function)
            else:
                report.lines_run.add((site.location.file, site.location.line))
                report.sites_run.add((site.location.file, site.location.line, site.module_path))
    return report
