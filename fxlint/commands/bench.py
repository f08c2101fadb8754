"""``fxlint bench --lint-speed``: what fxlint itself costs."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..errors import ConfigError
from ._common import EXIT_CLEAN, emit

ORDER = 40


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "bench", help="benchmark fxlint's own analysis cost (--lint-speed)",
        description="fxlint's own analysis time against Dynamo capture and Inductor compile time "
                    "(transformer stack 2..48 layers, synthetic graphs 1k..20k nodes).")
    p.add_argument("--lint-speed", action="store_true", help="run the analysis-cost benchmark")
    p.add_argument("--json", metavar="FILE", help="write every raw figure and the machine description to FILE")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if not args.lint_speed:
        raise ConfigError("bench needs --lint-speed")
    from ..benchmarks import lint_speed

    result = lint_speed.run()
    emit(lint_speed.render(result), None)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(result.to_dict(), fh, indent=2)
    return EXIT_CLEAN
