"""The ``fxlint`` command line: parser scaffolding and error handling.

Subcommands live in ``fxlint/cli/commands/``, one module each. Exit codes: 0
clean, 1 findings at or above ``--fail-on``, 2 usage or load errors (one line
on stderr; ``--debug`` shows the traceback).
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Sequence
from typing import NoReturn

from .._version import __version__
from ..errors import FxlintError, closest
from .commands import command_modules
from .commands._common import EXIT_ERROR, TARGET_HELP


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # usage errors: exit 2 with one line (no usage block above it)
        self.exit(EXIT_ERROR, f"fxlint: error: {_did_you_mean(message)} (see `{self.prog} --help`)\n")


def _did_you_mean(message: str) -> str:
    """argparse's "invalid choice: 'warnings' (choose from ...)" with the closest choice named."""
    import re

    m = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
    if m is None:
        return message
    choices = re.findall(r"'([^']*)'", m.group(2)) or [c.strip() for c in m.group(2).split(",")]
    close = closest(m.group(1), choices, cutoff=0.5)
    return message + (f"; did you mean {close!r}?" if close else "")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="fxlint", description="Find implicit copies, layout copies, gradient breaks and "
                "advanced-index copies in PyTorch programs, on the graphs torch.compile captures.",
                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=TARGET_HELP)
    p.add_argument("--version", action="version", version=f"fxlint {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for mod in command_modules():
        mod.add_parser(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help(sys.stderr)
        return EXIT_ERROR
    from ..util.quiet import debug as quiet_debug
    from ..util.quiet import set_debug

    debug = getattr(args, "debug", False)
    was = quiet_debug()
    set_debug(debug or was)  # --debug: torch's own logs and warnings are shown again
    try:
        return int(args.func(args))
    except FxlintError as exc:
        if debug:
            traceback.print_exc()
            detail = getattr(exc, "detail", None)
            if detail:
                print(detail, file=sys.stderr)
        text = str(exc)
        if not debug and "\n" in text:  # one line; the rest is behind --debug
            text = text.splitlines()[0] + " (--debug shows the details)"
        print(f"fxlint: error: {text}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("fxlint: interrupted", file=sys.stderr)
        return EXIT_ERROR
    except Exception as exc:  # noqa: BLE001 - one line, not a traceback, unless --debug
        if debug:
            traceback.print_exc()
        msg = (str(exc).strip().splitlines() or [""])[0]
        print(f"fxlint: internal error: {type(exc).__name__}: {msg} (run with --debug for the traceback)",
              file=sys.stderr)
        return EXIT_ERROR
    finally:
        set_debug(was)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
