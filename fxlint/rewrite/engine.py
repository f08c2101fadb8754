"""The rewrite engine: find sites, apply each rewrite on a copy, verify it, keep it or roll it back.

For one GraphModule:

1. the rules that have a rewrite run on the canonical view (every hit, not
   deduplicated: the same line unrolled three times is three sites);
2. for each site in graph order, the rewrite for its rule gets a fresh copy of
   the graph so far and the finding; it re-checks its preconditions and edits
   the copy, or says why not (``NotApplied``); a silenced finding
   (``# fxlint: ignore[...]``) is not rewritten;
3. the copy is linted and recompiled, and (``verify=True``) run against the
   original on the example inputs: outputs, and gradients when anything
   requires grad. A copy that differs, raises, or fails to build is dropped:
   the rewrite is reported as rolled back and the graph stays as it was.
"""

from __future__ import annotations

import warnings
from typing import Any, Sequence

import torch
import torch.fx as fx

from ..canon import GraphView, build_view
from ..engine import finding_from_hit
from ..errors import FxlintWarning, first_line
from ..findings import Finding
from ..registry import Rule, RuleContext, select_rules
from ..source import is_suppressed
from .base import AppliedRewrite, NotApplied, RewriteResult, Site, SkippedRewrite, all_rewrites
from .graph import copy_graph_module, finish, node_code
from .verify import Verifier


def view_of(gm: fx.GraphModule, origin: str, label: str = "graph") -> GraphView:
    """The canonical view of a graph being rewritten (roles of inputs as the capture gives them)."""
    if origin == "dynamo":
        from ..capture import view_from_dynamo

        return view_from_dynamo(gm, label)
    from ..capture import fx_roles

    return build_view(gm, origin=origin, label=label, grad_enabled=torch.is_grad_enabled(), roles=fx_roles(gm))


def find_sites(view: GraphView, select: "str | Sequence[str] | None" = None,
               ignore: "str | Sequence[str] | None" = None, training: bool = True,
               rules: "Sequence[Rule] | None" = None) -> list[tuple[Finding, bool]]:
    """(finding, silenced) for every hit of every rule that has a rewrite, in graph order.

    ``rules`` (the project configuration's effective rule set, ``config.Settings.rules``)
    replaces ``select``/``ignore`` when given."""
    rewrites = all_rewrites()
    chosen = rules if rules is not None else select_rules(select, ignore)
    rules = [r for r in chosen if r.code in rewrites]
    ctx = RuleContext(training=training, options={"rewrite": True})
    found: list[tuple[int, Finding, bool]] = []
    for rule in rules:
        try:
            hits = list(rule.check(view, ctx))
        except Exception as exc:  # noqa: BLE001 - a failing rule costs its own rewrites, nothing else
            warnings.warn(FxlintWarning(f"fxlint: {rule.code} failed on {view.label}, its rewrites are skipped: "
                                        f"{type(exc).__name__}: {exc}"), stacklevel=2)
            continue
        for hit in hits:
            if hit.node is None:
                continue
            f = finding_from_hit(rule, hit, view.label)
            found.append((hit.node.position, f, is_suppressed(f.code, f.file, f.line)))
    found.sort(key=lambda t: (t[0], t[1].code))
    return [(f, s) for _, f, s in found]


def rewrite_graph(
    gm: fx.GraphModule,
    args: Sequence[Any],
    kwargs: dict[str, Any] | None = None,
    *,
    origin: str = "fx",
    select: "str | Sequence[str] | None" = None,
    ignore: "str | Sequence[str] | None" = None,
    verify: bool = True,
    training: bool = True,
    label: str = "graph",
    symbolic_ok: bool = True,
    rules: "Sequence[Rule] | None" = None,
    fusing: bool = False,
) -> RewriteResult:
    """Apply every safe rewrite to a copy of ``gm``; ``gm`` itself is never changed.

    ``fusing``: the result goes to a compiler that fuses ops (Inductor), not to eager execution."""
    sites = find_sites(view_of(gm, origin, label), select, ignore, training, rules)
    return apply_sites(gm, sites, args, kwargs, origin=origin, verify=verify, label=label,
                       symbolic_ok=symbolic_ok, fusing=fusing)


