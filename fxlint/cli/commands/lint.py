"""``fxlint lint``: capture a model, run the rules, print the findings."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from typing import Any

from ...errors import TargetError
from ...util.progress import activity
from ...util.quiet import debug
from ._common import (
    EXIT_CLEAN,
    EXIT_FINDINGS,
    TARGET_HELP,
    add_config_args,
    add_device_arg,
    add_rule_filter_args,
    add_target_args,
    check_explicit_codes,
    config_arg,
    declared_device,
    emit,
    load_inputs,
    progress,
    target_file,
    zoo_models,
)

ORDER = 10

EPILOG = TARGET_HELP + """
configuration: the [tool.fxlint] table of the closest pyproject.toml above the
TARGET's file (select, ignore, extend-select, per-file-ignores, severity,
fail-on, inner, rewrite, probe, probe-max-mib); flags replace the file's keys.

probing: where a kernel's copies depend on this CPU (oneDNN's reorders), lint
runs that one op on random tensors of the same geometry and reports what this
machine does ("measured on this machine"), cached in $FXLINT_CACHE_DIR
(default ~/.cache/fxlint); --no-probe leaves those parts unknown.
`fxlint env` shows this machine's facts and the cache.

target device: --device cuda lints as if the inputs, parameters and buffers
lived on that device, on a machine without one (a fake-tensor simulation:
device transfers FXL106, CPU factories FXL107, host syncs FXL304 in inference
too; limits in docs/device.md). With --zoo, a model file's module-level
DEVICE = "cuda" is its target device unless --device is given.

