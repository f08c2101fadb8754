"""The ``torch.compile`` backend: ``torch.compile(model, backend="fxlint")``.

Registered through the ``torch_dynamo_backends`` entry point, so it works in
a fresh interpreter without ``import fxlint``. Each graph Dynamo captures is
linted; findings are logged on the ``fxlint`` logger (one summary line per
graph at WARNING when it has warnings or errors, INFO otherwise; one line per
finding at INFO) and handed to every open ``fxlint.collect()`` session. The
graph then goes to the inner backend.

Options (``torch.compile(..., options={...})``):

``inner``   backend that compiles the graph: a registered name or a callable
            (default: ``inner`` from the project configuration, else ``"inductor"``)
``rewrite`` apply the safe rewrites before handing the graph on (default:
            ``rewrite`` from the project configuration, else False); each is
            verified on the example inputs unless ``verify`` is False. With Inductor
            and ``compiled``, a graph with a rewrite site is compiled as captured
            first, and the rewrites go by that program's verdicts (a fused copy is not
            rewritten); that compile is returned when nothing is rewritten
``verify``  compare each rewritten graph with the original (default True)
``select``/``ignore``/``extend_select``  rule codes or prefixes, a list or a
            comma-separated string
``severity`` a dict of code or prefix -> ``"error"``/``"warning"``/``"info"``
``config``  a config file path, or False to ignore ``[tool.fxlint]``
``safe_only`` with ``rewrite``: only the rewrites their rule declares safe
``registry``  the rules and rewrites to run (an ``fxlint.registry.Registry``;
            default: fxlint's own)
``probe``   measure the kernel copies that depend on this CPU by running each such op
            once on random tensors (``fxlint.kernels.probe``; default False here: a
            compile does not run ops behind the user's back unless asked)
``compiled`` with Inductor as the inner backend: read Inductor's lowering of the graph as it
            compiles (``fxlint.compiled``) and give each copy finding the verdict of the
            compiled program (default True): ``survives`` (bytes per call), ``fused``
            (demoted to info: eager makes the copy, the compiled program does not) or
            ``unknown``, and report the copies Inductor makes itself (FXL7xx); the summary
            line and ``fxlint.collect()`` count what survives. Inductor's FX-graph and
            AOTAutograd caches are off for that compile (a cache hit lowers nothing); in a
            training graph AOTAutograd compiles the backward with the forward (the same
            kernels, compiled earlier), so the backward's copies are read too; ``False``
            leaves all that as torch does it and the findings eager-only
``ranks``   under ``torch.distributed``, which ranks log their findings:
            ``"first"`` (default: each finding once in the job, by the first rank
            that finds it, named in the log line), ``"all"``, or a rank number;
            ``fxlint.collect()`` holds every finding of its own rank either way

The project configuration is the ``[tool.fxlint]`` table of the closest
``pyproject.toml`` above the user's source file of the graph's nodes (else
the working directory); explicit options replace the file's keys.

Any other key is configuration for the inner backend: a ``torch._inductor.config``
key for ``"inductor"`` (``"fallback_random"``, ``"cpp.enable_kernel_profile"``),
``options=`` for a backend of your own. A key that is neither (a typo such as
``"selct"``), or any other key with an eager inner backend (which takes no
options), is one ``ConfigError`` naming the valid keys, with a "did you mean".

Under ``DistributedDataParallel`` DDPOptimizer splits each graph at the
gradient buckets and calls the backend once per piece: the graph it split is
linted once, whole, as Dynamo captured it, and each piece goes to the inner
backend (and the rewrites) on its own (see ``fxlint.capture.distributed``).

fxlint never breaks a compile: any exception inside it becomes one
``FxlintWarning`` and the untouched graph goes to the inner backend.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
import torch.fx as fx

from .capture.distributed import SplitGraphs
from .errors import ConfigError, FxlintError, FxlintWarning, closest, first_line
from .findings import Report

if TYPE_CHECKING:  # pragma: no cover
    from .project.config import Settings
    from .registry import Registry

log = logging.getLogger("fxlint")

_graph_counter = itertools.count()
#: graphs DDPOptimizer split whose pieces were linted already (the first piece lints the whole)
_ddp_linted = SplitGraphs()


@dataclass
class BackendOptions:
    """The options as given; None means "not given": the project configuration decides."""

    inner: str | Callable[..., Any] | None = None
    rewrite: bool | None = None
    verify: bool = True
    select: Sequence[str] | None = None
    ignore: Sequence[str] | None = None
    extend_select: Sequence[str] | None = None
    severity: dict[str, str] | None = None
    config: Any = None
    registry: Registry | None = None
    safe_only: bool = False
    probe: bool = False
    compiled: bool = True
    ranks: str | int = "first"
    passthrough: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, options: dict[str, Any] | None) -> BackendOptions:
        opts = dict(options or {})
        out = cls()
        if "inner" in opts:
            inner = opts.pop("inner")
            if not (isinstance(inner, str) or callable(inner)):
                raise ConfigError(f"options['inner'] must be a backend name or a callable, not {type(inner).__name__}")
            out.inner = inner
        for key in ("rewrite", "verify", "safe_only", "probe", "compiled"):
            if key in opts:
                val = opts.pop(key)
                if not isinstance(val, bool):
                    raise ConfigError(f"options[{key!r}] must be True or False, not {val!r}")
                setattr(out, key, val)
        for key in ("select", "ignore", "extend_select"):
            if key in opts:
                val = opts.pop(key)
                setattr(out, key, [val] if isinstance(val, str) else (list(val) if val is not None else None))
        if "severity" in opts:
            val = opts.pop("severity")
            if val is not None and not isinstance(val, dict):
                raise ConfigError(f"options['severity'] must be a dict of code -> severity, not {val!r}")
            out.severity = val
        if "registry" in opts:
            from .registry import Registry

            val = opts.pop("registry")
            if val is not None and not isinstance(val, Registry):
                raise ConfigError(f"options['registry'] must be an fxlint.registry.Registry, not {type(val).__name__}")
            out.registry = val
        if "ranks" in opts:
            from .capture.distributed import parse_policy

            out.ranks = parse_policy(opts.pop("ranks"))
        if "config" in opts:
            val = opts.pop("config")
            if not (val is None or val is False or isinstance(val, (str, os.PathLike))):
                raise ConfigError(f"options['config'] must be a config file path or False, not {val!r}")
            out.config = val
        out.passthrough = opts
        return out

    def check_passthrough(self, inner: str | Callable[..., Any]) -> None:
        """The keys that are not fxlint's go to the inner backend: Inductor config keys for Inductor,
        nothing for the eager backends (they take no options). Anything else is a mistake, said in one
        line with the valid keys, never handed on to Inductor or dropped silently."""
        if not self.passthrough:
            return
        keys = sorted(self.passthrough)
        if inner == "inductor":
            bad = [k for k in keys if not _inductor_config_key(k)]
            where = "fxlint's options or a torch._inductor.config key"
        elif isinstance(inner, str) and inner in _EAGER_INNER:
            bad, where = keys, f"fxlint's options (the {inner!r} backend takes no options)"
        else:
            return  # another backend's own options: it checks them
        if not bad:
            return
        hints = []
        for k in bad:
            close = closest(k, OPTION_KEYS)
            hints.append(f"{k!r}" + (f" (did you mean {close!r}?)" if close else ""))
        raise ConfigError(f"unknown backend option{'s' if len(bad) > 1 else ''} {', '.join(hints)}: expected {where}; "
                          f"fxlint's options are {', '.join(OPTION_KEYS)}")


#: the keys fxlint's backend reads itself (the rest is the inner backend's)
OPTION_KEYS = ("inner", "rewrite", "verify", "select", "ignore", "extend_select", "severity", "config", "registry",
               "safe_only", "probe", "compiled", "ranks")


def _inductor_config_key(key: str) -> bool:
    """Whether ``key`` (``"fallback_random"``, ``"cpp.enable_kernel_profile"``) names an Inductor config entry."""
    import torch._inductor.config as config

    obj: Any = config
    for part in key.split("."):
        if part.startswith("_") or not hasattr(obj, part):
            return False
        obj = getattr(obj, part)
    return True


def fxlint_backend(
    gm: fx.GraphModule,
    example_inputs: list[Any],
    options: dict[str, Any] | None = None,
    mode: str | None = None,
    **kwargs: Any,
) -> Callable[..., Any]:
    """Lint ``gm``, optionally rewrite it, and compile it with the inner backend."""
    opts = BackendOptions.parse(options)  # a bad option or config file is the user's to fix: raise
    try:
        settings = _settings_for(_ddp_original_or(gm), opts)
    except FxlintError:
        raise
    except Exception as exc:  # noqa: BLE001 - an fxlint bug reading the configuration: compile untouched
        _warn_untouched(exc)
        inner = _resolve_inner(opts.inner if opts.inner is not None else "inductor")
        return _call_inner(inner, opts, gm, example_inputs, mode, kwargs)
    inner_choice = opts.inner if opts.inner is not None else (settings.inner or "inductor")
    opts.check_passthrough(inner_choice)  # a typo is the user's to fix, before anything compiles
    inner = _resolve_inner(inner_choice)
    # a view can cost more than the copy it replaces where the inner backend fuses ops
    fusing = not (isinstance(inner_choice, str) and inner_choice in _EAGER_INNER)
    to_compile = gm
    deferred: list[tuple[str, Report, Any, Any]] = []  # linted, logged once the compile says what survives
    # with Inductor, the rewrites go by the verdicts of its lowering of the original graph: compiled (and
    # kept) only when a rewrite has a site, before rewriting
    first = _FirstCompile(inner, opts, gm, example_inputs, mode, kwargs) if _reads_first(inner, opts, gm) else None
    try:
        to_compile = _lint_and_rewrite(gm, example_inputs, opts, settings, fusing, deferred, first)
    except Exception as exc:  # noqa: BLE001 - never break the user's compile
        _warn_untouched(exc)
        to_compile = gm
    watch = _Watch(bool(deferred) and inner == "inductor" and opts.compiled,
                   training=any(ctx.training for *_, ctx in deferred))
    try:
        def original() -> Callable[..., Any]:
            """The original graph's compile: the first one when it was made (nothing rewritten), else now."""
            if first is not None and first.compiled is not None:
                watch.lowering, watch.error = first.watch.lowering, first.watch.error
                return first.compiled
            return watch.call(inner, opts, gm, example_inputs, mode, kwargs)

        if to_compile is gm:
            return original()
        try:
            return watch.call(inner, opts, to_compile, example_inputs, mode, kwargs)
        except Exception as exc:  # noqa: BLE001 - the rewritten graph must not cost the user the compile
            warnings.warn(
                FxlintWarning(
                    f"the inner backend failed on fxlint's rewritten graph ({type(exc).__name__}: "
                    f"{first_line(exc)}); compiling the original graph instead"
                ),
                stacklevel=2,
            )
            return original()
    finally:
        from .session import publish

        for label, report, view, ctx in deferred:
            try:
                watch.judge(label, report, view, settings, ctx)
                _log_report(label, report, opts.ranks)
                publish(report)
            except Exception as exc:  # noqa: BLE001 - reporting must not cost the user the compile
                warnings.warn(FxlintWarning(f"fxlint failed reporting the findings of {label} "
                                            f"({type(exc).__name__}: {exc}); the compile goes on"), stacklevel=2)


