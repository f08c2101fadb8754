"""Write a ``FixPlan``'s edits to disk, and put the files back.

Each file is written atomically (a temporary file in its folder, then ``os.replace``), after its
original is kept beside it as ``<file>.fxlint-orig`` (removed once ``commit`` is called, used by
``restore``); a file whose text changed since the plan was made is not touched.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field

from ..errors import FxlintError
from .model import FixPlan

BACKUP_SUFFIX = ".fxlint-orig"


def _write_atomic(path: str, text: str) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".fxlint-", suffix=".py", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        try:
            os.chmod(tmp, os.stat(path).st_mode & 0o7777)
        except OSError:
            pass
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _read(path: str) -> str:
    with open(path, encoding="utf-8", newline="") as fh:
        return fh.read()


@dataclass
class Written:
    """The files ``write`` changed and their original texts (kept until ``commit`` or ``restore``)."""

    originals: dict[str, str] = field(default_factory=dict)

    def restore(self) -> None:
        """Put every written file back as it was."""
        for path, text in self.originals.items():
            _write_atomic(path, text)
            _remove(path + BACKUP_SUFFIX)

    def commit(self) -> None:
        """Keep the edits: drop the backups."""
        for path in self.originals:
            _remove(path + BACKUP_SUFFIX)


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def write(plan: FixPlan) -> Written:
    """Write each edited file of ``plan``; raises ``FxlintError`` (having restored what it wrote) when a
    file changed since the plan read it or cannot be written."""
    done = Written()
    try:
        for path in plan.files():
            current = _read(path)
            if current != plan.texts[path]:
                raise FxlintError(f"{path} changed while fxlint was running; nothing was written to it")
            _write_atomic(path + BACKUP_SUFFIX, current)
            done.originals[path] = current
            _write_atomic(path, plan.edited_text(path))
    except OSError as exc:
        done.restore()
        raise FxlintError(f"cannot write {exc.filename}: {exc.strerror}") from exc
    except FxlintError:
        done.restore()
        raise
    return done
