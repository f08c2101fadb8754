"""Report renderers: text (a table), JSON, SARIF 2.1.0."""

from __future__ import annotations

from typing import Callable

from ..errors import ConfigError
from ..findings import Report


def render(report: Report, fmt: str) -> str:
    """Render ``report`` as ``text``, ``json`` or ``sarif``."""
    from .json import render_json
    from .sarif import render_sarif
    from .text import render_text

    table: dict[str, Callable[[Report], str]] = {"text": render_text, "json": render_json, "sarif": render_sarif}
    if fmt not in table:
        raise ConfigError(f"unknown format {fmt!r}; expected one of {', '.join(table)}")
    return table[fmt](report)
