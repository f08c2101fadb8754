"""Report renderers: text (a summary and a table grouped by source line), JSON, SARIF 2.1.0, HTML."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import ConfigError
from ..findings import Report

FORMATS = ("text", "json", "sarif")

# how Report, AuditReport and the rewrite results print (fxlint._present): each module registers its types
from . import audit, html, rewrites, text  # noqa: E402, F401


def render(report: Report, fmt: str, **options: Any) -> str:
    """Render ``report`` as ``text``, ``json`` or ``sarif``. ``options`` (text): ``group``, ``scope``,
    ``sort``, ``width``; (json, sarif): ``scope``."""
    from .json import render_json
    from .sarif import render_sarif
    from .text import render_text

    table: dict[str, Callable[..., str]] = {"text": render_text, "json": render_json, "sarif": render_sarif}
    if fmt not in table:
        raise ConfigError(f"unknown format {fmt!r}; expected one of {', '.join(table)}")
    if fmt != "text":
        options = {k: v for k, v in options.items() if k == "scope"}
    return table[fmt](report, **options)
