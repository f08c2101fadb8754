"""CLI subcommands, one module each. A module defines ``ORDER`` (its place in
``--help``) and ``add_parser(subparsers)``, which registers the subcommand and
sets ``func(args) -> exit code``. Every module here is picked up."""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def command_modules() -> list[ModuleType]:
    mods = [importlib.import_module(f"{__name__}.{m.name}") for m in pkgutil.iter_modules(__path__)
            if not m.name.startswith("_")]
    return sorted(mods, key=lambda m: (getattr(m, "ORDER", 100), m.__name__))
