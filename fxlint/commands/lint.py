"""``fxlint lint``: capture a model, run the rules, print the findings."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from ..errors import TargetError
from ._common import (
    EXIT_CLEAN,
    EXIT_FINDINGS,
    TARGET_HELP,
    add_rule_filter_args,
    add_target_args,
    emit,
    load_inputs,
    progress,
    split_codes,
    zoo_models,
)

ORDER = 10


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "lint", help="lint a model and print the findings",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=TARGET_HELP,
        description="Capture TARGET with Dynamo (or read its FX/exported graph), run the rules, "
                    "and print the findings, most expensive first.")
    add_target_args(p, zoo=True)
    p.add_argument("--format", choices=["text", "json", "sarif"], default="text", help="output format (default text)")
    p.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE instead of stdout")
    add_rule_filter_args(p)
    p.add_argument("--fail-on", choices=["error", "warning", "info", "never"], default="warning",
                   help="exit 1 when a finding is at or above this severity (default warning)")
    p.add_argument("--confirm", action="store_true",
                   help="also run the model under torch.profiler and mark each copy finding confirmed, "
                        "refuted or not-run; list runtime copies no finding explains")
    p.set_defaults(func=run)


def exit_code(reports: list[Any], fail_on: str) -> int:
    if fail_on == "never":
        return EXIT_CLEAN
    return EXIT_FINDINGS if any(r.at_or_above(fail_on) for r in reports) else EXIT_CLEAN


def run(args: argparse.Namespace) -> int:
    import fxlint
    from ..registry import select_rules
    from ..renderers import render
    from ..target import load_target

    select, ignore = split_codes(args.select), split_codes(args.ignore)
    select_rules(select, ignore)  # bad codes are a usage error before anything loads
    if args.zoo is not None:
        return _zoo(args, select, ignore)
    if not args.target:
        raise TargetError("lint needs a TARGET (or --zoo); see `fxlint lint --help`")
    loaded = load_target(args.target)
    inputs = load_inputs(args.input, loaded.inputs, args.target)
    report = fxlint.lint(loaded.obj, inputs, select=select, ignore=ignore, confirm=args.confirm)
    emit(render(report, args.format), args.output)
    return exit_code([report], args.fail_on)


def _zoo(args: argparse.Namespace, select: Any, ignore: Any) -> int:
    import fxlint
    from ..renderers import render
    from ..renderers.json import report_dict
    from ..target import load_target
    from ..tensorinfo import human_bytes

    files = zoo_models(args.zoo)
    reports = []
    chunks: list[str] = []
    as_json: dict[str, Any] = {}
    for i, path in enumerate(files, 1):
        name = os.path.splitext(os.path.basename(path))[0]
        progress(i, len(files), name)
        loaded = load_target(f"{path}:make")
        report = fxlint.lint(loaded.obj, load_inputs(args.input, loaded.inputs, path), select=select,
                             ignore=ignore, confirm=args.confirm)
        reports.append(report)
        if args.format == "text":
            chunks.append(f"== {name} ==\n{render(report, 'text')}\n")
        else:
            as_json[name] = report_dict(report) if args.format == "json" else json.loads(render(report, "sarif"))
    if args.format == "text":
        total = sum(len(r) for r in reports)
        copied = sum(r.total_bytes for r in reports)
        chunks.append(f"{len(files)} models, {total} findings, {human_bytes(copied)} copied per call in all.")
        emit("\n".join(chunks), args.output)
    else:
        emit(json.dumps({"models": as_json}, indent=2, default=str), args.output)
    return exit_code(reports, args.fail_on)
