"""Static checks: ruff and mypy, configured in pyproject.toml ([tool.ruff], [tool.mypy]), pass on the
package; and that configuration does catch what it is meant to (each check is also shown failing).

`make check` runs the same two commands. Both tools are pinned in requirements-dev.txt: nothing is skipped.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "pyproject.toml"


def _run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, capture_output=True, text=True, timeout=600)


def _write(tmp_path: Path, name: str, code: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(code).lstrip())
    return path


def test_ruff_is_clean_on_the_package():
    proc = _run("ruff", "check", "--no-cache", "--output-format", "concise", "fxlint")
    assert proc.returncode == 0, f"ruff check fxlint:\n{proc.stdout}{proc.stderr}"


def test_mypy_is_clean_on_the_package():
    # no arguments: [tool.mypy] files = ["fxlint"] is the whole setting (as in `make check`)
    proc = _run("mypy")
    assert proc.returncode == 0, f"mypy:\n{proc.stdout}{proc.stderr}"
    assert "Success: no issues found" in proc.stdout


def test_ruff_configuration_reports_what_it_selects(tmp_path):
    bad = _write(tmp_path, "bad.py", """
        import os


        def f(xs=[]):
            try:
                return xs[0]
            except Exception:
                return "%s" % "a"
    """)
    bad.write_text(bad.read_text() + f"\n\nLONG = {'a' * 130!r}\n")  # written here: this file stays in 120
    proc = _run("ruff", "check", "--no-cache", "--config", str(CONFIG), "--output-format", "concise", str(bad),
                cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    for code in ("F401", "B006", "BLE001", "E501", "UP031"):  # pyflakes, bugbear, blind except, length, pyupgrade
        assert code in proc.stdout, f"{code} not reported:\n{proc.stdout}"
    # what the configuration allows on purpose is not reported
    ok = _write(tmp_path, "ok.py", """
        def sizes(shape: tuple[int, ...], stride: tuple[int, ...]) -> list[str]:
            padded = (1,) + shape
            return [f"{n} × {s}" for n, s in zip(padded, stride)]
    """)
    proc = _run("ruff", "check", "--no-cache", "--config", str(CONFIG), str(ok), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_configuration_reports_what_it_is_set_to(tmp_path):
    bad = _write(tmp_path, "bad.py", """
        from typing import Optional


        def untyped(x):
            return x


        def partly(x: int, y):
            return x


        def needs_a_check(s: Optional[str]) -> int:
            return len(s)


        n: int = 1  # type: ignore[assignment]
        m: int = "x"  # type: ignore
    """)
    proc = _run("mypy", "--config-file", str(CONFIG), "--cache-dir", str(tmp_path / "cache"), str(bad),
                cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    for what in ("[no-untyped-def]", "[arg-type]", "[unused-ignore]", "[ignore-without-code]"):
        assert what in proc.stdout, f"{what} not reported:\n{proc.stdout}"
    untyped = {line.split(":")[1] for line in proc.stdout.splitlines() if line.endswith("[no-untyped-def]")}
    assert untyped == {"4", "8"}, proc.stdout  # the unannotated def and the partly annotated one