def _reads_first(inner: str | Callable[..., Any], opts: BackendOptions, gm: fx.GraphModule) -> bool:
    """Whether the rewrites of this graph go by Inductor's verdicts: Inductor compiles it, the verdicts are
    asked for (``compiled``), the rewrites are on (the project configuration may turn them on: checked
    again when there is a site), and it is a whole Dynamo graph (a DDP bucket's piece keeps today's
    heuristics: its inputs are fake)."""
    from .capture.distributed import is_ddp_split

    return inner == "inductor" and opts.compiled and opts.rewrite is not False and not is_ddp_split(gm)


class _FirstCompile:
    """Inductor's compile of the original graph, read (``_Watch``) before the rewrites run, for the
    verdicts they go by (``fxlint.rewrite.engine.Verdicts``). Called only when a rewrite has a site; the
    compiled program is kept and is what the backend returns when nothing is rewritten, so a graph costs a
    second compile only when a rewrite applies. A compile that fails leaves the verdicts unknown (the
    rewrites then use their own rules), and the user's compile reports the failure as it would anyway."""

    def __init__(self, inner: str | Callable[..., Any], opts: BackendOptions, gm: fx.GraphModule,
                 example_inputs: list[Any], mode: str | None, extra: dict[str, Any]) -> None:
        self.args = (inner, opts, gm, example_inputs, mode, extra)
        self.watch = _Watch(True)
        self.compiled: Callable[..., Any] | None = None
        self.error: str | None = None

    def verdicts(self, training: bool) -> Callable[[list[Any], Any], list[Any]]:
        def judge(findings: list[Any], view: Any) -> list[Any]:
            from .compiled.verdicts import Sites, apply_verdicts, unknown_verdicts

            self.watch.training = training  # a training graph: its backward is read too, as the inner compile's
            try:
                self.compiled = self.watch.call(*self.args)
            except Exception as exc:  # noqa: BLE001 - the user's own compile says it, once, later
                self.error = f"{type(exc).__name__}: {first_line(exc)}"
                return unknown_verdicts(findings)
            lowering = self.watch.lowering
            if lowering is None:
                return unknown_verdicts(findings)
            return apply_verdicts(findings, lowering, sites=Sites(view))

        return judge


