"""Findings grouped by source line: what a person reads.

A 24-block model reports the same copy once per block: 24 findings of one
code on one source line, one per module instance (``blocks.0.attn``,
``blocks.1.attn``, ...). ``group_findings`` makes them one ``Group`` per
(code, source line): how many instances hit it, which modules
(``blocks.{0..23}.attn.proj_l``), the bytes per call summed over them, and the
message once. Groups in the user's own files come first; groups in installed
packages (site-packages: timm, transformers, ...) after them, marked with the
package's name.
"""

from __future__ import annotations

import os
import re
import sysconfig
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..findings import Finding, Saving, Severity

_SITE_DIRS = ("site-packages", "dist-packages")


def _stdlib_dirs() -> tuple[str, ...]:
    out = []
    for key in ("stdlib", "platstdlib"):
        try:
            p = sysconfig.get_paths()[key]
        except KeyError:
            continue
        out.append(os.path.abspath(p) + os.sep)
    return tuple(out)


_STDLIB = _stdlib_dirs()


def library_of(path: str | None) -> str | None:
    """The installed package a file belongs to (``timm`` for ``.../site-packages/timm/models/cait.py``),
    ``"python"`` for the standard library, None for the user's own files."""
    if not path or path.startswith("<"):
        return None
    parts = os.path.abspath(path).split(os.sep)
    for i, part in enumerate(parts):
        if part in _SITE_DIRS and i + 1 < len(parts):
            top = parts[i + 1]
            if top.endswith(".py"):
                top = top[:-3]
            return top.split("-")[0] or None
    if _STDLIB and os.path.abspath(path).startswith(_STDLIB) and "site-packages" not in path:
        return "python"
    return None


def short_path(path: str) -> str:
    """A file as people write it: relative to the working directory, or from the package
    (``timm/models/cait.py``) for installed packages."""
    ap = os.path.abspath(path)
    parts = ap.split(os.sep)
    for i, part in enumerate(parts):
        if part in _SITE_DIRS and i + 1 < len(parts):
            return "/".join(parts[i + 1:])
    try:
        rel = os.path.relpath(ap)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def location_text(location: str, limit: int = 40) -> str:
    """``file:line`` for a table cell: the path as ``short_path`` writes it, and cut from the left
    (``.../models/video.py:11``) when longer than ``limit``, so the file name and line always show
    (a wrapped cell put the line number on a row of its own)."""
    path, sep, line = location.rpartition(":")
    text = f"{short_path(path)}{sep}{line}" if sep and line.isdigit() else location
    return text if len(text) <= limit else "..." + text[-(limit - 3):]


_INT = re.compile(r"^\d+$")


def compress_paths(paths: Sequence[str | None], limit: int = 4) -> str:
    """``blocks.{0..23}.attn.proj_l`` for ``blocks.0.attn.proj_l`` ... ``blocks.23.attn.proj_l``.

    Paths with the same number of parts collapse position by position (equal parts stay,
    integer parts become ranges ``{0..3,6}``, others a set ``{q,k}``); paths of different shapes
    are listed (the first ``limit``, then how many more)."""
    names = list(dict.fromkeys(p or "-" for p in paths))
    if len(names) == 1:
        return names[0]
    split = [n.split(".") for n in names]
    if len({len(s) for s in split}) == 1:
        out = []
        for col in zip(*split):
            values = list(dict.fromkeys(col))
            if len(values) == 1:
                out.append(values[0])
            elif all(_INT.match(v) for v in values):
                out.append("{" + _ranges(sorted(int(v) for v in values)) + "}")
            else:
                out.append("{" + ",".join(values[:limit]) + (",..." if len(values) > limit else "") + "}")
        text = ".".join(out)
        if text.count("{") <= 2:
            return text
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _ranges(xs: list[int]) -> str:
    parts: list[str] = []
    start = prev = xs[0]
    for x in [*xs[1:], None]:
        if x is not None and x == prev + 1:
            prev = x
            continue
        parts.append(str(start) if start == prev else f"{start}..{prev}")
        if x is not None:
            start = prev = x
    return ",".join(parts)


