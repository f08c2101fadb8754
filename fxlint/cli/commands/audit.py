"""``fxlint audit``: run the model under torch.profiler and list every copy it makes."""

from __future__ import annotations

import argparse
from typing import Any

from ...errors import TargetError
from ._common import EXIT_CLEAN, TARGET_HELP, add_target_args, emit, load_inputs

ORDER = 20


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "audit", help="measure every copy the model really makes (torch.profiler)",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=TARGET_HELP,
        description="Run TARGET eagerly under torch.profiler (one warm-up call, one profiled call) and "
                    "list every data copy, including copies kernels make internally, per source line, "
                    "most bytes first. Copies every program pays (a Linear's bias copy, an embedding "
                    "lookup) are shown as unavoidable.")
    add_target_args(p)
    p.add_argument("--train", action="store_true",
                   help="audit a training step: forward, then backward of a scalar made from the outputs")
    p.add_argument("--compiled", action="store_true",
                   help="measure the program torch.compile builds instead (Inductor, CPU): the copies its kernels "
                        "and the ATen ops it calls make, per source line")
    p.add_argument("--format", choices=["text", "json"], default="text", help="output format (default text)")
    p.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE instead of stdout")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import fxlint

    from ...capture.target import load_target
    from ...renderers.audit import render_audit_json, render_audit_text
    from ...util.outputs import check_writable

    if not args.target:
        raise TargetError("audit needs a TARGET; see `fxlint audit --help`")
    check_writable(args.output)
    loaded = load_target(args.target)
    inputs = load_inputs(args.input, loaded.inputs, args.target)
    if args.compiled:
        from ...renderers.audit import render_compiled_audit_text

        compiled = fxlint.audit(loaded.obj, inputs, train=args.train, compiled=True)
        emit(render_audit_json(compiled) if args.format == "json" else render_compiled_audit_text(compiled),
             args.output)
        return EXIT_CLEAN
    report = fxlint.audit(loaded.obj, inputs, train=args.train)
    emit(render_audit_json(report) if args.format == "json" else render_audit_text(report), args.output)
    return EXIT_CLEAN