class _Watch:
    """The inner compile, with Inductor's lowering read when ``active`` (``fxlint.compiled``); reading
    it never breaks the compile, and a lowering that cannot be read leaves the verdicts unknown."""

    def __init__(self, active: bool, *, training: bool = False) -> None:
        self.active = active
        self.training = training  # a training graph: AOTAutograd compiles its backward at once, and it is read too
        self.lowering: Any = None
        self.error: str | None = None

    def call(self, inner: str | Callable[..., Any], opts: BackendOptions, gm: fx.GraphModule,
             example_inputs: list[Any], mode: str | None, extra: dict[str, Any]) -> Callable[..., Any]:
        if not self.active:
            return _call_inner(inner, opts, gm, example_inputs, mode, extra)
        with contextlib.ExitStack() as stack:
            try:
                from .compiled.lowering import observe, uncached, with_backward

                self.lowering = stack.enter_context(observe(gm.graph))
                stack.enter_context(uncached())
                if self.training:  # the same kernels, compiled with the forward instead of at the first backward
                    stack.enter_context(with_backward())
            except Exception as exc:  # noqa: BLE001 - another torch: compile as if fxlint were not watching
                self.error = f"could not watch Inductor ({type(exc).__name__}: {exc})"
            return _call_inner(inner, opts, gm, example_inputs, mode, extra)

    def judge(self, label: str, report: Report, view: Any, settings: Settings | None = None,
              ctx: Any = None) -> None:
        """The verdicts of ``report``'s findings and the findings of the compiled rules (the copies the
        compiled program makes that no eager finding explains), from the lowering this watch read."""
        if not self.active:
            return
        try:
            from .compiled.lowering import Lowering
            from .compiled.program import judge

            lowering = self.lowering if self.lowering is not None else Lowering(error=self.error or "not compiled")
            rules = settings.rules if settings is not None else ()
            report.findings, quiet, said = judge(report.findings, lowering, view, label, demote=True, rules=rules,
                                                 ctx=ctx, settings=settings)
            report.suppressed.extend(quiet)
            report.errors.extend(said.pop("rule_errors", ()))
            report.extras["compiled"] = {label: said}
        except Exception as exc:  # noqa: BLE001 - the eager findings stand, marked unknown; say why
            from .compiled.verdicts import unknown_verdicts

            report.findings = unknown_verdicts(report.findings)
            report.extras["compiled"] = {label: {"why_unknown": f"{type(exc).__name__}: {exc}"}}