@dataclass
class Group:
    """Every finding of one rule on one source line (one per module instance that ran it)."""

    code: str
    name: str
    file: str | None
    line: int | None
    node: str | None
    findings: list[Finding] = field(default_factory=list)
    #: which of several groups on the same line and code this is (0 for the first)
    index: int = 0

    @property
    def key(self) -> str:
        """A stable id: ``FXL201@timm/models/cait.py:172`` (``#2`` appended for a second group of
        the same rule on the same line)."""
        return f"{self.code}@{self.location}" + (f"#{self.index + 1}" if self.index else "")

    @property
    def first(self) -> Finding:
        return self.findings[0]

    @property
    def count(self) -> int:
        return len(self.findings)

    @property
    def severity(self) -> Severity:
        return max((f.severity for f in self.findings), key=lambda s: s.rank)

    @property
    def library(self) -> str | None:
        return library_of(self.file)

    @property
    def location(self) -> str:
        if self.file is None:
            return self.first.location
        return f"{short_path(self.file)}:{self.line}" if self.line is not None else short_path(self.file)

    @property
    def bytes(self) -> int | None:
        """The instances' bytes per call (``Finding.cost_bytes``: the compiled program's under Inductor)."""
        known = [f.cost_bytes for f in self.findings if f.cost_bytes is not None]
        return sum(known) if known else None

    @property
    def backward_bytes(self) -> int | None:
        known = [f.backward_bytes for f in self.findings if f.backward_bytes is not None and not f.judged_compiled]
        return sum(known) if known else None

    @property
    def bytes_expr(self) -> str | None:
        exprs = list(dict.fromkeys(f.bytes_expr for f in self.findings if f.bytes_expr))
        return " + ".join(exprs) if exprs else None

    @property
    def module_paths(self) -> list[str]:
        return list(dict.fromkeys(f.module_path for f in self.findings if f.module_path))

    @property
    def modules(self) -> str | None:
        """The module instances, compressed: ``blocks.{0..23}.attn.proj_l``."""
        paths = self.module_paths
        return compress_paths(paths) if paths else None

    @property
    def message(self) -> str:
        """The message once: the most expensive instance's, noting when the others' sizes differ."""
        top = max(self.findings, key=lambda f: f.cost_bytes or 0)
        if len({f.message for f in self.findings}) > 1:
            return top.message + f" (sizes differ between the {self.count} instances; this is the largest)"
        return top.message

    @property
    def fix(self) -> str | None:
        return max(self.findings, key=lambda f: f.cost_bytes or 0).fix

    @property
    def statuses(self) -> dict[str, int]:
        return dict(Counter(f.status for f in self.findings if f.status))

    @property
    def source(self) -> str | None:
        return self.first.source

    @property
    def time_ns(self) -> int | None:
        """Measured time of the copies backing the group (with the runtime audit), else None."""
        times = [f.time_ns for f in self.findings if f.time_ns is not None]
        return sum(times) if times else None

    @property
    def saving(self) -> Saving:
        """What fixing the line's instances is expected to save: their bytes summed, the measured time
        summed (with the audit), and the gain of the most expensive instance (``fxlint.findings.Saving``)."""
        return Saving.of(self.code, self.bytes, self.backward_bytes, self.time_ns,
                         max(self.findings, key=lambda f: f.cost_bytes or 0).saving.gain)

    def to_dict(self) -> dict[str, object]:
        return {"id": self.key, "code": self.code, "name": self.name, "severity": self.severity.value,
                "file": self.file, "line": self.line, "node": self.node, "location": self.location,
                "library": self.library, "instances": self.count, "modules": self.modules,
                "module_paths": self.module_paths, "bytes": self.bytes, "bytes_expr": self.bytes_expr,
                "backward_bytes": self.backward_bytes, "time_ns": self.time_ns, "message": self.message,
                "fix": self.fix, "statuses": self.statuses, "saving": self.saving.to_dict()}


#: a number, with its byte unit when it is a size (``784 B`` and ``1.8 kB`` are the same template)
_NUMBER = re.compile(r"\d+(?:\.\d+)?(?: [kMGT]?i?B\b)?")


def message_template(message: str) -> str:
    """The message with its numbers (and sizes with their units) blanked: instances that differ only
    in sizes share it."""
    return _NUMBER.sub("#", message)


def group_key(f: Finding) -> tuple:
    """(code, file, line, message template): the findings of one rule on one line that say the
    same thing up to sizes (q and k of one matmul say different things: two groups)."""
    where = (f.file, f.line) if f.file is not None else (None, f.node)
    return (f.code, *where, message_template(f.message))


def group_findings(findings: Iterable[Finding], *, sort: str = "bytes") -> list[Group]:
    """One ``Group`` per (code, source line); the user's files first, then installed packages;
    within each, the most harmful first, then the most expensive (``sort``: ``bytes`` or ``time``;
    ``none`` keeps the order in which the findings first appear)."""
    groups: dict[tuple, Group] = {}
    per_line: Counter = Counter()
    for f in findings:
        k = group_key(f)
        g = groups.get(k)
        if g is None:
            g = groups[k] = Group(f.code, f.name, f.file, f.line, f.node if f.file is None else None,
                                  index=per_line[k[:3]])
            per_line[k[:3]] += 1
        g.findings.append(f)
    return list(groups.values()) if sort == "none" else sort_groups(list(groups.values()), sort)


def sort_groups(groups: list[Group], sort: str = "bytes") -> list[Group]:
    """The user's files first, then installed packages; within each, by harm (errors, warnings, infos),
    then by cost (``sort``: ``bytes`` or ``time``)."""
    def cost(g: Group) -> tuple:
        primary = (g.time_ns or 0) if sort == "time" else (g.bytes or 0)
        return (g.library is not None, -g.severity.rank, -primary, -(g.bytes or 0), g.file or "", g.line or 0, g.code)

    return sorted(groups, key=cost)


def in_scope(f: Finding, scope: str) -> bool:
    """``scope``: ``all`` or ``user`` (the user's own files: not installed packages, not the
    standard library; graph nodes without a file count as the user's)."""
    return scope == "all" or library_of(f.file) is None


SCOPES = ("all", "user")
