"""``fxlint docs``: write (or ``--check``) the generated pages of the documentation site:
``docs/rules/FXLnnn.md`` for every registered rule with the index ``docs/rules/README.md``, the
CLI reference ``docs/cli.md`` rendered from the argument parsers, and the JSON report's schema
``docs/report.schema.json`` (what ``fxlint schema`` prints)."""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path
from typing import Any

from ._common import EXIT_CLEAN, EXIT_FINDINGS

ORDER = 95
DEFAULT_DIR = "docs"
RULES = "rules"
CLI_PAGE = "cli.md"
SCHEMA = "report.schema.json"
_PAGE_RE = re.compile(r"^FXL\d{3}\.md$")


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "docs", help="generate the rule pages and the CLI reference of the documentation site",
        description="Render DIR/rules/FXLnnn.md (and the index DIR/rules/README.md) from the docstrings of every "
                    "registered rule, DIR/cli.md from fxlint's argument parsers and DIR/report.schema.json (the JSON "
                    "report's schema). With --check, write nothing "
                    "and exit 1 when a page is out of date. `make docs` then builds the site (MkDocs).")
    p.add_argument("--output", metavar="DIR", default=DEFAULT_DIR,
                   help=f"the documentation folder the pages go into (default {DEFAULT_DIR})")
    p.add_argument("--check", action="store_true", help="only compare; exit 1 and list what differs")
    p.set_defaults(func=run)


def generated_pages() -> dict[str, str]:
    """Path relative to the docs folder -> text, for every page ``fxlint docs`` writes."""
    import json

    from ...registry import all_rules
    from ...renderers.ruledoc import pages
    from ...reporting.schema import report_schema
    from ..app import build_parser
    from ..clidoc import render_cli

    out = {f"{RULES}/{name}": text for name, text in pages(all_rules()).items()}
    out[CLI_PAGE] = render_cli(build_parser())
    out[SCHEMA] = json.dumps(report_schema(), indent=2) + "\n"  # byte for byte what `fxlint schema -o` writes
    return out


def _stale(rules_dir: Path, want: dict[str, str]) -> list[Path]:
    """Rule pages in ``rules_dir`` whose rule no longer exists."""
    if not rules_dir.is_dir():
        return []
    return [p for p in sorted(rules_dir.iterdir()) if _PAGE_RE.match(p.name) and f"{RULES}/{p.name}" not in want]


def differences(folder: str | os.PathLike[str]) -> list[str]:
    """What differs between the docs ``folder`` and freshly rendered pages: '<path> missing|differs|stale'."""
    want = generated_pages()
    d = Path(folder)
    out = []
    for name, text in want.items():
        path = d / name
        if not path.is_file():
            out.append(f"{name} missing")
        elif path.read_text(encoding="utf-8") != text:
            out.append(f"{name} differs")
    out += [f"{RULES}/{p.name} stale (no such rule)" for p in _stale(d / RULES, want)]
    return out


def write(folder: str | os.PathLike[str]) -> int:
    """Write every page into ``folder``, removing pages of rules that no longer exist; return the
    number of rule pages."""
    from ...errors import OutputError
    from ...util.outputs import write_text

    want = generated_pages()
    d = Path(folder)
    try:
        (d / RULES).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot write {folder}: {exc.strerror or exc}") from exc
    for name, text in want.items():
        write_text(d / name, text)
    for p in _stale(d / RULES, want):
        p.unlink()
    return sum(1 for name in want if _PAGE_RE.match(name.rsplit("/", 1)[-1]))


def run(args: argparse.Namespace) -> int:
    if args.check:
        diff = differences(args.output)
        if diff:
            cmd = "fxlint docs" + (f" --output {args.output}" if args.output != DEFAULT_DIR else "")
            print(f"fxlint: {args.output} is out of date ({'; '.join(diff)}); run `{cmd}` to regenerate it",
                  file=sys.stderr)
            return EXIT_FINDINGS
        print(f"fxlint: the generated pages in {args.output} are up to date", file=sys.stderr)
        return EXIT_CLEAN
    n = write(args.output)
    print(f"fxlint: wrote {n} rule page{'s' if n != 1 else ''}, the rule index, {CLI_PAGE} and {SCHEMA} to "
          f"{args.output}", file=sys.stderr)
    return EXIT_CLEAN
