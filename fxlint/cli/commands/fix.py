"""``fxlint fix``: show what the rewrites would change, as graph code before/after and source edits;
with ``--diff`` the source edits as a unified diff of the user's files, with ``--apply`` written to them
(then re-linted and re-run against the original, and put back on a difference)."""

from __future__ import annotations

import argparse
from typing import Any

from ...errors import TargetError
from ._common import EXIT_CLEAN, TARGET_HELP, add_target_args, emit, load_inputs, split_codes

ORDER = 15


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "fix", help="show the safe rewrites (graph code before/after, suggested source edits); --diff/--apply "
                    "the source edits of your files",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=TARGET_HELP,
        description="Capture TARGET as one graph, apply every safe rewrite (fxlint.rewrite), verify "
                    "each against the original on the example inputs, and print what changed: the "
                    "graph code before and after and, where the source line is a simple expression, "
                    "the edit to make there; no file is written. Sites that cannot be rewritten are "
                    "listed with the reason.\n\n"
                    "With --diff, lint TARGET and print the source edits of the findings whose fix is "
                    "mechanical as a unified diff of your files (nothing is written; exit 1 when there is "
                    "an edit to make); with --apply, write them, then lint and run the edited model "
                    "again and compare its outputs (and gradients) with the original's: a difference or "
                    "an error puts every file back. Only safe edits unless --unsafe-fixes. Files outside "
                    "your code (site-packages, torch) are never edited.")
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
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--diff", action="store_true",
                      help="print the source edits as a unified diff of your files; change nothing")
    mode.add_argument("--apply", action="store_true",
                      help="write the source edits to your files, then re-lint and re-run the model; a "
                           "difference in the outputs (or an error) restores the files")
    p.add_argument("--unsafe-fixes", action="store_true",
                   help="with --diff/--apply, also the edits marked unsafe (equal values, but something a caller "
                        "can observe changes: a view instead of a copy, a gradient that now flows)")
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
    import contextlib

    import torch

    if args.unsafe_fixes and not (args.diff or args.apply):
        raise TargetError("--unsafe-fixes needs --diff or --apply")
    if args.diff or args.apply:
        torch.manual_seed(0)  # --apply imports the target again after the edit: the same weights
    loaded = load_target(args.target)
    inputs = load_inputs(args.input, loaded.inputs, args.target)
    if args.diff or args.apply:
        with torch.no_grad() if args.no_grad else contextlib.nullcontext():
            return _source_fix(args, loaded.obj, inputs, select)

    with torch.no_grad() if args.no_grad else contextlib.nullcontext():
        result = fxlint.rewrite(loaded.obj, inputs, select=select, verify=not args.no_verify,
                                safe_only=args.safe_only)
    emit(render_fix_json(result) if args.format == "json" else render_fix_text(result), args.output)
    return EXIT_CLEAN


def _source_fix(args: argparse.Namespace, obj: Any, inputs: Any, select: list[str] | None) -> int:
    import sys

    import fxlint

    from ... import srcfix
    from ...renderers.sourcefix import plan_lines, plan_summary, render_plan_json, unified_diff
    from ._apply_fixes import apply_verified
    from ._common import EXIT_FINDINGS

    report = fxlint.lint(obj, inputs, select=select)
    plan = srcfix.plan(report.findings, unsafe=args.unsafe_fixes)
    if args.diff:
        if args.format == "json":
            emit(render_plan_json(plan), args.output)
        else:
            if plan.edits:
                emit(unified_diff(plan).rstrip("\n"), args.output)
            print("\n".join([*plan_lines(plan), plan_summary(plan, "to make")]), file=sys.stderr)
        return EXIT_FINDINGS if plan.edits else EXIT_CLEAN
    if not plan.edits:
        lines = [*plan_lines(plan), plan_summary(plan, "made")]
        emit(render_plan_json(plan, applied=False) if args.format == "json" else "\n".join(lines), args.output)
        return EXIT_CLEAN
    outcome = apply_verified(args.target, obj, inputs, plan, report.findings, select=select,
                             verify=not args.no_verify)
    lines = plan_lines(plan)
    if outcome.kept:
        lines.append(plan_summary(plan, "made"))
        lines.append(f"verified ({outcome.checked}): the edited model computes what the original did"
                     if outcome.verified else "not verified (--no-verify)")
        if outcome.after is not None:
            lines.append(f"re-lint: {sum(outcome.after.values())} finding(s), was {sum(outcome.before.values())}")
    else:
        lines.append(f"the edits were reverted, every file is as it was: {outcome.reverted}")
    if args.format == "json":
        emit(render_plan_json(plan, applied=outcome.kept, reverted=outcome.reverted,
                              checked=outcome.checked, findings_before=dict(outcome.before),
                              findings_after=dict(outcome.after) if outcome.after is not None else None),
             args.output)
    else:
        emit("\n".join(lines), args.output)
    return EXIT_CLEAN if outcome.kept else EXIT_FINDINGS
