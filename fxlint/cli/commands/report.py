"""``fxlint report``: lint with the runtime audit and write one self-contained HTML page."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ...errors import TargetError
from ._common import (
    EXIT_CLEAN,
    TARGET_HELP,
    add_config_args,
    add_device_arg,
    add_rule_filter_args,
    add_target_args,
    check_explicit_codes,
    config_arg,
    load_inputs,
    target_file,
)

ORDER = 12
DEFAULT_OUTPUT = "fxlint-report.html"


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "report", help="write an HTML report: findings on the source, ranked by cost, with runtime times",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=TARGET_HELP,
        description="Lint TARGET, run it under torch.profiler (the runtime audit) and write one self-contained "
                    "HTML file: the summary with charts per rule and per line (bytes and measured time), each "
                    "file's source with the lines that copy highlighted by cost and the findings inline with "
                    "their fix, the runtime copies no finding explains, the graph breaks, and the rewrites "
                    "`fxlint fix` would apply. Open it in any browser; it loads nothing from the network.")
    add_target_args(p)
    p.add_argument("-o", "--output", metavar="FILE", default=DEFAULT_OUTPUT,
                   help=f"where to write the page (default {DEFAULT_OUTPUT})")
    p.add_argument("--train", action="store_true",
                   help="audit a training step (forward and backward), so backward copies are timed too")
    p.add_argument("--no-rewrites", action="store_true", help="leave out what `fxlint fix` would rewrite")
    p.add_argument("--compiled", action="store_true",
                   help="also compile each captured graph with Inductor and show, beside eager's bytes, what the "
                        "compiled program does with each copy (survives, fused) and the copies it makes itself "
                        "(FXL7xx)")
    add_rule_filter_args(p)
    add_config_args(p)
    add_device_arg(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import fxlint

    from ...capture.target import load_target
    from ...project.config import resolve
    from ...util.outputs import check_writable

    select, ignore, extend = check_explicit_codes(args)
    if not args.target:
        raise TargetError("report needs a TARGET; see `fxlint report --help`")
    check_writable(args.output)
    loaded = load_target(args.target)
    inputs = load_inputs(args.input, loaded.inputs, args.target)
    settings = resolve(target_file(args.target), config=config_arg(args), select=select, ignore=ignore,
                       extend_select=extend, device=args.device)
    fxlint.report(loaded.obj, inputs, args.output, train=args.train, config=settings,
                  rewrites=not args.no_rewrites, title=f"fxlint report: {args.target}", compiled=args.compiled)
    print(f"fxlint: wrote {args.output}", file=sys.stderr)
    return EXIT_CLEAN
