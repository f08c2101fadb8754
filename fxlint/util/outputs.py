"""Writing the files the user asked for, and checking they can be written before any work starts.

A report that took fifteen minutes must not be lost to a typo in ``-o``: every
command checks its output paths first (``check_writable``) and names the
user's path in one line when it cannot (``cannot write /no/dir/x.sarif: no
such directory``). Optional dependencies are checked the same way, up front
(``require``), with the command that installs them.
"""

from __future__ import annotations

import errno
import importlib.util
import os
from pathlib import Path

from ..errors import MissingDependency, OutputError


def _why(exc: OSError) -> str:
    if exc.errno == errno.ENOENT:
        return "no such directory"
    if exc.errno == errno.EISDIR:
        return "it is a directory"
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return "permission denied"
    if exc.errno == errno.ENOTDIR:
        return "a parent is not a directory"
    return exc.strerror or type(exc).__name__


def check_writable(path: str | os.PathLike[str] | None, *, what: str = "file") -> None:
    """Raise ``OutputError`` unless ``path`` can be created or overwritten (``None``: stdout, fine)."""
    if path is None:
        return
    p = Path(path)
    if what == "directory":
        if p.exists() and not p.is_dir():
            raise OutputError(f"cannot write {path}: it is not a directory")
        parent = p if p.exists() else p.parent
    else:
        if p.is_dir():
            raise OutputError(f"cannot write {path}: it is a directory")
        parent = p.parent
    parent = parent if str(parent) else Path(".")
    if not parent.exists():
        raise OutputError(f"cannot write {path}: no such directory")
    if not parent.is_dir():
        raise OutputError(f"cannot write {path}: a parent is not a directory")
    if not os.access(parent, os.W_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise OutputError(f"cannot write {path}: permission denied")


def write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` (UTF-8), or raise ``OutputError`` naming the path."""
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {_why(exc)}") from exc


def require(module: str, *, extra: str, purpose: str) -> None:
    """Raise ``MissingDependency`` when ``module`` is not importable: say what needs it and how to
    install it (``pip install 'fxlint[extra]'``)."""
    if importlib.util.find_spec(module) is None:
        raise MissingDependency(f"{purpose} needs {module}, which is not installed: pip install 'fxlint[{extra}]' "
                                f"(or pip install {module})")
