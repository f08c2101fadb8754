"""``fxlint rules`` and ``fxlint explain CODE``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ._common import EXIT_CLEAN

ORDER = 90


def add_parser(sub: Any) -> None:
    p = sub.add_parser("rules", help="list the rules")
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.set_defaults(func=run_rules)
    e = sub.add_parser("explain", help="print a rule's documentation")
    e.add_argument("code", metavar="CODE", help="a rule code (FXL401) or name (index-as-slice)")
    e.set_defaults(func=run_explain)


def run_rules(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    from ...registry import all_rules

    rules = all_rules()
    if args.format == "json":
        print(json.dumps([{"code": r.code, "name": r.name, "severity": str(r.severity), "summary": r.summary,
                           "fix": {"availability": r.fix.availability, "rewrite": r.fix.rewrite,
                                   "applicability": r.fix.applicability}}
                          for r in rules], indent=2))
    else:
        print(tabulate([[r.code, r.name, str(r.severity), r.fix.summary, r.summary] for r in rules],
                       headers=["Code", "Name", "Default", "Fix", "Summary"], tablefmt="simple",
                       maxcolwidths=[None, None, None, None, 72]))
    return EXIT_CLEAN


def explain_text(code: str) -> str:
    """The rule's page, exactly as ``fxlint docs`` writes it to docs/rules/CODE.md."""
    from ...registry import get_rule
    from ...renderers.ruledoc import render_rule

    return render_rule(get_rule(code))


def run_explain(args: argparse.Namespace) -> int:
    sys.stdout.write(explain_text(args.code))
    return EXIT_CLEAN
