"""Run the selected rules over canonical views and turn hits into findings.

Graph rules run once per captured graph; program rules once per capture (see
``fxlint.capture.program``). ``evaluate`` gives every hit as a finding with the reason
it is silenced, if it is: a ``# fxlint: ignore[...]`` comment on its own
statement (``inline``) or on one of the hit's ``anchors`` (``anchor``), the
project's ``per-file-ignores`` (``per-file-ignores``). ``run_rules`` makes the
lint's ``Report`` of it (one finding per line for a loop, each finding once
across graphs and recompiles); the rewrite engine reads the same evaluation
site by site, so silencing means the same in a lint, the backend and a
rewrite.

Given the run's ``config.Settings``, this is also the one place where the
project's configured severities apply.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import sympy

from ..canon import GraphView
from ..capture.program import Program
from ..errors import FxlintWarning
from ..findings import Finding, Report, dedupe
from ..registry import Hit, Rule, RuleContext, default_registry
from ..tensor.info import known
from ..util.perf import gc_paused
from ..util.source import compiler_branch, is_suppressed, parse_stack_trace, source_line

if TYPE_CHECKING:  # pragma: no cover
    from ..project.config import Settings
    from ..registry import Registry
    from ..tensor.info import Dim

INLINE, ANCHOR, PER_FILE = "inline", "anchor", "per-file-ignores"


def finding_from_hit(rule: Rule, hit: Hit, label: str | None) -> Finding:
    node = hit.node
    loc = hit.location or (node.location if node is not None else None)
    nbytes = known(hit.bytes) if hit.bytes is not None else None
    expr = None
    if hit.bytes is not None and nbytes is None and isinstance(hit.bytes, sympy.Expr):
        expr = str(hit.bytes)
    sizes, backward, shape = hit.copy_sizes, hit.backward_bytes, hit.tensor_shape
    violation = hit.violation
    message = violation.message()
    branch = compiler_branch(parse_stack_trace(node.node.meta.get("stack_trace"))) if node is not None else None
    if branch is not None:
        message = (f"{message.rstrip().rstrip('.')}. This line runs only under torch.compile "
                   f"({branch.describe()}); eager takes the other branch.")
    return Finding(
        code=rule.code,
        name=rule.name,
        severity=hit.severity or rule.severity,
        message=message,
        file=loc.file if loc else None,
        line=loc.line if loc else None,
        module_path=node.module_path if node is not None else None,
        bytes=nbytes,
        fix=violation.fix_title(),
        bytes_expr=expr,
        source=(loc.code or source_line(loc.file, loc.line)) if loc else None,
        node=node.name if node is not None else None,
        graph=label,
        copy_sizes=_known_ints(sizes),
        backward_bytes=known(backward) if backward is not None else None,
        backward_sites=tuple(dict.fromkeys((b.file, b.line) for b in hit.backward_sites
                                           if loc is None or (b.file, b.line) != (loc.file, loc.line))),
        tensor_shape=_known_ints(shape),
        dedup=hit.dedup,
        via=loc.via or None if loc else None,
        compiled_only=branch.describe() if branch is not None else None,
        violation=violation,
        # a copy of the compiled program (a scope="compiled" rule): it survives there by construction
        compiled="survives" if hit.compiled_bytes is not None else None,
        compiled_bytes=hit.compiled_bytes if hit.compiled_phase == "forward" else None,
        compiled_backward_bytes=hit.compiled_bytes if hit.compiled_phase == "backward" else None,
    )


def _known_ints(xs: Sequence[Dim] | None) -> tuple[int, ...] | None:
    """The values as ints, or None when there are none or one is symbolic (dynamic shapes)."""
    if xs is None:
        return None
    out = tuple(known(x) for x in xs)
    return None if any(v is None for v in out) else out  # type: ignore[return-value]


def silenced_by(finding: Finding, hit: Hit, settings: Settings | None) -> str | None:
    """Why ``finding`` is silenced (``inline``, ``anchor``, ``per-file-ignores``), or None."""
    if is_suppressed(finding.code, finding.file, finding.line):
        return INLINE
    if any(is_suppressed(finding.code, a.file, a.line) for a in hit.anchors):
        return ANCHOR
    if settings is not None and settings.ignored_in_file(finding.code, finding.file):
        return PER_FILE
    return None


@dataclass(frozen=True)
class Evaluated:
    """One hit of one rule, as a finding, and what silences it (None: nothing)."""

    finding: Finding
    hit: Hit
    silenced: str | None
    position: int  # the node's position in its graph (-1 without a node): rewrites run in this order


@dataclass
class Evaluation:
    """Every hit of one run, in rule order, and the rules that failed."""

    hits: list[Evaluated] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    failed_rules: list[str] = field(default_factory=list)
    graphs: int = 0


def evaluate(
    views: Sequence[GraphView] | Program,
    rules: Iterable[Rule],
    ctx: RuleContext,
    settings: Settings | None = None,
    registry: Registry | None = None,
) -> Evaluation:
    """Every graph rule over every view, every program rule once over the whole capture.

    A rule that raises is reported in ``Evaluation.errors`` (and one ``FxlintWarning``) and
    skipped; it never takes the others down. With ``settings``, configured severities replace
    the rule's (and the hit's).

    One owner per copy: where two rules hit the same node and one ``supersedes`` the other, only
    the superseding hit is kept, silenced or not. The superseding rules run even when not
    selected (``Registry.owners``; their hits are dropped after), so ignoring or deselecting a code removes
    that code's findings and never another's, and never hands a copy to another code."""
    program = Program.of(views)
    out = Evaluation(graphs=len(program.views))
    rules = list(rules)
    reg = registry or (settings.registry if settings is not None else None) or default_registry()
    shadow = reg.owners(rules)
    shadow_codes = {r.code for r in shadow}

    def run(rule: Rule, subject: GraphView | Program, where: str) -> None:
        try:
            hits = list(rule.check(subject, ctx))
        except Exception as exc:  # noqa: BLE001 - isolate rule failures
            if rule.code in shadow_codes:
                return  # asked for ownership only: its failure costs nothing but that
            msg = f"{rule.code} {rule.name} failed on {where}: {type(exc).__name__}: {exc}"
            warnings.warn(FxlintWarning(f"fxlint: rule skipped: {msg}"), stacklevel=4)
            out.errors.append(msg)
            out.failed_rules.append(rule.code)
            return
        for hit in hits:
            label = where
            if isinstance(subject, Program):
                owner = program.view_of(hit.node) if hit.node is not None else None
                label = owner.label if owner is not None else (hit.graph or "program")
            f = finding_from_hit(rule, hit, label)
            if settings is not None:
                sev = settings.severity_for(f.code, f.severity)
                if sev is not f.severity:
                    f = f.with_(severity=sev)
            position = hit.node.position if hit.node is not None else -1
            out.hits.append(Evaluated(f, hit, silenced_by(f, hit, settings), position))

    with gc_paused():
        for view in program.views:
            for rule in (*rules, *shadow):
                if rule.scope == "graph":
                    run(rule, view, view.label)
        for rule in (*rules, *shadow):
            if rule.scope == "program":
                run(rule, program, "program")
    if shadow or any(r.supersedes for r in rules):
        out.hits = _owned(out.hits, {r.code: r for r in (*rules, *shadow)}, shadow_codes)
    return out


def evaluate_compiled(subjects: Sequence[Any], rules: Iterable[Rule], ctx: RuleContext,
                      settings: Settings | None = None) -> Evaluation:
    """Every ``scope="compiled"`` rule of ``rules`` over each compiled graph (``subjects``: one
    ``fxlint.compiled.program.CompiledGraph`` per graph Inductor compiled, its ``label`` the graph's).
    The same isolation, severities and silencing as ``evaluate``. Each copy of the compiled program
    goes to one rule: the copy's kind decides (``fxlint.compiled.kinds``), so no rule supersedes
    another here and ignoring a code hides that code's findings only."""
    out = Evaluation(graphs=len(subjects))
    compiled_rules = [r for r in rules if r.scope == "compiled"]
    for subject in subjects:
        label = getattr(subject, "label", None)
        for rule in compiled_rules:
            try:
                hits = list(rule.check(subject, ctx))
            except Exception as exc:  # noqa: BLE001 - isolate rule failures
                msg = f"{rule.code} {rule.name} failed on {label}: {type(exc).__name__}: {exc}"
                warnings.warn(FxlintWarning(f"fxlint: rule skipped: {msg}"), stacklevel=3)
                out.errors.append(msg)
                out.failed_rules.append(rule.code)
                continue
            for hit in hits:
                f = finding_from_hit(rule, hit, label)
                if settings is not None:
                    sev = settings.severity_for(f.code, f.severity)
                    if sev is not f.severity:
                        f = f.with_(severity=sev)
                position = hit.node.position if hit.node is not None else -1
                out.hits.append(Evaluated(f, hit, silenced_by(f, hit, settings), position))
    return out


def _owned(hits: list[Evaluated], by_code: dict[str, Rule], shadow: set[str]) -> list[Evaluated]:
    """``hits`` less those another hit on the same node supersedes, less the shadow rules' own."""
    claimed: dict[int, set[str]] = {}
    for e in hits:
        if e.hit.node is not None:
            claimed.setdefault(id(e.hit.node), set()).add(e.finding.code)

    def beaten(code: str, others: set[str]) -> bool:
        return any(code in by_code[o].supersedes for o in others if o != code and o in by_code)

    return [e for e in hits if e.finding.code not in shadow
            and not (e.hit.node is not None and beaten(e.finding.code, claimed[id(e.hit.node)]))]


def run_rules(
    views: Sequence[GraphView] | Program,
    rules: Iterable[Rule],
    ctx: RuleContext,
    settings: Settings | None = None,
) -> Report:
    """The lint's report: ``evaluate``, then one finding per line for a loop
    (``merge_repeats``) and each finding once across graphs and recompiles; silenced
    findings (inline, anchors, per-file-ignores) go to ``Report.suppressed``."""
    ev = evaluate(views, rules, ctx, settings)
    report = Report(graphs=ev.graphs, errors=list(ev.errors))
    if ev.failed_rules:
        report.extras["failed_rules"] = list(ev.failed_rules)
    active = [e.finding for e in ev.hits if e.silenced is None]
    silenced = [e.finding.with_(suppressed=True) for e in ev.hits if e.silenced is not None]
    report.findings = dedupe(apart(merge_repeats(active)))
    report.suppressed = dedupe(apart(silenced))
    return report


def apart(findings: list[Finding]) -> list[Finding]:
    """Findings of one lint that share a ``Finding.key()`` but say different things kept apart.

    One lint runs the program once, so two graphs that report the same line (a stage's forward,
    its own frame after a graph break, captured once per size it runs at; a helper recompiled
    for another argument) report two copies made in that call, of different tensors: each gets a
    ``dedup`` key of its own, so ``dedupe`` keeps both (before, only the first graph's survived
    and the other copies went unexplained). The same finding twice (same message) is still one.
    """
    seen: dict[tuple, set[str]] = {}
    out: list[Finding] = []
    for f in findings:
        said = seen.setdefault(f.key(), set())
        if said and f.message not in said:
            n = len(said)
            said.add(f.message)
            f = f.with_(dedup=f"{f.dedup}~{n}" if f.dedup else f"~{n}")
        else:
            said.add(f.message)
        out.append(f)
    return out


def merge_repeats(findings: list[Finding]) -> list[Finding]:
    """One finding per line for a copy a line makes again and again (a loop, or one statement for several values).

    A Python loop unrolled by Dynamo yields one node, hence one hit, per
    iteration, all with the same code, line, module and message. They become
    one finding whose bytes are the per-call total, whose ``repeats`` counts
    the iterations, and whose ``copy_sizes`` lists each copy (so the runtime
    cross-check can find every one of them on the line).
    """
    groups: dict[tuple, list[Finding]] = {}
    order: list[tuple] = []
    # how often each (code, line, module) ran: per graph, the most findings one message has there (q and
    # k of one matmul in a loop are two findings per run), summed over the graphs (a helper's frame
    # recompiled per argument runs once per graph)
    per_graph: dict[tuple, dict[tuple, int]] = {}
    for f in findings:
        if f.file is not None:
            counts = per_graph.setdefault((f.code, f.file, f.line, f.module_path), {})
            counts[(f.graph, f.message)] = counts.get((f.graph, f.message), 0) + 1
    runs: dict[tuple, int] = {}
    for where, counts in per_graph.items():
        best: dict[str | None, int] = {}
        for (graph, _), n in counts.items():
            best[graph] = max(best.get(graph, 0), n)
        runs[where] = sum(best.values())
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
            sizes.extend(f.copy_sizes or ([f.bytes] if f.bytes is not None else []))
        total = sum(f.bytes for f in fs if f.bytes is not None) if all(f.bytes is not None for f in fs) else None
        stop = "" if first.message.rstrip().endswith((".", "!", "?")) else "."
        ran = runs.get((first.code, first.file, first.line, first.module_path), len(fs))
        if ran > len(fs):
            # a helper called more often than it makes this copy: the other calls copy other tensors
            # (reported apart), or nothing
            more = (f" This line runs {ran} times per call; {len(fs)} of them make this copy (the bytes are "
                    "their total), the others are reported apart.")
        else:
            # a loop's iterations, or one statement that makes the copy for several values (k and v of one kv):
            # the graph does not tell them apart, so the count is said without a cause
            more = f" This line makes this copy {len(fs)} times per call; the bytes are the total."
        message = first.message.rstrip() + stop + more
        nodes = tuple(f.node for f in fs if f.node is not None)
        compiled = {key: sum(getattr(f, key) or 0 for f in fs) for key in ("compiled_bytes", "compiled_backward_bytes")
                    if all(f.compiled == "survives" and getattr(f, key) is not None for f in fs)}
        out.append(first.with_(bytes=total, message=message, repeats=len(fs), copy_sizes=tuple(sizes),
                               nodes=nodes if len(nodes) == len(fs) else None, **compiled))
    return out
