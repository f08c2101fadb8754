"""``fxlint fix``: show what the rewrites would change, as graph code before/after and source edits."""

from __future__ import annotations

import argparse
from typing import Any

from ...errors import TargetError
from ._common import EXIT_CLEAN, TARGET_HELP, add_target_args, emit, load_inputs, split_codes

ORDER = 15


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "fix", help="show the safe rewrites: graph code before/after and suggested source edits",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=TARGET_HELP,
        description="Capture TARGET as one graph, apply every safe rewrite (fxlint.rewrite), verify "
                    "each against the original on the example inputs, and print what changed: the "
                    "graph code before and after and, where the source line is a simple expression, "
                    "the edit to make there. No file is written. Sites that cannot be rewritten are "
                    "listed with the reason.")
    add_target_args(p)
    p.add_argument("--select", action="append", metavar="CODES",
                   help="only the rewrites of these rule codes or prefixes, comma-separated")
    p.add_argument("--no-verify", action="store_true",
                   help="do not run original and rewritten graphs to compare outputs and gradients")
    p.add_argument("--safe-only", action="store_true",
                   help="only the rewrites their rule declares safe (fxlint rules shows which); by default the "
                        "unsafe ones apply too: equal values, but a result that becomes a view or changes layout")
    p.add_argument("--no-grad", action="store_true",
                   help="capture and rewrite under torch.no_grad() (inference: what a model in eval() is run "
                        "with); rewrites that gradients would make slower (FXL204 on CPU) then apply")
    p.add_argument("--format", choices=["text", "json"], default="text", help="output format (default text)")
    p.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE instead of stdout")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import fxlint

    from ...capture.target import load_target
    from ...registry import select_rules
    from ...renderers.rewrites import render_fix_json, render_fix_text

    select = split_codes(args.select)
    select_rules(select)  # bad codes are a usage error before anything loads
    if not args.target:
        raise TargetError("fix needs a TARGET; see `fxlint fix --help`")
    from ...util.outputs import check_writable

    check_writable(args.output)
    loaded = load_target(args.target)
    inputs = load_inputs(args.input, loaded.inputs, args.target)
    import contextlib

    import torch

    with torch.no_grad() if args.no_grad else contextlib.nullcontext():
        result = fxlint.rewrite(loaded.obj, inputs, select=select, verify=not args.no_verify,
                                safe_only=args.safe_only)
    emit(render_fix_json(result) if args.format == "json" else render_fix_text(result), args.output)
    return EXIT_CLEAN
