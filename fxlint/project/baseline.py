"""Baselines: adopt fxlint on an existing codebase without fixing everything first.

``fxlint lint ... --baseline fxlint-baseline.json --write-baseline`` records the
findings of today; later runs with ``--baseline fxlint-baseline.json`` report
only the findings that are new. Findings a baseline filters out are kept in
``Report.baselined`` and counted in the summary, not lost.

A finding matches a baseline entry by its code, its file (relative to the
baseline file's folder, so the file can be committed) and a fingerprint that
survives line shifts: a hash of the code, the file, the source line's text
(comments dropped, whitespace collapsed), the module path, and the finding's
occurrence index among findings identical in all of these (ordered by line).
Editing lines above a finding does not make it new; a second copy of the same
mistake in the same place is new; changing the offending line is new.

The file is versioned JSON (``"fxlint-baseline": 1``), sorted for stable diffs.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tokenize
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._version import __version__
from ..errors import ConfigError
from ..findings import Finding, Report

FORMAT_KEY = "fxlint-baseline"
FORMAT_VERSION = 1
DEFAULT_PATH = "fxlint-baseline.json"


def normalise_source(text: str | None) -> str:
    """The source line as code: comments dropped, whitespace collapsed (``x[ :, [0,2] ]  # hi`` ->
    ``x[ :, [0,2] ]`` with single spaces), so re-indenting or commenting a line keeps its identity."""
    if not text:
        return ""
    code = text
    try:
        toks = [t for t in tokenize.generate_tokens(io.StringIO(text + "\n").readline)
                if t.type == tokenize.COMMENT]
        if toks:
            code = text[: toks[0].start[1]]
    except (tokenize.TokenError, SyntaxError, IndentationError):  # a fragment of a multi-line statement
        if "#" in text:
            code = text.split("#", 1)[0]
    return " ".join(code.split())


def relative_file(path: str | None, root: str | os.PathLike[str]) -> str | None:
    """``path`` relative to ``root`` with forward slashes; absolute when outside ``root``."""
    if not path:
        return None
    ap = os.path.abspath(path)
    try:
        rel = os.path.relpath(ap, os.path.abspath(root))
    except ValueError:  # another drive (Windows)
        return Path(ap).as_posix()
    return Path(ap).as_posix() if rel.startswith("..") else Path(rel).as_posix()


@dataclass(frozen=True)
class Entry:
    code: str
    file: str | None
    fingerprint: str
    line: int | None = None  # informational: where it was when recorded
    source: str | None = None
    message: str | None = None

    @property
    def key(self) -> tuple[str, str | None, str]:
        return (self.code, self.file, self.fingerprint)

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "file": self.file, "fingerprint": self.fingerprint, "line": self.line,
                "source": self.source, "message": self.message}


def entries(findings: Sequence[Finding], root: str | os.PathLike[str]) -> list[Entry]:
    """One entry per finding, in the same order, with fingerprints (see module docstring)."""
    idents = []
    for f in findings:
        rel = relative_file(f.file, root)
        text = normalise_source(f.source) if f.file else f"<graph node {f.node}>"
        idents.append((f.code, rel, text, f.module_path or ""))
    groups: dict[tuple, list[int]] = defaultdict(list)
    for i, ident in enumerate(idents):
        groups[ident].append(i)
    occurrence = [0] * len(findings)
    for members in groups.values():
        for n, i in enumerate(sorted(members, key=lambda i: (findings[i].line or 0, findings[i].node or ""))):
            occurrence[i] = n
    out = []
    for f, ident, n in zip(findings, idents, occurrence):
        digest = hashlib.sha256("\0".join((*map(str, ident), str(n))).encode()).hexdigest()[:24]
        out.append(Entry(f.code, ident[1], digest, f.line, f.source, f.message))
    return out


@dataclass
class Baseline:
    path: Path
    entries: list[Entry]

    @property
    def root(self) -> Path:
        return self.path.resolve().parent

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Baseline:
        p = Path(path)
        if not p.is_file():
            raise ConfigError(f"no baseline file {path}; create it with --write-baseline")
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ConfigError(f"cannot read baseline {path}: {exc}") from exc
        if not isinstance(data, dict) or FORMAT_KEY not in data:
            raise ConfigError(f"{path} is not an fxlint baseline (no {FORMAT_KEY!r} key)")
        if data[FORMAT_KEY] != FORMAT_VERSION:
            raise ConfigError(f"{path} is baseline format {data[FORMAT_KEY]!r}; this fxlint reads format "
                              f"{FORMAT_VERSION} (rewrite it with --write-baseline)")
        rows = data.get("findings")
        if not isinstance(rows, list):
            raise ConfigError(f"{path}: 'findings' must be a list")
        out = []
        for i, row in enumerate(rows):
            try:
                out.append(Entry(str(row["code"]), row.get("file"), str(row["fingerprint"]), row.get("line"),
                                 row.get("source"), row.get("message")))
            except (KeyError, TypeError, AttributeError):
                raise ConfigError(f"{path}: finding {i} needs 'code' and 'fingerprint'") from None
        return cls(p, out)

    def apply(self, reports: Iterable[Report]) -> list[Entry]:
        """Move every finding the baseline knows from ``report.findings`` to ``report.baselined``.
        Returns the baseline entries no finding matched (fixed since, or no longer selected)."""
        reports = list(reports)
        left = Counter(e.key for e in self.entries)
        all_findings = [f for r in reports for f in r.findings]
        keys = {id(f): e.key for f, e in zip(all_findings, entries(all_findings, self.root))}
        for r in reports:
            new, known = [], []
            for f in r.findings:
                k = keys[id(f)]
                if left[k] > 0:
                    left[k] -= 1
                    known.append(f)
                else:
                    new.append(f)
            r.findings, r.baselined = new, r.baselined + known
        stale = []
        for e in self.entries:
            if left[e.key] > 0:
                left[e.key] -= 1
                stale.append(e)
        return stale


def write(path: str | os.PathLike[str], reports: Iterable[Report]) -> int:
    """Record every active finding of ``reports`` in ``path``; returns how many."""
    p = Path(path)
    findings = [f for r in reports for f in r.findings]
    root = p.resolve().parent if p.parent.exists() else Path(os.path.abspath(p)).parent
    rows = sorted((e.to_dict() for e in entries(findings, root)),
                  key=lambda d: (d["file"] or "", d["code"], d["line"] or 0, d["fingerprint"]))
    data = {FORMAT_KEY: FORMAT_VERSION, "generated-by": f"fxlint {__version__}", "findings": rows}
    try:
        p.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write baseline {path}: {exc.strerror or exc}") from exc
    return len(rows)
