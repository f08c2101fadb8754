"""Suggested edits of the user's source line, for ``fxlint fix``.

Only where the line parses on its own and the construct to change appears
exactly once on it; otherwise no edit is suggested (the graph before/after is
still shown). The edit is text for the user to apply: fxlint never writes to
source files.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Line:
    """One stripped source line and its AST."""

    code: str
    tree: ast.AST
    shift: int  # characters added in front of ``code`` to make it parse

    def text(self, node: ast.AST) -> str:
        raw = self.code.encode()
        return raw[node.col_offset - self.shift:node.end_col_offset - self.shift].decode()  # type: ignore[operator]

    def replaced(self, node: ast.AST, text: str) -> str:
        raw = self.code.encode()
        start, end = node.col_offset - self.shift, node.end_col_offset - self.shift  # type: ignore[operator]
        return (raw[:start] + text.encode() + raw[end:]).decode()

    def unique(self, match: Callable[[ast.AST], bool]) -> ast.AST | None:
        """The one node that matches, or None when there are none or several."""
        found = [n for n in ast.walk(self.tree) if match(n)]
        return found[0] if len(found) == 1 else None


def parse_line(code: str | None) -> Line | None:
    """``code`` parsed as a statement, or as an expression inside a call or a literal
    (``("label", lambda x: x[[1]]),``); None when it is not complete on its own."""
    if not code:
        return None
    for prefix, text in (("", code), ("(", f"({code.rstrip(',')})")):
        try:
            return Line(code, ast.parse(text), len(prefix))
        except SyntaxError:
            continue
    return None
