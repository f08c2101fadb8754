from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # `models` is a folder of the repository, not an installed package


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


@pytest.fixture
def write_module(tmp_path: Path):
    """Write a Python module into tmp_path and return its path."""

    def _write(source: str, name: str = "user_model.py") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(source))
        return path

    return _write


def line_of(path: str | Path, marker: str) -> int:
    """1-based line number of the first line in ``path`` containing ``marker``."""
    for i, text in enumerate(Path(path).read_text().splitlines(), 1):
        if marker in text:
            return i
    raise AssertionError(f"{marker!r} not in {path}")


def line_in_this_file(marker: str, file: str) -> int:
    return line_of(file, marker)


def run_cli(*args: str, cwd: str | Path | None = None, env: dict | None = None, timeout: int = 300):
    """Run ``python -m fxlint`` in a subprocess (a fresh interpreter)."""
    full_env = {**os.environ, **(env or {})}
    full_env.setdefault("PYTHONWARNINGS", "ignore")
    return subprocess.run(
        [sys.executable, "-m", "fxlint", *args],
        capture_output=True, text=True, cwd=str(cwd or ROOT), env=full_env, timeout=timeout,
    )
