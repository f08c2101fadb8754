"""``fxlint config [PATH]``: which configuration file applies at PATH, and the effective settings."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ._common import EXIT_CLEAN, add_config_args, config_arg

ORDER = 80


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "config", help="show the configuration that applies to a file or folder",
        description="Print the [tool.fxlint] file found by walking up from PATH (default: the working "
                    "directory) and the settings it gives: the rules that run, severity overrides, "
                    "per-file ignores, fail-on, inner backend, rewrite.")
    p.add_argument("path", nargs="?", metavar="PATH", help="a model file or a folder")
    add_config_args(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ...project.config import resolve

    settings = resolve(args.path, config=config_arg(args))
    print(json.dumps(settings.describe(), indent=2))
    return EXIT_CLEAN
