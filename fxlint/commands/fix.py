"""``fxlint fix``: show what the rewrites would change, as graph code before/after and source edits."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from typing import Any

from ..errors import TargetError
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
    p.add_argument("--format", choices=["text", "json"], default="text", help="output format (default text)")
    p.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE instead of stdout")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import fxlint
    from ..registry import select_rules
    from ..target import load_target

    select = split_codes(args.select)
    select_rules(select)  # bad codes are a usage error before anything loads
    if not args.target:
        raise TargetError("fix needs a TARGET; see `fxlint fix --help`")
    loaded = load_target(args.target)
    inputs = load_inputs(args.input, loaded.inputs, args.target)
    result = fxlint.rewrite(loaded.obj, inputs, select=select, verify=not args.no_verify)
    emit(render_json(result) if args.format == "json" else render_text(result), args.output)
    return EXIT_CLEAN


def _diff(before: str, after: str, indent: str = "    ") -> list[str]:
    return [f"{indent}- {ln}" for ln in before.splitlines()] + [f"{indent}+ {ln}" for ln in after.splitlines()]


def render_text(result: Any) -> str:
    from ..tensorinfo import human_bytes

    out: list[str] = []
    for a in result.applied:
        saved = f"  ({human_bytes(a.bytes_saved)} less copied per call)" if a.bytes_saved else ""
        out.append(f"{a.location}  {a.code} {a.name}: {a.description}{saved}")
        out.append("  graph:")
        out.extend(_diff(a.before, a.after))
        if a.source_edit is not None:
            out.append("  source (suggested edit):")
            out.extend(_diff(*a.source_edit))
        out.append("")
    for s in result.skipped:
        out.append(f"{s.location}  {s.code} not applied: {s.reason}")
    if result.skipped:
        out.append("")
    check = f"verified ({result.checked})" if result.verified else "not verified (--no-verify)"
    n, k = len(result.applied), len(result.skipped)
    out.append(f"{n} rewrite{'s' if n != 1 else ''} applied, {check}; {k} not applied. "
               "No file was changed: apply the source edits, or use the rewritten graph "
               "(fxlint.rewrite / torch.compile(..., options={'rewrite': True})).")
    return "\n".join(out)


def render_json(result: Any) -> str:
    return json.dumps({
        "applied": [asdict(a) for a in result.applied],
        "skipped": [asdict(s) for s in result.skipped],
        "verified": result.verified,
        "checked": result.checked,
        "bytes_saved_per_call": result.bytes_saved,
    }, indent=2, default=str)
