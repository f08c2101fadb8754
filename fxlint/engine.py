"""Run the selected rules over canonical views and turn hits into findings.

Graph rules run once per captured graph; program rules once per capture (see
``fxlint.program``). A finding is silenced by a ``# fxlint: ignore[...]``
comment on its own statement or on one of the hit's ``anchors``.

Given the run's ``config.Settings``, this is also the one place where the
project's configured severities and ``per-file-ignores`` apply, so the CLI,
``fxlint.lint``, the compile backend and the rewrite engine all get them.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Iterable, Sequence

import sympy

from ._perf import gc_paused
from .canon import GraphView
from .errors import FxlintWarning
from .findings import Finding, Report, dedupe
from .program import Program
from .registry import Hit, Rule, RuleContext
from .source import is_suppressed, source_line
from .tensorinfo import known

if TYPE_CHECKING:  # pragma: no cover
    from .config import Settings

def finding_from_hit(rule: Rule, hit: Hit, label: str | None) -> Finding:
    node = hit.node
    loc = hit.location or (node.location if node is not None else None)
    nbytes = known(hit.bytes) if hit.bytes is not None else None
    expr = None
    if hit.bytes is not None and nbytes is None and isinstance(hit.bytes, sympy.Expr):
        expr = str(hit.bytes)
    return Finding(
        code=rule.code,
        name=rule.name,
        severity=hit.severity or rule.severity,
        message=hit.message,
        file=loc.file if loc else None,
        line=loc.line if loc else None,
        module_path=node.module_path if node is not None else None,
        bytes=nbytes,
        fix=hit.fix,
        bytes_expr=expr,
        source=(loc.code or source_line(loc.file, loc.line)) if loc else None,
        node=node.name if node is not None else None,
        graph=label,
        details=dict(hit.details),
    )


def _silenced(finding: Finding, hit: Hit) -> bool:
    if is_suppressed(finding.code, finding.file, finding.line):
        return True
    return any(is_suppressed(finding.code, a.file, a.line) for a in hit.anchors)


def run_rules(
    views: "Sequence[GraphView] | Program",
    rules: Iterable[Rule],
    ctx: RuleContext,
    settings: "Settings | None" = None,
) -> Report:
    """Every graph rule over every view, every program rule once over the whole
    capture (``views`` may be a ``Program`` carrying graph breaks and runtime
    facts). A rule that raises is reported in ``Report.errors`` and skipped; it
    never takes the others down.

    With ``settings``, configured severities replace the rule's (and the hit's)
    severity, and findings silenced by ``per-file-ignores`` join the inline
    ``# fxlint: ignore`` ones in ``Report.suppressed``."""
    program = Program.of(views)
    report = Report(graphs=len(program.views))
    active: list[Finding] = []
    silenced: list[Finding] = []
    rules = list(rules)

    def run(rule: Rule, subject: "GraphView | Program", where: str) -> None:
        try:
            hits = list(rule.check(subject, ctx))
        except Exception as exc:  # noqa: BLE001 - isolate rule failures
            msg = f"{rule.code} {rule.name} failed on {where}: {type(exc).__name__}: {exc}"
            warnings.warn(FxlintWarning(f"fxlint: rule skipped: {msg}"), stacklevel=3)
            report.errors.append(msg)
            report.extras.setdefault("failed_rules", []).append(rule.code)
            return
        for hit in hits:
            label = where
            if isinstance(subject, Program):
                owner = program.view_of(hit.node) if hit.node is not None else None
                label = owner.label if owner is not None else (hit.details.get("graph") or "program")
            f = finding_from_hit(rule, hit, label)
            if settings is not None:
                sev = settings.severity_for(f.code, f.severity)
                if sev is not f.severity:
                    f = f.with_(severity=sev)
            if _silenced(f, hit) or (settings is not None and settings.ignored_in_file(f.code, f.file)):
                silenced.append(f.with_(suppressed=True))
            else:
                active.append(f)

    with gc_paused():
        for view in program.views:
            for rule in rules:
                if rule.scope == "graph":
                    run(rule, view, view.label)
        for rule in rules:
            if rule.scope == "program":
                run(rule, program, "program")
    report.findings = dedupe(merge_repeats(active))
    report.suppressed = dedupe(silenced)
    return report


def merge_repeats(findings: list[Finding]) -> list[Finding]:
    """One finding per line for a copy a loop makes again and again.

    A Python loop unrolled by Dynamo yields one node, hence one hit, per
    iteration, all with the same code, line, module and message. They become
    one finding whose bytes are the per-call total, whose ``details["repeats"]``
    counts the iterations, and whose ``details["copy_sizes"]`` lists each copy
    (so the runtime cross-check can find every one of them on the line).
    """
    groups: dict[tuple, list[Finding]] = {}
    order: list[tuple] = []
    for f in findings:
        key = (f.code, f.file, f.line, f.module_path, f.message) if f.file is not None else (id(f),)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(f)
    out: list[Finding] = []
    for key in order:
        fs = groups[key]
        if len(fs) == 1:
            out.append(fs[0])
            continue
        first = fs[0]
        sizes: list[int] = []
        for f in fs:
            sizes.extend(f.details.get("copy_sizes") or ([f.bytes] if f.bytes is not None else []))
        total = sum(f.bytes for f in fs) if all(f.bytes is not None for f in fs) else None
        details = {**first.details, "repeats": len(fs), "copy_sizes": sizes}
        message = first.message + f" This line runs {len(fs)} times per call (a loop); the bytes are the total."
        out.append(first.with_(bytes=total, message=message, details=details))
    return out