baselines: --baseline FILE --write-baseline records today's findings; later
runs with --baseline FILE report only new ones (the rest are counted).
"""


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "lint", help="lint a model and print the findings",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG,
        description="Capture TARGET with Dynamo (or read its FX/exported graph), run the rules, "
                    "and print the findings, most harmful first (errors, warnings, infos), then most expensive.")
    add_target_args(p, zoo=True)
    p.add_argument("--format", choices=["text", "json", "sarif"], default="text", help="output format (default text)")
    p.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE instead of stdout")
    p.add_argument("--no-group", action="store_true",
                   help="text: one row per finding (every module instance) instead of one per rule and source line")
    p.add_argument("--scope", choices=["all", "user"], default="all",
                   help="all (default): your files first, then the lines of installed packages your model runs "
                        "(timm, transformers...); user: only your own files")
    p.add_argument("--sort", choices=["bytes", "time"], default=None,
                   help="order rows by bytes per call, or by the measured time of their copies (needs --confirm); "
                        "default: time with --confirm, else bytes")
    add_rule_filter_args(p)
    p.add_argument("--fail-on", choices=["error", "warning", "info", "never"], default=None,
                   help="exit 1 when a finding is at or above this severity "
                        "(default: fail-on from the config file, else warning)")
    add_config_args(p)
    add_device_arg(p)
    p.add_argument("--confirm", action="store_true",
                   help="also run the model under torch.profiler and mark each copy finding confirmed, "
                        "refuted or not-run; list runtime copies no finding explains")
    p.add_argument("--train", action="store_true",
                   help="confirm against a training step (forward, then backward of a scalar made from the "
                        "outputs), as `fxlint audit --train` and `fxlint report --train` do; implies --confirm")
    p.add_argument("--compiled", action="store_true",
                   help="also compile each captured graph with Inductor (nothing runs) and give each copy finding "
                        "the verdict of the compiled program: survives (with its bytes per call), fused or unknown")
    p.add_argument("--no-probe", action="store_true",
                   help="do not run ops to measure the kernel copies that depend on this CPU (oneDNN's "
                        "reorders); they are then reported as unknown (config key: probe = false)")
    p.add_argument("--baseline", metavar="FILE",
                   help="report only findings not recorded in FILE (known ones are counted in the summary)")
    p.add_argument("--write-baseline", action="store_true",
                   help="record the current findings in the --baseline FILE (default fxlint-baseline.json) "
                        "and exit 0")
    p.set_defaults(func=run)


def exit_code(reports: list[Any], fail_on: str | list[str]) -> int:
    levels = fail_on if isinstance(fail_on, list) else [fail_on] * len(reports)
    failed = any(level != "never" and r.at_or_above(level) for r, level in zip(reports, levels))
    return EXIT_FINDINGS if failed else EXIT_CLEAN


def run(args: argparse.Namespace) -> int:
    from ...project import baseline as bl

    select, ignore, extend = check_explicit_codes(args)  # bad codes: a usage error before anything loads
    render_options(args)  # --sort time without --confirm: a usage error before anything runs
    from ...util.outputs import check_writable

    check_writable(args.output)  # a bad -o path fails now, not after the model ran
    if args.write_baseline:
        check_writable(args.baseline or bl.DEFAULT_PATH)
    known = None
    if args.baseline and not args.write_baseline:
        known = bl.Baseline.load(args.baseline)  # a missing or broken baseline fails before the model runs
    targets: list[tuple[str, str | None]]
    if args.zoo is not None:
        targets = [(f"{path}:make", path) for path in zoo_models(args.zoo)]
    elif args.target:
        targets = [(args.target, None)]
    else:
        raise TargetError("lint needs a TARGET (or --zoo); see `fxlint lint --help`")

    reports, names, fail_on = [], [], []
    for i, (target, path) in enumerate(targets, 1):
        name = os.path.splitext(os.path.basename(path))[0] if path else target
        device = args.device if args.device is not None or path is None else declared_device(path)
        if path:
            progress(i, len(targets), name + (f" (device {device})" if device else ""))
        # one model: a status line on a terminal while it takes long (the zoo has its [i/n] lines)
        with (activity(f"fxlint lint {target}", first="loading the model") if path is None and not debug()
              else contextlib.nullcontext()):
            report, settings = _lint_one(args, target, select, ignore, extend, device)
        reports.append(report)
        names.append(name)
        fail_on.append(settings.fail_on)

    if args.write_baseline:
        dest = args.baseline or bl.DEFAULT_PATH
        n = bl.write(dest, reports)
        print(f"fxlint: recorded {n} finding{'s' if n != 1 else ''} in {dest}; "
              f"lint with --baseline {dest} to see only new ones", file=sys.stderr)
        return EXIT_CLEAN
    if known is not None:
        stale = known.apply(reports)
        for r in reports:
            r.extras["baseline"] = str(known.path)
        if stale:
            print(f"fxlint: {len(stale)} baseline entr{'ies' if len(stale) != 1 else 'y'} in {known.path} "
                  "no longer match a finding (fixed?); --write-baseline refreshes the file", file=sys.stderr)

    if args.zoo is None:
        sim = reports[0].extras.get("device")
        if sim:
            host = f"; kept on the host: {', '.join(sim['host_parameters'])}" if sim["host_parameters"] else ""
            print(f"fxlint: linted for {sim['device']}, simulated on this machine (docs/device.md){host}",
                  file=sys.stderr)
        _emit_one(reports[0], args)
    else:
        _emit_zoo(reports, names, args)
    return exit_code(reports, fail_on)


def _lint_one(args: argparse.Namespace, target: str, select: Any, ignore: Any, extend: Any,
              device: str | None = None) -> tuple[Any, Any]:
    import fxlint

    from ...capture.target import load_target
    from ...project.config import resolve

    loaded = load_target(target)
    settings = resolve(target_file(target), config=config_arg(args), select=select, ignore=ignore,
                       extend_select=extend, fail_on=args.fail_on, probe=False if args.no_probe else None,
                       device=device)
    inputs = load_inputs(args.input, loaded.inputs, target)
    return fxlint.lint(loaded.obj, inputs, config=settings, confirm=args.confirm or args.train,
                       train=args.train, compiled=args.compiled), settings


def render_options(args: argparse.Namespace) -> dict[str, Any]:
    sort = args.sort or ("time" if args.confirm else "bytes")
    if sort == "time" and not args.confirm:
        from ...errors import ConfigError

        raise ConfigError("--sort time needs --confirm (the times come from the runtime audit)")
    return {"group": not args.no_group, "scope": args.scope, "sort": sort}


def _emit_one(report: Any, args: argparse.Namespace) -> None:
    from ...renderers import render

    emit(render(report, args.format, **render_options(args)), args.output)


def _device_note(report: Any) -> str:
    sim = report.extras.get("device")
    return f" (--device {sim['device']}, simulated)" if sim else ""


def _emit_zoo(reports: list[Any], names: list[str], args: argparse.Namespace) -> None:
    from ...renderers import render
    from ...renderers.json import report_dict
    from ...renderers.sarif import render_sarif
    from ...renderers.text import device_hint
    from ...tensor.info import human_bytes

    opts = render_options(args)
    if args.format == "text":
        chunks = [f"== {name}{_device_note(r)} ==\n{render(r, 'text', **opts, hint=False)}\n"
                  for name, r in zip(names, reports)]
        total = sum(len(r) for r in reports)
        copied = sum(r.total_bytes for r in reports)
        hint = device_hint(reports)  # once for the run, not once per model; the totals stay the last line
        if hint is not None:
            chunks.append(hint + "\n")
        chunks.append(f"{len(reports)} models, {total} findings, {human_bytes(copied)} copied per call in all.")
        emit("\n".join(chunks), args.output)
    elif args.format == "sarif":
        emit(render_sarif(reports, scope=args.scope), args.output)  # one SARIF log, one run, every model's results
    else:
        emit(json.dumps({"models": {n: report_dict(r, scope=args.scope) for n, r in zip(names, reports)}},
                        indent=2, default=str), args.output)

