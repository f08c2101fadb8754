"""The registry of source fixes: one function per rule code, ``fix(finding, source) -> Proposal``.

The function finds the finding's expression on its line of ``source`` (``fxlint.srcfix.locate``),
checks what it needs of the finding's ``details`` and raises ``NoEdit(reason)`` rather than guess.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import libcst as cst

from ..findings import Finding
from .locate import SourceFile


@dataclass(frozen=True)
class Proposal:
    node: cst.CSTNode  # what is replaced
    after: str  # its replacement text
    safe: bool
    why: str  # what changes for a caller (unsafe) or why nothing does (safe)
    grad_changes: bool = False  # a gradient now flows where none did: verification compares values only


FixFn = Callable[[Finding, SourceFile], Proposal]

FIXES: dict[str, FixFn] = {}

#: rules with a mechanical fix this package does not make, and why (``fxlint fix`` says so per finding)
NOT_MADE: dict[str, str] = {}


def source_fix(code: str) -> Callable[[FixFn], FixFn]:
    def deco(fn: FixFn) -> FixFn:
        FIXES[code] = fn
        return fn

    return deco
