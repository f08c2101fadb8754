"""Find the expression a finding is about in the user's file, with libcst (a concrete syntax tree:
the edit is made on the file's own text, so formatting and comments survive).

A finding knows its file and line (the FX node's stack trace); the rule's edit names what to look
for on that line (a call of ``.float()``, a ``torch.tensor([...])``); exactly one match, or no edit.
"""

from __future__ import annotations

import os
import re
import site
import sysconfig
from collections.abc import Callable
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, ParentNodeProvider, PositionProvider

from ..util.source import is_internal_file
from .model import NoEdit

__all__ = ["NoEdit", "SourceFile", "as_operand", "dotted", "method_call", "not_editable"]


def _library_dirs() -> list[str]:
    dirs = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    dirs.update(site.getsitepackages() if hasattr(site, "getsitepackages") else [])
    dirs.add(site.getusersitepackages())
    return [os.path.abspath(d) + os.sep for d in dirs if d]


def not_editable(path: str | None) -> str | None:
    """Why ``path`` is not the user's own file to edit (None: it is)."""
    if not path:
        return "the finding has no source file"
    if path.startswith("<"):
        return f"{path} is not a file"
    if is_internal_file(path):
        return f"{path} is part of torch or fxlint, not your code"
    p = os.path.abspath(path)
    if "site-packages" in p.split(os.sep) or "dist-packages" in p.split(os.sep) or any(
            p.startswith(d) for d in _library_dirs()):
        return f"{path} is an installed library (site-packages or the standard library), not your code"
    if not os.path.isfile(p):
        return f"{path} does not exist"
    return None


@dataclass
class SourceFile:
    path: str
    text: str
    module: cst.Module
    positions: dict[cst.CSTNode, CodeRange]
    line_starts: list[int]
    parents: dict[cst.CSTNode, cst.CSTNode]

    @classmethod
    def load(cls, path: str) -> SourceFile:
        why = not_editable(path)
        if why:
            raise NoEdit(why)
        try:
            with open(path, encoding="utf-8", newline="") as fh:
                text = fh.read()
            wrapper = MetadataWrapper(cst.parse_module(text), unsafe_skip_copy=True)
        except (OSError, UnicodeDecodeError, cst.ParserSyntaxError) as exc:
            raise NoEdit(f"{path} cannot be read as Python: {str(exc).splitlines()[0]}") from exc
        starts = [0]  # Python's own line ends (str.splitlines would also split at \f, \x1c, \u2028...)
        starts.extend(m.end() for m in re.finditer(r"\r\n|\r|\n", text))
        if starts[-1] != len(text):
            starts.append(len(text))
        return cls(path, text, wrapper.module, dict(wrapper.resolve(PositionProvider)), starts,
                   dict(wrapper.resolve(ParentNodeProvider)))

    def offset(self, line: int, column: int) -> int:
        return self.line_starts[line - 1] + column

    def span(self, node: cst.CSTNode) -> tuple[int, int]:
        r = self.positions[node]
        return self.offset(r.start.line, r.start.column), self.offset(r.end.line, r.end.column)

    def code(self, node: cst.CSTNode) -> str:
        start, end = self.span(node)
        return self.text[start:end]

    def line_text(self, line: int) -> str:
        return self.text[self.line_starts[line - 1]: self.line_starts[line]].strip() if line < len(
            self.line_starts) else ""

    def on_line(self, line: int, match: Callable[[cst.CSTNode], bool]) -> list[cst.CSTNode]:
        """The nodes ``match`` accepts that start on ``line``, else those whose range spans it."""
        hits = [n for n, r in self.positions.items() if r.start.line <= line <= r.end.line and match(n)]
        first = [n for n in hits if self.positions[n].start.line == line]
        return first or hits

    def unique(self, line: int, match: Callable[[cst.CSTNode], bool], what: str) -> cst.CSTNode:
        found = self.on_line(line, match)
        if not found:
            raise NoEdit(f"no {what} found on line {line} (`{self.line_text(line)}`)")
        if len(found) > 1:
            raise NoEdit(f"{len(found)} {what}s on line {line}: which one the finding is about is ambiguous")
        return found[0]


def dotted(node: cst.CSTNode) -> str | None:
    """``torch.nn.functional.pad`` for the attribute chain, None for anything else."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None


def method_call(node: cst.CSTNode, names: tuple[str, ...]) -> bool:
    """``<value>.name(...)`` for one of ``names``."""
    return (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
            and node.func.attr.value in names)


_ATOMS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float, cst.SimpleString,
          cst.List, cst.Tuple)


def as_operand(source: SourceFile, node: cst.BaseExpression) -> str:
    """The text of ``node``, parenthesised unless it is an atom (``a + b`` -> ``(a + b)``), so it can
    stand where a call on it stood."""
    text = source.code(node)
    return text if isinstance(node, _ATOMS) else f"({text})"
