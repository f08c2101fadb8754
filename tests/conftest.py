from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # `models` is a folder of the repository, not an installed package

# requirements-dev.txt installs the registry's torchvision (a CUDA build) next to the CPU torch: its
# C extension cannot load, and without this fallback `import torchvision` (hence timm, and
# transformers' model classes) raises. Lazy: imports nothing, acts only if the extension fails.
from fxlint.util.compat import install_torchvision_fallback  # noqa: E402

install_torchvision_fallback()

# The portability runs (`make test-portability`) force CPU paths down. ATEN_CPU_CAPABILITY and
# ONEDNN_MAX_CPU_ISA are read by torch and oneDNN themselves; torch has no environment variable for
# torch.backends.mkldnn.enabled, so FXLINT_TEST_MKLDNN=0 is ours: oneDNN off for the whole session
# (in this process: CLI subprocesses keep their default).
if os.environ.get("FXLINT_TEST_MKLDNN", "1") == "0":
    torch.backends.mkldnn.enabled = False

# fxlint.lint measures CPU-dependent kernel copies (fxlint.kernels.probe) and caches them on disk:
# a test session uses a fresh cache of its own (shared with its CLI subprocesses), never the user's.
# the audit times each call without the profiler for 0.2 s by default; hundreds of audits here need the
# shares, not a tight median (tests/test_harm_order.py checks how the times are derived)
os.environ.setdefault("FXLINT_AUDIT_TIMING_S", "0.02")

if "FXLINT_CACHE_DIR" not in os.environ:
    os.environ["FXLINT_CACHE_DIR"] = tempfile.mkdtemp(prefix="fxlint-test-cache-")
    atexit.register(shutil.rmtree, os.environ["FXLINT_CACHE_DIR"], ignore_errors=True)


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


@pytest.fixture
def in_fresh_interpreter(request) -> bool:
    """Run the calling test's body in a fresh interpreter: True there (run the body), False here after that run
    passed (return at once). For tests that an earlier module of the same xdist worker can disturb: twice in CI a
    lint of a scenario (tests/test_models.py frame_subsampling; tests/test_fix_source.py Select) found no FXL401
    after other modules ran in that worker, while it passes alone and in its own module (the cause is not found
    yet: not Dynamo's cache, not torch._dynamo.config)."""
    import subprocess
    import sys

    if os.environ.get("FXLINT_TEST_FRESH") == request.node.nodeid:
        return True
    env = {**os.environ, "FXLINT_TEST_FRESH": request.node.nodeid}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                           request.node.nodeid], env=env, capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parent.parent, timeout=900)
    assert proc.returncode == 0, (proc.stdout[-4000:], proc.stderr[-2000:])
    return False


@pytest.fixture(autouse=True, scope="module")
def _fresh_dynamo() -> None:
    """Each test module starts from an empty Dynamo cache, as PyTorch's own tests do: a module's
    torch.compile calls (backend tests compile the scenario models with several backends) must not decide
    what a later module's lint captures. Twice in CI a scenario's lint in a later module of the same worker
    captured nothing (tests/test_models.py: no finding, no rewrite) while it passes alone and in its module."""
    torch._dynamo.reset()


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


@pytest.fixture
def mul_rule():
    """A throwaway second rule, FXL990 test-mul (info): flags every multiplication.

    Tests of configuration need a second code whose findings they control. It is added to the
    default registry as a plugin's rule would be, for the test only, so `fxlint rules` and the
    docs check never see it."""
    from dataclasses import dataclass

    from fxlint.findings import Violation
    from fxlint.registry import Hit, default_registry, make_rule

    @dataclass(frozen=True)
    class Multiplication(Violation):
        def message(self) -> str:
            return "a multiplication"

    def check(view, ctx):
        """Every multiplication (a test rule)."""
        for n in view.ops("mul"):
            yield Hit(n, Multiplication())

    test_rule = make_rule(check, "FXL990", "test-mul", "info", violation=Multiplication)
    with default_registry().added(test_rule):
        yield test_rule


MODEL_SOURCE = """
import torch
import torch.nn as nn


class Gather(nn.Module):
    def forward(self, x):
        y = x[:, [0, 2, 4, 6]]  # the gather
        return y * 2  # the mul


def make():
    return Gather(), (torch.randn(3, 8),)
"""


@pytest.fixture
def make_project(tmp_path: Path):
    """A throwaway user project: ``pyproject.toml`` (optional ``[tool.fxlint]`` body) and
    ``src/pkg/model.py``; returns the model file."""

    def _make(fxlint_toml: str | None = None, source: str = MODEL_SOURCE, *, root: Path | None = None) -> Path:
        root = root or tmp_path / "proj"
        (root / "src" / "pkg").mkdir(parents=True, exist_ok=True)
        text = '[project]\nname = "proj"\n'
        if fxlint_toml is not None:
            text += "\n[tool.fxlint]\n" + textwrap.dedent(fxlint_toml)
        (root / "pyproject.toml").write_text(text)
        model = root / "src" / "pkg" / "model.py"
        model.write_text(textwrap.dedent(source))
        return model

    return _make


def load_model(path: Path, name: str = "make"):
    """(module, inputs) from a model file, as the CLI loads it."""
    from fxlint.capture.target import load_target

    loaded = load_target(f"{path}:{name}")
    return loaded.obj, loaded.inputs


@pytest.fixture(scope="session")
def _warm_lint():
    """Run one failing lint in this process before any pytester fixture exists.

    pytester snapshots sys.modules when it is set up and, at teardown, drops every module
    imported since. Torch modules first imported by the inner (in-process) pytest run would
    be dropped and re-imported later, and some register TORCH_LIBRARY namespaces that cannot
    be registered twice. Importing them here, first, keeps them out of the dropped set."""
    from fxlint.testing import assert_no_findings

    class _Gather(torch.nn.Module):
        def forward(self, x):
            return x[:, [0, 2]] * 2

    with pytest.raises(AssertionError):
        assert_no_findings(_Gather(), torch.randn(2, 4), config=False)


@pytest.fixture
def lint_pytester(_warm_lint, pytester):
    """``pytester`` for inner runs that lint models (see ``_warm_lint``)."""
    return pytester
