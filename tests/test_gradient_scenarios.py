"""The gradient scenarios in models/: each reports exactly its expected codes, every
verdict agrees with autograd, intended cuts are counted as suppressed, and the same
models in eval mode raise no gradient warning; the clean MLP stays clean."""

from __future__ import annotations

import importlib

import pytest
import torch

import fxlint
from tests._grad import check_verdicts
from tests.conftest import ROOT

GRADIENT_MODELS = ["rnn_truncated_bptt", "gan_step", "frozen_backbone", "data_access", "item_loss",
                   "tensor_from_tensors"]
GRADIENT_CODES = ("FXL301", "FXL302", "FXL303", "FXL304", "FXL109")


def load(name: str):
    mod = importlib.import_module(f"models.{name}")
    model, inputs = mod.make()
    return mod, model, inputs


@pytest.mark.parametrize("name", GRADIENT_MODELS)
def test_scenario_codes_and_autograd_agree(name):
    mod, model, inputs = load(name)
    assert mod.__doc__ and "Expected" in mod.__doc__
    report = fxlint.lint(model, inputs)
    assert report.codes() == mod.EXPECTED, [f.message for f in report.findings]
    assert {f.code for f in report.suppressed} == getattr(mod, "EXPECTED_SUPPRESSED", set())
    for f in report.findings + report.suppressed:
        if f.code in GRADIENT_CODES:
            assert f.details.get("cut_parameters"), f.message
            assert f.file and f.file.endswith(f"{name}.py") and f.line
    check_verdicts(report, model, inputs)


@pytest.mark.parametrize("name", GRADIENT_MODELS + ["clean_mlp"])
def test_eval_mode_raises_no_gradient_warning(name):
    _, model, inputs = load(name)
    report = fxlint.lint(model.eval(), inputs)
    noisy = [f for f in report.findings if f.code in GRADIENT_CODES and f.severity != "info"]
    assert noisy == []


def test_clean_mlp_stays_clean_in_training():
    _, model, inputs = load("clean_mlp")
    report = fxlint.lint(model.train(), inputs)
    assert report.codes() == set() and report.suppressed == []


def test_rnn_scenario_names_the_recurrent_weights_and_the_fraction():
    mod, model, inputs = load("rnn_truncated_bptt")
    [f] = fxlint.lint(model, inputs).by_code("FXL301")
    assert f.severity == "warning" and "cell.weight_hh" in f.message
    assert f.details["fraction_cut"]["cell.weight_hh"] == pytest.approx((mod.STEPS - 1) / mod.STEPS)


def test_cli_exit_codes_and_suppressed_count(capsys, monkeypatch):
    from fxlint.cli.app import main

    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["lint", "models/frozen_backbone.py:make", "--fail-on", "error"]) == 1
    out = capsys.readouterr().out
    assert "FXL303" in out and "backbone.0.weight" in out
    assert main(["lint", "models/gan_step.py:make"]) == 0
    assert "No findings, 1 suppressed" in capsys.readouterr().out
