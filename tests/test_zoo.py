"""Every scenario model in models/: the lint reports exactly its EXPECTED codes, and every
copy-type finding is confirmed by the runtime audit (what `make demo` shows)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

import fxlint
from fxlint.cli.commands._common import zoo_models
from tests.conftest import ROOT

MODELS = zoo_models(str(ROOT / "models"))


def _load(path: str):
    spec = importlib.util.spec_from_file_location(f"zoo_{Path(path).stem}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("path", MODELS, ids=[Path(p).stem for p in MODELS])
def test_zoo_model_reports_its_expected_codes_confirmed_by_the_runtime(path):
    mod = _load(path)
    assert mod.__doc__ and len(mod.__doc__.strip().splitlines()) >= 3, "the docstring tells the story"
    model, inputs = mod.make()
    device = getattr(mod, "DEVICE", None)  # a GPU story: linted for that device, simulated (docs/device.md)
    report = fxlint.lint(model, inputs, confirm=True, device=device)
    assert report.codes() == set(mod.EXPECTED), str(report)
    # the audit runs here, on the CPU: the simulated device's copies cannot be measured (bench/gpu_check.py
    # checks them on a GPU), so those findings are not-run; every other copy finding is confirmed
    simulated = {"FXL106", "FXL107"} if device is not None else set()
    unconfirmed = [f"{f.code} {f.location}: {f.status}" for f in report.findings
                   if f.status is not None and f.status != ("not-run" if f.code in simulated else "confirmed")]
    assert not unconfirmed, unconfirmed
    assert not report.errors
    assert (report.extras.get("device") is not None) == (device is not None)
