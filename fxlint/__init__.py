"""fxlint: find the copies, layout mistakes and gradient breaks PyTorch hides, on the graphs
``torch.compile`` captures; prove them at runtime; rewrite what is safe.

Public API: ``lint``, ``audit``, ``report`` (HTML), ``rewrite``, ``collect``, the
``Finding``/``Report`` model, and the compile backend
(``torch.compile(model, backend="fxlint")``, ``options={"rewrite": True}``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, overload

from ._version import __version__
from .errors import (
    CaptureError,
    ConfigError,
    FxlintError,
    FxlintWarning,
    GraphBreakError,
    ModelError,
    SpecError,
    TargetError,
)
from .findings import Finding, Report, Severity
from .session import Session, collect

if TYPE_CHECKING:  # pragma: no cover
    from .registry import Registry
    from .rewrite import RewriteResult, rewrite  # the callable package: its __call__ is this function
    from .runtime import AuditReport
    from .runtime.compiled_audit import CompiledAudit


def __getattr__(name: str) -> Any:
    # fxlint.rewrite (a callable package: fxlint.rewrite(model, inputs)) and RewriteResult load
    # torch; importing fxlint must not (the pytest plugin imports it at every pytest start-up)
    if name in ("rewrite", "RewriteResult"):
        import importlib

        pkg = importlib.import_module(".rewrite", __name__)
        return pkg if name == "rewrite" else pkg.RewriteResult
    raise AttributeError(f"module 'fxlint' has no attribute {name!r}")


def lint(
    target: Any,
    example_inputs: Any = None,
    *,
    select: str | Sequence[str] | None = None,
    ignore: str | Sequence[str] | None = None,
    extend_select: str | Sequence[str] | None = None,
    severity: Mapping[str, str] | None = None,
    config: Any = None,
    confirm: bool = False,
    train: bool = False,
    registry: Registry | None = None,
    probe: bool | None = None,
    device: str | Any | None = None,
    compiled: bool = False,
) -> Report:
    """Lint ``target`` and return a ``Report``.

    ``target`` is an ``nn.Module`` or callable (captured through Dynamo, graph
    breaks allowed, every graph analysed; it runs once and its buffers and the
    RNG state are restored; when that call fills a cache the module keeps, the
    second call is captured and reported, and ``Report.first_call`` says what
    only the first did: docs/python-api.md, "The steady state"), a
    ``torch.fx.GraphModule`` (values propagated
    from ``example_inputs`` with fake tensors) or a
    ``torch.export.ExportedProgram``. ``example_inputs`` is a tensor, a
    tuple/list of positional inputs, or a dict of keyword inputs.
    ``select``/``ignore``/``extend_select`` take rule codes or prefixes
    (``"FXL4"``); ``severity`` maps codes or prefixes to ``"error"``,
    ``"warning"`` or ``"info"``.

    Project configuration (``[tool.fxlint]`` in the closest ``pyproject.toml``
    above the file that defines the model's class or the callable) applies
    unless ``config=False``; ``config="path/to/pyproject.toml"`` names the file.
    Explicit arguments replace the file's value of the same key.

    ``confirm=True`` also runs the runtime audit (``fxlint.audit``) and marks
    each copy-type finding ``confirmed``, ``refuted`` or ``not-run``
    (``Finding.status``), gives each the measured time of its copies
    (``Finding.time_ns``) and says where the call's time goes
    (``Report.audit_summary``); runtime copies no finding explains are listed in
    ``Report.unexplained``. With ``train=True`` the audit runs a training step
    (forward and backward), so backward copies are timed too.

    ``registry`` is the set of rules to run (``fxlint.registry.Registry``; default: every
    rule fxlint ships).

    ``probe`` (default: ``probe`` from the config file, else True): where a kernel's copies
    depend on this CPU (oneDNN's reorders), run that one op on random tensors of the same
    geometry under the profiler and report what this machine does ("measured on this
    machine"; see ``fxlint.kernels.probe`` for the cost and the cache). ``probe=False`` leaves
    those parts unknown. ``Report.extras["probe"]`` says what probing did.

    ``device`` (default: ``device`` from the config file, else none): lint as if the inputs,
    parameters and buffers lived on this device (``"cuda"``), on a machine that has none: the
    capture runs on the CPU, then fake tensors on the target device are propagated through the
    captured graphs (``fxlint.analysis.device``; what it can and cannot tell: docs/device.md). Device
    transfers (FXL106), CPU factories moved to the device (FXL107) and host syncs (FXL304, in
    inference too) are then what the GPU run would do. ``Report.extras["device"]`` says what the
    simulation did (parameters kept on the host, mixed-device ops). With ``confirm=True`` the
    audit still runs on this machine: findings about the simulated device stay ``not-run``.

    ``compiled=True``: also compile each captured graph with Inductor (nothing runs) and give each
    copy finding the verdict of the program ``torch.compile`` really runs (``Finding.compiled``:
    ``"survives"`` with ``Finding.compiled_bytes`` per call, ``"fused"`` when Inductor fuses the
    copy away, ``"unknown"`` when its lowering does not say; ``fxlint.compiled``).
    ``Report.extras["compiled"]`` says, per graph, what survives and the copies no finding explains.
    Graphs not captured by Dynamo (a GraphModule, an ExportedProgram) and ``device=`` simulations
    get ``"unknown"``. With ``confirm=True`` as well, the compiled program itself is also measured
    (``fxlint.audit(..., compiled=True)``: Inductor's own output code, provenance and the profiler) and
    each ``survives``/``fused`` verdict is held to it line by line; ``Report.extras["compiled_check"]``
    has the result (``fxlint.runtime.compiled_confirm``: per verdict confirmed / refuted / not-run /
    not-known, the copy bytes of the compiled program on a line with a finding, the lines without one).

    The gradient rules (FXL301-304, FXL109's cut) speak about training: a
    module in ``eval()`` mode, or a lint under ``torch.no_grad()``, gets none
    of their warnings.
    """
    import torch

    # bad codes and bad config fail before anything runs
    from .analysis.device import parse_device
    from .analysis.engine import run_rules
    from .capture.graphs import capture
    from .project.config import resolve, source_file_of
    from .registry import RuleContext

    device = parse_device(device) if device is not None else None
    settings = resolve(source_file_of(target), config=config, select=select, ignore=ignore,
                       extend_select=extend_select, severity=severity, probe=probe, registry=registry)
    device = device if device is not None else parse_device(settings.device, "device (config)")
    from .util.source import passthrough_libraries

    with passthrough_libraries(settings.passthrough):  # the lines findings are reported at
        captured = capture(target, example_inputs, keep_inputs=compiled)
    simulation = None
    if device is not None:
        from .analysis.device import simulate

        if captured.origin == "export":
            import warnings

            warnings.warn(FxlintWarning(
                "fxlint: device=: torch.export drops the conversions that are no-ops on the device it traced on "
                "(`.to(x.device)`, `.cpu()` of a CPU tensor), so their copies on the target device cannot be "
                "seen; lint the module itself for the device findings (docs/device.md)"), stacklevel=2)
        simulation = simulate(captured, device)
    # training: the module's own flag, and autograd on (linting under no_grad is inference)
    training = captured.training and torch.is_grad_enabled()
    from .kernels.probe import probing
    from .util.progress import phase

    with probing(settings.probe if probe is None else probe, max_mib=settings.probe_max_mib) as probe_stats, \
            phase(f"running {len(settings.rules)} rules"):
        report = run_rules(captured.program(), settings.rules,
                           RuleContext(training=training, device=simulation.device if simulation else None), settings)
        if captured.first_call is not None:  # the first call filled a cache: say what only it does
            from .findings import first_call_only

            first = run_rules(captured.first_call.program(), settings.rules, RuleContext(training=training),
                              settings)
            report.first_call = first_call_only(first, report, captured.caches)
    report.extras["probe"] = probe_stats.describe()
    if simulation is not None:
        report.extras["device"] = simulation.describe()
    elif not torch.cuda.is_available():
        hint = _device_hint(captured.program().views)
        if hint is not None:
            report.extras["device_hint"] = hint
    report.graph_breaks = len(captured.breaks)
    report.extras["breaks"] = captured.breaks
    report.extras["config_file"] = settings.config_file
    report.extras["fail_on"] = settings.fail_on
    if compiled:
        from .compiled.captured import judge_capture

        why_not = f"linted for {simulation.device}, simulated on this machine" if simulation is not None else None
        report.findings, quiet, report.extras["compiled"] = judge_capture(
            report.findings, captured.views, captured.example_inputs, why_not=why_not, rules=settings.rules,
            ctx=RuleContext(training=training), settings=settings, runs=captured.runs)
        report.suppressed.extend(quiet)
        report.errors.extend(e for said in report.extras["compiled"].values() for e in said.pop("rule_errors", ()))
        captured.example_inputs.clear()
    if confirm:
        from .runtime.confirm import confirm as _confirm

        with phase("auditing: running the model under the profiler"), \
                passthrough_libraries(settings.passthrough):  # the audit attributes copies alike
            audited = audit(target, example_inputs, train=train)
        report = _confirm(report, audited)
        if compiled and simulation is None:
            from .runtime.compiled_audit import audit_compiled
            from .runtime.compiled_confirm import check_verdicts

            with phase("auditing the compiled program: Inductor, then the profiler"), \
                    passthrough_libraries(settings.passthrough):
                measured = audit_compiled(target, example_inputs, train=train)
            report.extras["compiled_check"] = check_verdicts(report.findings, measured, report.suppressed).to_dict()
        if simulation is not None:
            from .analysis.device import unmeasured

            report = unmeasured(report)
    return report


def _device_hint(views: Any) -> dict[str, Any] | None:
    """On a machine without CUDA and no target device: the factories without ``device=`` whose tensor
    meets the model's (FXL107 on a GPU, quiet here), for the text report's one-line hint that
    ``--device cuda`` lints for the GPU."""
    from .passes._unplaced import unplaced_factories

    found = unplaced_factories(views)
    if not found:
        return None
    return {"device": "cuda", "factories": [
        {"kind": f.args.get("kind", "tensor"), "file": f.location.file if f.location else None,
         "line": f.location.line if f.location else None} for f in found]}


def report(
    target: Any,
    example_inputs: Any = None,
    output: str | os.PathLike[str] | None = "fxlint-report.html",
    *,
    train: bool = False,
    select: str | Sequence[str] | None = None,
    ignore: str | Sequence[str] | None = None,
    config: Any = None,
    rewrites: bool = True,
    title: str | None = None,
    device: str | None = None,
    compiled: bool = False,
) -> str:
    """Lint ``target`` with the runtime audit and write the HTML report to ``output``; returns the
    HTML text (``output=None`` writes nothing).

    The page holds the summary (bytes and measured time per rule and per line), each file's
    source with the lines that copy highlighted by cost and the findings inline, the runtime
    copies no finding explains, the graph breaks, and (``rewrites=True``) what ``fxlint fix``
    would rewrite. ``train=True`` audits a training step. ``device="cuda"`` lints for that device
    (see ``lint``); the audit runs on this machine. ``compiled=True`` also judges each finding on the
    program Inductor compiles (``lint``'s ``compiled``): the page shows eager's bytes and the compiled
    program's verdict side by side, with the copies Inductor makes itself (FXL7xx). One self-contained
    file: no network."""
    from .renderers.html import render_html
    from .util.outputs import write_text

    rep = lint(target, example_inputs, select=select, ignore=ignore, config=config, confirm=True, train=train,
               device=device, compiled=compiled)
    rw = rw_error = None
    if rewrites:
        try:
            from .rewrite import rewrite as _rewrite

            rw = _rewrite(target, example_inputs, select=select, config=config)
        except FxlintError as exc:
            rw_error = str(exc).splitlines()[0]
    name = title or f"fxlint report: {_target_name(target)}"
    text = render_html(rep, title=name, rewrites=rw, rewrite_error=rw_error)
    if output is not None:
        write_text(output, text)
    return text


def _target_name(target: Any) -> str:
    t = getattr(target, "_orig_mod", target)
    return getattr(t, "__qualname__", None) or type(t).__qualname__


@overload
def audit(target: Any, example_inputs: Any = None, *, train: bool = False,
          compiled: Literal[False] = False) -> AuditReport: ...


@overload
def audit(target: Any, example_inputs: Any = None, *, train: bool = False,
          compiled: Literal[True]) -> CompiledAudit: ...


def audit(target: Any, example_inputs: Any = None, *, train: bool = False,
          compiled: bool = False) -> AuditReport | CompiledAudit:
    """Run ``target`` eagerly under ``torch.profiler`` and return every copy it makes,
    attributed to source lines (see the ``fxlint.runtime`` module documentation).

    ``compiled=True``: measure the program ``torch.compile`` builds instead (Inductor, CPU): compile
    ``target`` with Inductor, run it twice, profile the third call, and return the copies its kernels and
    the ATen ops it calls make, per source line (a ``CompiledAudit``; ``fxlint.runtime.compiled_audit``
    says how). It never guesses: what it cannot read is ``CompiledAudit.known = False`` with the reason."""
    if compiled:
        from .runtime.compiled_audit import audit_compiled

        return audit_compiled(target, example_inputs, train=train)
    from .runtime import audit as _audit

    return _audit(target, example_inputs, train=train)


__all__ = [
    "CaptureError",
    "ConfigError",
    "Finding",
    "FxlintError",
    "FxlintWarning",
    "GraphBreakError",
    "ModelError",
    "Report",
    "RewriteResult",
    "Session",
    "Severity",
    "SpecError",
    "TargetError",
    "__version__",
    "audit",
    "collect",
    "lint",
    "report",
    "rewrite",
]


def __dir__() -> list[str]:
    """The public API only (``dir(fxlint)``, completion in a notebook): not the names this module uses."""
    return sorted(__all__)
