"""The rewrite engine: find sites, apply each rewrite on a copy, verify it, keep it or roll it back.

For one GraphModule:

1. the rules whose ``fix`` names a rewrite run on the canonical view through
   the rule engine, with the project's settings (every hit, not deduplicated:
   the same line unrolled three times is three sites; a hit silenced in a lint,
   inline, by an anchor or by ``per-file-ignores``, is not rewritten);
2. for each site in graph order, the rewrite for its rule gets a fresh copy of
   the graph so far and the finding; it re-checks its preconditions and edits
   the copy, or says why not (``NotApplied``);
3. the copy is linted and recompiled, and (``verify=True``) run against the
   original on the example inputs: outputs, and gradients when anything
   requires grad. A copy that differs, raises, or fails to build is dropped:
   the rewrite is reported as rolled back and the graph stays as it was.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import torch
import torch.fx as fx

from ..analysis.engine import ANCHOR, INLINE, PER_FILE
from ..canon import GraphView, build_view
from ..errors import FxlintWarning, first_line
from ..findings import Finding
from ..registry import Registry, Rule, RuleContext, default_registry
from .base import AppliedRewrite, NotApplied, RewriteResult, Site, SkippedRewrite, nothing_to_remove
from .graph import copy_graph_module, finish, node_code
from .verify import Verifier

if TYPE_CHECKING:  # pragma: no cover
    from ..project.config import Settings


def view_of(gm: fx.GraphModule, origin: str, label: str = "graph") -> GraphView:
    """The canonical view of a graph being rewritten (roles of inputs as the capture gives them)."""
    if origin == "dynamo":
        from ..capture.graphs import view_from_dynamo

        return view_from_dynamo(gm, label)
    from ..capture.graphs import fx_roles

    return build_view(gm, origin=origin, label=label, grad_enabled=torch.is_grad_enabled(), roles=fx_roles(gm))


#: (finding, why it is silenced or None): what ``apply_sites`` takes. ``True`` reads as silenced inline.
SiteSpec = tuple[Finding, "str | bool | None"]

#: the sites' findings -> the same findings with the compiled program's verdicts (``Finding.compiled``),
#: given the canonical view of the graph; the backend's reads Inductor's lowering of the original graph
Verdicts = Callable[[list[Finding], GraphView], list[Finding]]


def find_sites(view: GraphView, settings: Settings | None = None, training: bool = True, *,
               registry: Registry | None = None, rules: Sequence[Rule] | None = None) -> list[SiteSpec]:
    """(finding, silenced) for every hit of every rule that has a rewrite, in graph order (of a rewrite
    that addresses only some of its rule's findings, ``Rewrite.sites``, those).

    The rules run through the rule engine (``fxlint.analysis.engine.evaluate``) with the project's
    ``settings``, so a finding silenced in a lint (``# fxlint: ignore`` on its line or an anchor,
    ``per-file-ignores``) is silenced here too and not rewritten. ``rules`` (default: the
    settings' rules, else every rule) narrows the set; only those whose ``fix`` names a
    registered rewrite are run."""
    from ..analysis.engine import evaluate

    reg = registry or default_registry()
    chosen = list(rules) if rules is not None else (list(settings.rules) if settings is not None else reg.rules())
    with_rewrite = [r for r in chosen if reg.rewrite_for(r) is not None]
    ctx = RuleContext(training=training, options={"rewrite": True})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", FxlintWarning)
        ev = evaluate([view], with_rewrite, ctx, settings)
    for err in ev.errors:  # a failing rule costs its own rewrites, nothing else
        code = err.split(" ", 1)[0]
        warnings.warn(FxlintWarning(f"fxlint: {code} failed on {view.label}, its rewrites are skipped: "
                                    f"{err.split(': ', 1)[-1]}"), stacklevel=2)
    for w in caught:  # anything else the rules warned about
        if not str(w.message).startswith("fxlint: rule skipped"):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    addresses = {r.code: rw.sites for r in with_rewrite if (rw := reg.rewrite_for(r)) is not None}
    found = [(e.position, e.finding, e.silenced) for e in ev.hits if e.hit.node is not None
             and _addressed(addresses.get(e.finding.code), e.finding)]
    found.sort(key=lambda t: (t[0], t[1].code))
    return [(f, s) for _, f, s in found]


def _addressed(sites: Callable[[Finding], bool] | None, finding: Finding) -> bool:
    return sites is None or sites(finding)


def _silence_text(code: str, how: str | bool, settings: Settings | None) -> str:
    if how in (True, INLINE):
        return f"silenced by `# fxlint: ignore[{code}]` on the line"
    if how == ANCHOR:
        return f"silenced by `# fxlint: ignore[{code}]` on the statement that opens its region"
    if how == PER_FILE:
        where = settings.config_file if settings is not None and settings.config_file else "the configuration"
        return f"silenced by per-file-ignores in {where}"
    return f"silenced ({how})"


def rewrite_graph(
    gm: fx.GraphModule,
    args: Sequence[Any],
    kwargs: dict[str, Any] | None = None,
    *,
    origin: str = "fx",
    settings: Settings | None = None,
    verify: bool = True,
    training: bool = True,
    label: str = "graph",
    symbolic_ok: bool = True,
    rules: Sequence[Rule] | None = None,
    fusing: bool = False,
    registry: Registry | None = None,
    safe_only: bool = False,
    verdicts: Verdicts | None = None,
) -> RewriteResult:
    """Apply every safe rewrite to a copy of ``gm``; ``gm`` itself is never changed.

    ``settings`` are the project's (silencing, the selected rules); ``rules`` narrows them.
    ``fusing``: the result goes to a compiler that fuses ops (Inductor), not to eager execution.
    ``safe_only``: only rewrites whose rule declares them ``safe`` (see ``FixSpec``).
    ``verdicts``: called once, only when there is a site to rewrite, with the sites' findings; what
    it returns carries the compiled program's verdict on each copy, and a site whose copy the
    compiled program does not make (``fused``) is skipped with that reason."""
    reg = registry or default_registry()
    view = view_of(gm, origin, label)
    sites = find_sites(view, settings, training, registry=reg, rules=rules)
    if safe_only:
        sites = [(f, s) for f, s in sites if reg.get(f.code).fix.applicability == "safe"]
    if verdicts is not None and any(not s for _, s in sites):
        judged = verdicts([f for f, _ in sites], view)
        sites = [(j, s) for j, (_, s) in zip(judged, sites)]
    return apply_sites(gm, sites, args, kwargs, origin=origin, verify=verify, label=label,
                       symbolic_ok=symbolic_ok, fusing=fusing, registry=reg, settings=settings, training=training)


def apply_sites(
    gm: fx.GraphModule,
    sites: Sequence[SiteSpec],
    args: Sequence[Any],
    kwargs: dict[str, Any] | None = None,
    *,
    origin: str = "fx",
    verify: bool = True,
    label: str = "graph",
    symbolic_ok: bool = True,
    fusing: bool = False,
    registry: Registry | None = None,
    settings: Settings | None = None,
    training: bool = True,
) -> RewriteResult:
    """Rewrite each (finding, silenced) site in order, each on a copy, verified; see the module doc.

    ``find_sites`` gives the sites from the rules; a test may hand-build findings (code, node). A
    finding with the compiled verdict ``fused`` (nothing to remove in the compiled program, in the
    forward nor, in ``training``, the backward) is skipped with that reason."""
    rewrites = (registry or default_registry()).rewrites()
    verifier = Verifier(gm, args, kwargs) if verify else None
    current = gm
    result = RewriteResult(module=gm, original=gm, verified=verify,
                           checked=verifier.checked if verifier else "nothing")
    for finding, silenced in sites:
        rw = rewrites[finding.code]

        # called in this same iteration only: the loop variables are bound explicitly all the same
        def skip(reason: str, rolled_back: bool = False, finding: Finding = finding, rw: Any = rw) -> None:
            result.skipped.append(SkippedRewrite(finding.code, rw.name, finding.location, finding.node or "?",
                                                 reason, rolled_back, finding.file, finding.line))

        if silenced:
            skip(_silence_text(finding.code, silenced, settings))
            continue
        fused = nothing_to_remove(finding, training)
        if fused:
            skip(fused)
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
            mismatch = verifier.check(candidate)
            if mismatch is not None:
                skip(f"rolled back, the rewritten graph does not match the original: {mismatch}", rolled_back=True)
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
    select: str | Sequence[str] | None = None,
    verify: bool = True,
    config: Any = None,
    registry: Registry | None = None,
    safe_only: bool = False,
) -> RewriteResult:
    """Capture ``model`` as one graph, apply the safe rewrites, verify them (see ``fxlint.rewrite``)."""
    from ..capture.graphs import capture_graph_module, normalise_inputs
    from ..project.config import resolve, source_file_of

    # the project's [tool.fxlint] applies as in fxlint.lint; unknown codes fail before anything runs
    settings = resolve(source_file_of(model), config=config, select=select, registry=registry)
    args, kwargs = normalise_inputs(example_inputs)
    gm, origin = capture_graph_module(model, example_inputs)
    training = bool(getattr(model, "training", True))
    return rewrite_graph(gm, args, kwargs, origin=origin, settings=settings, verify=verify, training=training,
                         registry=registry, safe_only=safe_only)