def _warn_untouched(exc: BaseException) -> None:
    warnings.warn(
        FxlintWarning(
            f"fxlint failed on this graph and left it untouched ({type(exc).__name__}: {exc}); "
            "the compile goes on with the inner backend"
        ),
        stacklevel=3,
    )


def _settings_for(gm: fx.GraphModule, opts: BackendOptions) -> Settings:
    """Project configuration found from the user's file of this graph, overridden by the options."""
    from .project.config import resolve

    return resolve(_user_file(gm), config=opts.config, select=opts.select, ignore=opts.ignore,
                   extend_select=opts.extend_select, severity=opts.severity,
                   rewrite=opts.rewrite, inner=opts.inner if isinstance(opts.inner, str) else None,
                   registry=opts.registry)


def _user_file(gm: fx.GraphModule) -> str | None:
    from .util.source import user_frame

    for node in gm.graph.nodes:
        loc = user_frame(node.meta.get("stack_trace"))
        if loc is not None:
            return loc.file
    return None


def _lint_and_rewrite(
    gm: fx.GraphModule, example_inputs: list[Any], opts: BackendOptions, settings: Settings, fusing: bool,
    deferred: list[tuple[str, Report, Any, Any]] | None = None, first: _FirstCompile | None = None,
) -> fx.GraphModule:
    """Lint (and rewrite) ``gm``; the report of a whole graph goes to ``deferred``, to be logged after
    its compile (a DDP bucket's piece logs the graph it split at once)."""
    from .capture.distributed import ddp_original, is_ddp_split
    from .registry import RuleContext

    ctx = RuleContext(training=_training(), options={"backend": True})
    report: Report | None = None
    inputs = example_inputs
    if is_ddp_split(gm):
        from .capture.distributed import materialised

        inputs = materialised(example_inputs)  # DDPOptimizer hands each piece fake inputs
        # one piece of a graph DDPOptimizer split at its gradient buckets: lint the graph it
        # split, once (the pieces share its code, breaks and gradient paths), not each piece
        original = ddp_original(gm)
        if original is None:  # torch changed: each piece alone (DDPOptimizer's "break" is not read)
            label = _graph_label(gm)
            report = _lint(gm, label, opts, settings, ctx)
        else:
            seen = _ddp_linted.label(original)
            if seen is None:
                label = _ddp_linted.add(original, _graph_label(original))
                report = _lint(original, label, opts, settings, ctx)
            else:
                label = seen
        label = f"{label} (a DDP bucket's piece)"
    else:
        label = _graph_label(gm)
        report = _lint(gm, label, opts, settings, ctx, deferred)
    if settings.rewrite:
        # a rule that failed was reported once (one FxlintWarning); it finds no rewrite sites
        failed = set(report.extras.get("failed_rules", ())) if report is not None else set()
        rules = [r for r in settings.rules if r.code not in failed]
        verdicts = first.verdicts(ctx.training) if first is not None else None  # None for a DDP piece
        return _rewrite(gm, inputs, opts, settings, label, ctx.training, rules, fusing, verdicts)
    return gm