def apply_sites(
    gm: fx.GraphModule,
    sites: Sequence[tuple[Finding, bool]],
    args: Sequence[Any],
    kwargs: dict[str, Any] | None = None,
    *,
    origin: str = "fx",
    verify: bool = True,
    label: str = "graph",
    symbolic_ok: bool = True,
    fusing: bool = False,
) -> RewriteResult:
    """Rewrite each (finding, silenced) site in order, each on a copy, verified; see the module doc.

    ``find_sites`` gives the sites from the rules; a test may hand-build findings (code, node, details)."""
    rewrites = all_rewrites()
    verifier = Verifier(gm, args, kwargs) if verify else None
    current = gm
    result = RewriteResult(module=gm, original=gm, verified=verify,
                           checked=verifier.checked if verifier else "nothing")
    for finding, silenced in sites:
        rw = rewrites[finding.code]

        def skip(reason: str, rolled_back: bool = False) -> None:
            result.skipped.append(SkippedRewrite(finding.code, rw.name, finding.location, finding.node or "?",
                                                 reason, rolled_back, finding.file, finding.line))

        if silenced:
            skip(f"silenced by `# fxlint: ignore[{finding.code}]` on the line")
            continue
        candidate = copy_graph_module(current)
        view = view_of(candidate, origin, label)
        node = view.by_name.get(finding.node or "")
        if node is None:
            skip("the node is gone (an earlier rewrite replaced it)")
            continue
        before = node_code(candidate, [node.name])
        try:
            change = rw.apply(Site(candidate, view, node, finding, symbolic_ok, fusing))
            finish(candidate)
        except NotApplied as exc:
            skip(exc.reason)
            continue
        except Exception as exc:  # noqa: BLE001 - a broken rewrite is reported, never shipped
            why = f"{type(exc).__name__}: {first_line(exc)}"
            # an fxlint bug, not a reason in the user's terms: say so as loudly as a failing rule
            warnings.warn(FxlintWarning(f"fxlint: the {finding.code} rewrite failed at {finding.location} "
                                        f"({why}); that site is left as it was"), stacklevel=2)
            skip(f"the rewrite failed ({why}); the graph is unchanged", rolled_back=True)
            continue
        if verifier is not None:
            why = verifier.check(candidate)
            if why is not None:
                skip(f"rolled back, the rewritten graph does not match the original: {why}", rolled_back=True)
                continue
        previous, current = current, candidate
        result.applied.append(AppliedRewrite(
            code=finding.code, name=rw.name, location=finding.location, node=node.name,
            description=change.description,
            before=node_code(previous, [*change.also_changed, node.name]) if change.also_changed else before,
            after=node_code(candidate, [n.name for n in change.new_nodes if n.graph is candidate.graph]),
            bytes_saved=change.bytes_saved, source_edit=change.source_edit,
            file=finding.file, line=finding.line,
        ))
    result.module = current
    return result


def rewrite(
    model: Any,
    example_inputs: Any = None,
    *,
    select: "str | Sequence[str] | None" = None,
    verify: bool = True,
    config: Any = None,
) -> RewriteResult:
    """Capture ``model`` as one graph, apply the safe rewrites, verify them (see ``fxlint.rewrite``)."""
    from ..capture import capture_graph_module, normalise_inputs
    from ..config import resolve, source_file_of

    # the project's [tool.fxlint] applies as in fxlint.lint; unknown codes fail before anything runs
    settings = resolve(source_file_of(model), config=config, select=select)
    args, kwargs = normalise_inputs(example_inputs)
    gm, origin = capture_graph_module(model, example_inputs)
    training = bool(getattr(model, "training", True))
    return rewrite_graph(gm, args, kwargs, origin=origin, verify=verify, training=training, rules=settings.rules)
