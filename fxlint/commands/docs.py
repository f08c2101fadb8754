"""``fxlint docs``: write (or ``--check``) ``docs/rules/FXLnnn.md`` for every registered rule."""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path
from typing import Any

from ._common import EXIT_CLEAN, EXIT_FINDINGS

ORDER = 95
DEFAULT_DIR = os.path.join("docs", "rules")
_PAGE_RE = re.compile(r"^FXL\d{3}\.md$")


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "docs", help="generate the rule documentation pages",
        description="Render docs/rules/FXLnnn.md (and an index README.md) from the docstrings of every "
                    "registered rule. With --check, write nothing and exit 1 when the pages are out of date.")
    p.add_argument("--output", metavar="DIR", default=DEFAULT_DIR, help=f"where the pages go (default {DEFAULT_DIR})")
    p.add_argument("--check", action="store_true", help="only compare; exit 1 and list what differs")
    p.set_defaults(func=run)


def differences(folder: str | os.PathLike[str]) -> list[str]:
    """What differs between ``folder`` and freshly rendered pages: '<file> missing|differs|stale'."""
    from ..registry import all_rules
    from ..ruledoc import pages

    want = pages(all_rules())
    d = Path(folder)
    out = []
    for name, text in want.items():
        path = d / name
        if not path.is_file():
            out.append(f"{name} missing")
        elif path.read_text(encoding="utf-8") != text:
            out.append(f"{name} differs")
    if d.is_dir():
        out += [f"{p.name} stale (no such rule)" for p in sorted(d.iterdir())
                if _PAGE_RE.match(p.name) and p.name not in want]
    return out


def write(folder: str | os.PathLike[str]) -> int:
    """Write every page into ``folder``, removing pages of rules that no longer exist."""
    from ..registry import all_rules
    from ..ruledoc import pages

    from ..errors import OutputError
    from ..outputs import write_text

    want = pages(all_rules())
    d = Path(folder)
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot write {folder}: {exc.strerror or exc}") from exc
    for name, text in want.items():
        write_text(d / name, text)
    for p in d.iterdir():
        if _PAGE_RE.match(p.name) and p.name not in want:
            p.unlink()
    return len(want) - 1


def run(args: argparse.Namespace) -> int:
    if args.check:
        diff = differences(args.output)
        if diff:
            cmd = "fxlint docs" + (f" --output {args.output}" if args.output != DEFAULT_DIR else "")
            print(f"fxlint: {args.output} is out of date ({'; '.join(diff)}); run `{cmd}` to regenerate it",
                  file=sys.stderr)
            return EXIT_FINDINGS
        print(f"fxlint: {args.output} is up to date", file=sys.stderr)
        return EXIT_CLEAN
    n = write(args.output)
    print(f"fxlint: wrote {n} rule page{'s' if n != 1 else ''} and the index to {args.output}", file=sys.stderr)
    return EXIT_CLEAN