def _lint(gm: fx.GraphModule, label: str, opts: BackendOptions, settings: Settings, ctx: Any,
          deferred: list[tuple[str, Report, Any, Any]] | None = None) -> Report:
    """Lint one captured graph, log what this rank reports and hand the report to the sessions (or,
    with ``deferred``, leave both to the caller)."""
    from .analysis.engine import run_rules
    from .capture.graphs import ended_by, view_from_dynamo
    from .capture.program import Program
    from .session import frame_key, publish

    view = view_from_dynamo(gm, label)
    # Dynamo hands the backend one graph at a time: the program is this graph and
    # the break that ended it (if any); there are no runtime facts at compile time.
    end = ended_by(gm, label)
    program = Program([view], [end] if end is not None else [])
    from .kernels.probe import probing

    with probing(opts.probe, max_mib=settings.probe_max_mib):  # off unless options={"probe": True}
        report = run_rules(program, settings.rules, ctx, settings)
    if end is not None:
        report.graph_breaks = 1
        report.extras["breaks"] = [end]
    report.extras["frame"] = frame_key(gm)  # a recompile of this frame on the same inputs replaces it
    if deferred is not None:
        deferred.append((label, report, view, ctx))  # the compiled rules run after the compile, in this ctx
        return report
    _log_report(label, report, opts.ranks)
    publish(report)
    return report


def _ddp_original_or(gm: fx.GraphModule) -> fx.GraphModule:
    """The graph DDPOptimizer split ``gm`` from, or ``gm`` (the project configuration is found
    from the user's file of the graph: a piece may hold none of the user's lines)."""
    from .capture.distributed import ddp_original

    return ddp_original(gm) or gm


