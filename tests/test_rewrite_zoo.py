"""The rewrite entry points agree on real models (issue 14): every site a rule with a rewrite reports in
``fxlint lint`` is, in ``fxlint.rewrite`` and ``fxlint fix``, either applied or listed as not applied
with its reason, with and without ``torch.no_grad()``.

timm ``pvt_v2_b0`` (eval, randn(2,3,64,64)): three FXL204 sites at ``timm/models/pvt_v2.py:302``. Before
the rewrite captured with static shapes, Dynamo's export made every dim dynamic, FXL204 could not tell
the channels_last strides, and ``fxlint.rewrite``/``fxlint fix`` printed "0 rewrites applied ... 0 not
applied" while the lint and the backend saw three.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest
import torch

import fxlint

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import zoo_rewrite  # noqa: E402


def _sites(items, codes):
    return Counter((i.code, Path(i.file).name if i.file else None, i.line) for i in items if i.code in codes)


@pytest.fixture(scope="module")
def pvt():
    pytest.importorskip("timm")
    return zoo_rewrite.pvt_v2_b0()


@pytest.mark.slow
def test_pvt_v2_every_linted_site_is_applied_or_listed(pvt):
    model, inputs = pvt
    from fxlint.registry import default_registry

    codes = set(default_registry().rewrites())
    with torch.no_grad():
        linted = _sites(fxlint.lint(model, inputs, config=False).findings, codes)
        inference = fxlint.rewrite(model, inputs, config=False)
    assert linted == Counter({("FXL204", "pvt_v2.py", 302): 3}), linted
    # inference: the three are applied, outputs equal
    assert _sites(inference.applied, codes) == linted and inference.skipped == []
    with torch.no_grad():
        torch.testing.assert_close(inference.module(*inputs), model(*inputs))
    # autograd on (eval() does not turn it off): the same three sites, each listed with its reason
    grad = fxlint.rewrite(model, inputs, config=False)
    assert _sites(grad.applied, codes) + _sites(grad.skipped, codes) == linted
    assert all("gradients flow through the convolution" in s.reason for s in grad.skipped)


@pytest.mark.slow
def test_fix_cli_no_grad_applies_what_the_lint_reports(capsys):
    pytest.importorskip("timm")
    from fxlint.cli.app import main

    rc = main(["fix", f"{ROOT / 'bench' / 'zoo_rewrite.py'}:pvt_v2_b0", "--no-grad", "--select", "FXL204"])
    out = capsys.readouterr().out
    assert rc == 0
    assert out.count("pvt_v2.py:302  FXL204 drop-layout-copy") == 3, out
    assert "3 rewrites applied" in out and "0 not applied" in out, out


def test_mvit_self_assign_rewrites_in_training():
    pytest.importorskip("torchvision")
    model, inputs = zoo_rewrite.mvit_self_assign()
    inputs = (inputs[0][:2, :17], inputs[1][:2, :, :16, :16])  # small: the same code path
    linted = _sites(fxlint.lint(model, inputs, config=False, select="FXL110").findings, {"FXL110"})
    assert sum(linted.values()) == 2 and ("FXL110", "mvit.py", 188) in linted, linted
    res = fxlint.rewrite(model, inputs, config=False, select="FXL110")
    assert _sites(res.applied, {"FXL110"}) == linted and res.checked == "outputs and gradients"
