"""Every scenario model in models/: the lint reports exactly its EXPECTED codes, and every
copy-type finding is confirmed by the runtime audit (what `make demo` shows)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

import fxlint
from fxlint.commands._common import zoo_models
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
    report = fxlint.lint(model, inputs, confirm=True)
    assert report.codes() == set(mod.EXPECTED), str(report)
    unconfirmed = [f"{f.code} {f.location}: {f.status}" for f in report.findings
                   if f.status is not None and f.status != "confirmed"]
    assert not unconfirmed, unconfirmed
    assert not report.errors