def _training() -> bool:
    """Is this graph a training forward? Autograd must be on (Dynamo guards on the
    grad mode, so it is the mode the graph will run in), and the modules of the
    frame being compiled (``self`` of ``forward``, a model passed to a train
    step) must be in training mode: an ``eval()`` model is inference even with
    autograd on. When the frame holds no module, autograd's mode decides."""
    if not torch.is_grad_enabled():
        return False
    try:  # the frame Dynamo is compiling right now; internal API, so never fatal
        from torch._dynamo.symbolic_convert import InstructionTranslator

        tx = InstructionTranslator.current_tx()
        modules = [v for v in tx.f_locals.values() if isinstance(v, torch.nn.Module)]
    except Exception:  # noqa: BLE001
        return True
    return any(m.training for m in modules) if modules else True


def _rewrite(gm: fx.GraphModule, example_inputs: list[Any], opts: BackendOptions, settings: Settings,
             label: str, training: bool, rules: list[Any], fusing: bool,
             verdicts: Callable[[list[Any], Any], list[Any]] | None = None) -> fx.GraphModule:
    """Apply the safe rewrites to (a copy of) the captured graph; the inner backend compiles the result.
    ``verdicts``: Inductor's verdicts on the sites' copies, read from its compile of the original graph."""
    from .rewrite.engine import rewrite_graph
    from .session import publish_rewrites

    result = rewrite_graph(gm, list(example_inputs), origin="dynamo", settings=settings, rules=rules,
                           verify=opts.verify, training=training, label=label, symbolic_ok=False,
                           fusing=fusing, registry=opts.registry, safe_only=opts.safe_only, verdicts=verdicts)
    _log_rewrites(label, result, opts.ranks)
    publish_rewrites(result)
    return result.module


def _graph_label(gm: fx.GraphModule) -> str:
    n = next(_graph_counter)
    from .util.source import user_frame

    for node in gm.graph.nodes:
        loc = user_frame(node.meta.get("stack_trace"))
        if loc is not None:
            fn = loc.function
            if fn.startswith("torch_dynamo_resume_in_"):
                fn = fn.removeprefix("torch_dynamo_resume_in_").rsplit("_at_", 1)[0] + " (after a graph break)"
            return f"graph {n} ({fn})"
    return f"graph {n}"


def _log_report(label: str, report: Report, policy: str | int = "first") -> None:
    """Log the findings this rank reports (``options["ranks"]``; one process: all of them)."""
    from dataclasses import replace

    from .capture.distributed import current, to_report
    from .renderers.log import log_report

    ranks = current()
    if ranks is None:
        log_report(label, report, log)
        return
    shown, why = to_report(report.findings, policy, ranks)
    who = f"{ranks}" + (f" ({why})" if why and shown else "")
    if report.findings and not shown:
        n = len(report.findings)
        log.info("fxlint: %s: %s: %d finding%s, logged by %s", who, label, n, "s" if n != 1 else "",
                 "another rank" if policy == "first" else f"rank {policy}")
        return
    log_report(f"{who}: {label}", replace(report, findings=shown), log)


def _log_rewrites(label: str, result: Any, policy: str | int = "first") -> None:
    """Log the rewrites, on the rank ``options["ranks"]`` picks (every rank rewrites its own graph)."""
    from .capture.distributed import current, logs
    from .renderers.log import log_rewrites

    ranks = current()
    if ranks is not None:
        sites = [f"{a.code}@{a.location}:{a.description}" for a in result.applied]
        sites += [f"{s.code}@{s.location}:{s.reason}" for s in result.skipped]
        if not sites or not any(logs(["rewrites:" + "|".join(sites)], policy, ranks)[0]):
            return
        label = f"{ranks}: {label}"
    log_rewrites(label, result, log)


# inner backends that run the graph op by op: no fusion, so a view always beats a copy
# (a callable or any other name is assumed to compile and fuse, like Inductor)
_EAGER_INNER = frozenset({"eager", "aot_eager", "aot_eager_decomp_partition", "aot_eager_default_partitioner"})


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
        compiled = compile_fx(gm, example_inputs, config_patches=patches or None)
        assert callable(compiled)  # file paths or weights come back only in AOT mode, never asked for here
        return compiled
    kwargs = dict(extra)
    if opts.passthrough:
        kwargs["options"] = opts.passthrough
    if mode is not None:
        kwargs["mode"] = mode
    assert callable(inner)
    return inner(gm, example_inputs, **kwargs)
