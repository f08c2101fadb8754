"""The data of a source fix: one edit of the user's file, a site left alone and why, a plan of both, and the
exception a source fix raises when it makes no edit."""

from __future__ import annotations

from dataclasses import dataclass, field


class NoEdit(Exception):
    """No source edit for this finding: the reason, in the user's terms."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class SourceEdit:
    """Replace ``before`` (at ``line``:``column`` .. ``end_line``:``end_column`` of ``file``) with ``after``.

    Lines are 1-based and columns 1-based, end exclusive (ruff's and SARIF's convention); ``start``/``end``
    are the character offsets in the file's text the edit was computed on. ``safe``: nothing a caller can
    observe changes; ``why`` says what does change (or why nothing does), in the user's terms.
    ``grad_changes``: the edit makes a gradient flow where none did (FXL109), so verification compares
    values only."""

    code: str
    file: str
    line: int
    column: int
    end_line: int
    end_column: int
    start: int
    end: int
    before: str
    after: str
    safe: bool
    why: str
    description: str
    grad_changes: bool = False

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


@dataclass(frozen=True)
class SkippedEdit:
    """A finding that gets no source edit, and the reason."""

    code: str
    file: str | None
    line: int | None
    reason: str

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}" if self.file else "<graph>"


@dataclass
class FixPlan:
    """The edits to make (``edits``) and the findings left alone (``skipped``); ``texts`` holds each
    edited file's text as the edits were computed on it (``fxlint.srcfix.apply`` checks it is unchanged)."""

    edits: list[SourceEdit] = field(default_factory=list)
    skipped: list[SkippedEdit] = field(default_factory=list)
    texts: dict[str, str] = field(default_factory=dict)

    def files(self) -> list[str]:
        return sorted({e.file for e in self.edits})

    def edited_text(self, file: str) -> str:
        """``file``'s text with its edits made (they never overlap: ``plan`` drops an overlapping one)."""
        text = self.texts[file]
        for e in sorted((e for e in self.edits if e.file == file), key=lambda e: e.start, reverse=True):
            text = text[: e.start] + e.after + text[e.end :]
        return text
