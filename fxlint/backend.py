"""The ``torch.compile`` backend: ``torch.compile(model, backend="fxlint")``.

Registered through the ``torch_dynamo_backends`` entry point, so it works in
a fresh interpreter without ``import fxlint``. Each graph Dynamo captures is
linted; findings are logged on the ``fxlint`` logger (one summary line per
graph at WARNING when it has warnings or errors, INFO otherwise; one line per
finding at INFO) and handed to every open ``fxlint.collect()`` session. The
graph then goes to the inner backend.

Options (``torch.compile(..., options={...})``):

``inner``   backend that compiles the graph: a registered name or a callable
            (default ``"inductor"``)
``rewrite`` apply the safe rewrites before handing the graph on (default False);
            each is verified on the example inputs unless ``verify`` is False
``verify``  compare each rewritten graph with the original (default True)
``select``/``ignore``  rule codes or prefixes, a list or a comma-separated string

Any other key is configuration for the inner backend and is passed through
(Inductor config for ``"inductor"``, ``options=`` for other backends).

fxlint never breaks a compile: any exception inside it becomes one
``FxlintWarning`` and the untouched graph goes to the inner backend.
"""

from __future__ import annotations

import itertools
import logging
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import torch
import torch.fx as fx

from .errors import ConfigError, FxlintWarning
from .findings import Report, Severity
from .tensorinfo import human_bytes

log = logging.getLogger("fxlint")

_OWN_KEYS = ("inner", "rewrite", "select", "ignore", "verify")
_graph_counter = itertools.count()


@dataclass
class BackendOptions:
    inner: str | Callable[..., Any] = "inductor"
    rewrite: bool = False
    verify: bool = True
    select: Sequence[str] | None = None
    ignore: Sequence[str] | None = None
    passthrough: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, options: dict[str, Any] | None) -> "BackendOptions":
        opts = dict(options or {})
        out = cls()
        if "inner" in opts:
            inner = opts.pop("inner")
            if not (isinstance(inner, str) or callable(inner)):
                raise ConfigError(f"options['inner'] must be a backend name or a callable, not {type(inner).__name__}")
            out.inner = inner
        for key in ("rewrite", "verify"):
            if key in opts:
                val = opts.pop(key)
                if not isinstance(val, bool):
                    raise ConfigError(f"options[{key!r}] must be True or False, not {val!r}")
                setattr(out, key, val)
        for key in ("select", "ignore"):
            if key in opts:
                val = opts.pop(key)
                setattr(out, key, [val] if isinstance(val, str) else (list(val) if val is not None else None))
        out.passthrough = opts
        return out


def fxlint_backend(
    gm: fx.GraphModule,
    example_inputs: list[Any],
    options: dict[str, Any] | None = None,
    mode: str | None = None,
    **kwargs: Any,
) -> Callable[..., Any]:
    """Lint ``gm``, optionally rewrite it, and compile it with the inner backend."""
    opts = BackendOptions.parse(options)  # a bad option is the user's to fix: raise
    inner = _resolve_inner(opts.inner)
    to_compile = gm
    try:
        to_compile = _lint_and_rewrite(gm, example_inputs, opts)
    except Exception as exc:  # noqa: BLE001 - never break the user's compile
        warnings.warn(
            FxlintWarning(
                f"fxlint failed on this graph and left it untouched ({type(exc).__name__}: {exc}); "
                "the compile goes on with the inner backend"
            ),
            stacklevel=2,
        )
        to_compile = gm
    return _call_inner(inner, opts, to_compile, example_inputs, mode, kwargs)


def _lint_and_rewrite(gm: fx.GraphModule, example_inputs: list[Any], opts: BackendOptions) -> fx.GraphModule:
    from .capture import graph_break_from_reason, view_from_dynamo
    from .engine import run_rules
    from .registry import RuleContext, select_rules
    from .session import publish

    label = _graph_label(gm)
    view = view_from_dynamo(gm, label)
    rules = select_rules(opts.select, opts.ignore)
    ctx = RuleContext(training=torch.is_grad_enabled(), options={"backend": True})
    report = run_rules([view], rules, ctx)
    reason = getattr(gm, "compile_subgraph_reason", None)
    if reason is not None and getattr(reason, "graph_break", False):
        report.graph_breaks = 1
        report.extras["breaks"] = [graph_break_from_reason(reason)]
    _log_report(label, report)
    publish(report)
    if opts.rewrite:
        return _rewrite(gm, example_inputs, opts, label, ctx.training)
    return gm


