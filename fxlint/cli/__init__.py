"""The command line: the parser and error handling (``app``), one module per subcommand (``commands``), the
CLI reference page (``clidoc``). ``fxlint.cli.main`` is the console script's entry point."""

from .app import main

__all__ = ["main"]
