"""``fxlint schema``: print the JSON schema of ``fxlint lint --format json``."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ._common import EXIT_CLEAN, emit

ORDER = 96


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "schema", help="print the JSON schema of the JSON report",
        description="Print the JSON schema (draft 2020-12) that `fxlint lint --format json` output follows: "
                    "every finding field, and per rule the fields of its details. Generated from the code.")
    p.add_argument("--zoo", action="store_true", help="the schema of `fxlint lint --zoo --format json` instead")
    p.add_argument("-o", "--output", metavar="FILE", help="write it to FILE instead of stdout")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ...reporting.schema import report_schema, zoo_schema
    from ...util.outputs import check_writable

    check_writable(args.output)
    schema = zoo_schema() if args.zoo else report_schema()
    emit(json.dumps(schema, indent=2), args.output)
    return EXIT_CLEAN