def _rewrite(gm: fx.GraphModule, example_inputs: list[Any], opts: BackendOptions, label: str,
             training: bool) -> fx.GraphModule:
    """Apply the safe rewrites to (a copy of) the captured graph; the inner backend compiles the result."""
    from .rewrite.engine import rewrite_graph
    from .session import publish_rewrites

    result = rewrite_graph(gm, list(example_inputs), origin="dynamo", select=opts.select, ignore=opts.ignore,
                           verify=opts.verify, training=training, label=label, symbolic_ok=False)
    for a in result.applied:
        log.info("fxlint: %s: %s rewritten: %s", a.location, a.code, a.description)
    for sk in result.skipped:
        log.log(logging.WARNING if sk.rolled_back else logging.INFO, "fxlint: %s: %s not applied: %s",
                sk.location, sk.code, sk.reason)
    if result.applied or result.skipped:
        check = f"verified ({result.checked})" if result.verified else "not verified (verify=False)"
        log.info("fxlint: %s: %d rewrite(s) applied, %d not applied; %s", label, len(result.applied),
                 len(result.skipped), check)
    publish_rewrites(result)
    return result.module


def _graph_label(gm: fx.GraphModule) -> str:
    n = next(_graph_counter)
    from .source import user_frame

    for node in gm.graph.nodes:
        loc = user_frame(node.meta.get("stack_trace"))
        if loc is not None:
            fn = loc.function
            if fn.startswith("torch_dynamo_resume_in_"):
                fn = fn.removeprefix("torch_dynamo_resume_in_").rsplit("_at_", 1)[0] + " (after a graph break)"
            return f"graph {n} ({fn})"
    return f"graph {n}"


def _log_report(label: str, report: Report) -> None:
    s = report.summary()
    if not report.findings:
        log.info("fxlint: %s: no findings%s", label,
                 f" ({s['suppressed']} suppressed)" if s["suppressed"] else "")
        return
    worst = max(f.severity.rank for f in report.findings)
    level = logging.WARNING if worst >= Severity.WARNING.rank else logging.INFO
    codes = ", ".join(f"{c}x{n}" if n > 1 else c for c, n in s["by_code"].items())
    parts = [f"{s['findings']} finding{'s' if s['findings'] != 1 else ''} ({codes})"]
    if s["bytes_per_call"]:
        parts.append(f"{human_bytes(s['bytes_per_call'])} copied per call")
    if s["suppressed"]:
        parts.append(f"{s['suppressed']} suppressed")
    first = min(report.findings, key=lambda f: -f.severity.rank)
    log.log(level, "fxlint: %s: %s; first: %s %s (log level INFO or fxlint.collect() for all)",
            label, ", ".join(parts), first.location, first.code)
    for f in report.findings:
        log.info("fxlint: %s: %s [%s] %s%s", f.location, f.code, f.severity, f.message,
                 f" (fix: {f.fix})" if f.fix else "")


def _resolve_inner(inner: str | Callable[..., Any]) -> str | Callable[..., Any]:
    if callable(inner):
        return inner
    if inner == "fxlint":
        raise ConfigError("options['inner'] cannot be 'fxlint' itself")
    if inner == "inductor":
        return inner
    from torch._dynamo.backends.registry import lookup_backend

    return lookup_backend(inner)  # raises InvalidBackend with the list of names


def _call_inner(
    inner: str | Callable[..., Any],
    opts: BackendOptions,
    gm: fx.GraphModule,
    example_inputs: list[Any],
    mode: str | None,
    extra: dict[str, Any],
) -> Callable[..., Any]:
    if inner == "inductor":
        from torch._inductor.compile_fx import compile_fx

        patches = dict(opts.passthrough)
        if mode is not None:
            patches = {**torch._inductor.list_mode_options(mode), **patches}
        return compile_fx(gm, example_inputs, config_patches=patches or None)
    kwargs = dict(extra)
    if opts.passthrough:
        kwargs["options"] = opts.passthrough
    if mode is not None:
        kwargs["mode"] = mode
    assert callable(inner)
    return inner(gm, example_inputs, **kwargs)
