"""``fxlint bench``: what the fixes buy, measured; and what fxlint itself costs."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from ...errors import ConfigError, TargetError
from ._common import EXIT_CLEAN, EXIT_FINDINGS, TARGET_HELP, add_target_args, emit, load_inputs, zoo_models

ORDER = 40


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "bench", help="benchmark rewritten vs original (eager, Inductor; inference, training step)",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=TARGET_HELP,
        description="Measure, in one run, the original model and fxlint's rewrite of it, eager and compiled "
                    "with Inductor, for inference and a training step: median time and spread "
                    "(torch.utils.benchmark), speed ratio against the original of the same backend, bytes "
                    "copied per call (runtime audit), peak memory, compile time, and the largest output and "
                    "gradient difference against the original. Exit 1 when a variant's results differ.")
    add_target_args(p, zoo=True)
    p.add_argument("--mode", choices=["infer", "train", "both"], default="both",
                   help="inference, training step, or both (default both)")
    p.add_argument("--backends", default="eager,inductor", metavar="LIST",
                   help="comma-separated subset of eager,inductor (default both)")
    p.add_argument("--min-run-time", type=float, default=1.0, metavar="S",
                   help="seconds of timing per variant for blocked_autorange (default 1.0)")
    p.add_argument("--json", metavar="FILE", help="write every raw figure and the machine description to FILE")
    p.add_argument("--plot", metavar="FILE.png",
                   help="write a chart of speed ratios and copied bytes (not with --lint-speed)")
    p.add_argument("--lint-speed", action="store_true",
                   help="instead: fxlint's own analysis time against Dynamo capture and Inductor compile "
                        "(transformer stack 2..48 layers, synthetic graphs 1k..20k nodes)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ...util.outputs import check_writable, require, write_text

    # everything that can fail on the user's input fails before minutes of benchmarking
    check_writable(args.json)
    if args.lint_speed and args.plot:
        raise ConfigError("--plot charts the rewrite benchmark; --lint-speed has no chart (use --json for its figures)")
    if args.plot:
        if not args.plot.lower().endswith(".png"):
            raise ConfigError("--plot needs a .png file name")
        require("matplotlib", extra="bench", purpose="fxlint bench --plot")
        check_writable(args.plot)
    if args.lint_speed:
        from ...benchmarks import lint_speed

        speed = lint_speed.run()
        emit(lint_speed.render(speed), None)
        if args.json:
            write_text(args.json, json.dumps(speed.to_dict(), indent=2))
        return EXIT_CLEAN

    from ...benchmarks import harness
    from ...capture.target import load_target

    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    bad = [b for b in backends if b not in ("eager", "inductor")]
    if bad or not backends:
        raise ConfigError(f"--backends takes eager and/or inductor, not {','.join(bad) or 'nothing'}")
    modes = ["infer", "train"] if args.mode == "both" else [args.mode]
    models: list[tuple[str, Any, Any]] = []
    if args.zoo is not None:
        for path in zoo_models(args.zoo):
            loaded = load_target(f"{path}:make")
            models.append((os.path.splitext(os.path.basename(path))[0], loaded.obj,
                           load_inputs(args.input, loaded.inputs, path)))
    elif args.target:
        loaded = load_target(args.target)
        models.append((args.target, loaded.obj, load_inputs(args.input, loaded.inputs, args.target)))
    else:
        raise TargetError("bench needs a TARGET or --zoo; see `fxlint bench --help`")
    for name, obj, _ in models:
        if not hasattr(obj, "parameters"):
            raise TargetError(f"bench needs an nn.Module; {name} is a {type(obj).__name__}")
    result = harness.run(models, modes=modes, backends=backends, min_run_time=args.min_run_time)
    emit(harness.render_table(result), None)
    if args.json:
        write_text(args.json, json.dumps(result.to_dict(), indent=2, default=str))
    if args.plot:
        harness.plot(result, args.plot)
    return EXIT_FINDINGS if result.failures else EXIT_CLEAN
