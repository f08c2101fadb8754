"""Scenario models that are rewrite targets: rewritten, verified, and copying fewer bytes at
runtime. (That every model reports exactly its EXPECTED codes, confirmed by the runtime, is
tests/test_zoo.py.)"""

from __future__ import annotations

import importlib

import pytest
import torch

import fxlint
from tests.conftest import ROOT

#: scenario models whose findings have a rewrite
REWRITE_TARGETS = ["speech_separation", "frame_subsampling"]


def _load(name):
    return importlib.import_module(f"models.{name}")


def _out_and_grads(module, inputs):
    out = module(*inputs)
    w = torch.randn(out.shape, generator=torch.Generator().manual_seed(5))
    params = [p for p in module.parameters() if p.requires_grad]
    return out, torch.autograd.grad((out * w).sum(), params)


@pytest.mark.parametrize("name", REWRITE_TARGETS)
def test_rewrite_scenario_applies_matches_and_copies_less(name, in_fresh_interpreter):
    if not in_fresh_interpreter:
        return  # its body ran in a fresh interpreter and passed
    mod = _load(name)
    model, inputs = mod.make()
    result = fxlint.rewrite(model, inputs)
    assert [a.code for a in result.applied] == sorted(mod.EXPECTED) and result.skipped == [], (
        result.skipped, [(f.code, f.line, f.message[:120]) for f in fxlint.lint(model, inputs, config=False).findings])
    out0, g0 = _out_and_grads(model, inputs)
    out1, g1 = _out_and_grads(result.module, inputs)
    assert torch.equal(out0, out1)
    assert len(g0) == len(g1) and all(torch.equal(a, b) for a, b in zip(g0, g1))
    for train in (False, True):
        before = fxlint.audit(model, inputs, train=train).total_bytes
        after = fxlint.audit(result.module, inputs, train=train).total_bytes
        assert after < before, (train, before, after)
