"""The program that runs on every call: a first call that fills a cache is not what fxlint reports.

timm's LeViT/TinyViT/EfficientFormer keep ``attention_biases[:, attention_bias_idxs]`` in a dict in eval,
ConViT keeps ``rel_indices``: the first call computes them, the later calls read them. fxlint lints
the second call then, and says what only the first one did."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn as nn

import fxlint
from fxlint.capture import graphs


class CachedBias(nn.Module):
    """LeViT's shape: a gathered bias cached per device in eval, recomputed every call in training."""

    def __init__(self) -> None:
        super().__init__()
        self.attention_biases = nn.Parameter(torch.zeros(4, 49))
        self.register_buffer("attention_bias_idxs", torch.randint(0, 49, (49, 49)), persistent=False)
        self.attention_bias_cache: dict[str, torch.Tensor] = {}

    def get_bias(self, device: torch.device) -> torch.Tensor:
        if self.training:
            return self.attention_biases[:, self.attention_bias_idxs]
        key = str(device)
        if key not in self.attention_bias_cache:
            self.attention_bias_cache[key] = self.attention_biases[:, self.attention_bias_idxs]
        return self.attention_bias_cache[key]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x + self.get_bias(x.device)).softmax(-1)


class RelIndices(nn.Module):
    """ConViT's shape: a tensor attribute built on the first call for this size."""

    def __init__(self) -> None:
        super().__init__()
        self.rel_indices: torch.Tensor | None = None
        self.table = nn.Parameter(torch.randn(16, 8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[1]
        if self.rel_indices is None or self.rel_indices.shape[0] != n:
            idx = torch.arange(n)
            self.rel_indices = self.table[(idx[:, None] - idx[None, :]).abs() % 16]
        return x @ self.rel_indices.sum(-1)


class Counter(nn.Module):
    """State that changes on every call is not a cache: one capture, nothing to say."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return self.lin(x.transpose(0, 1).contiguous())


X = torch.randn(2, 4, 49, 49)


def test_a_cache_filled_on_the_first_call_is_not_reported_and_the_report_says_why():
    first = fxlint.lint(CachedBias().eval(), X, config=False)
    # the first call alone, as fxlint captured it before: its gather is the FXL404 finding
    assert first.first_call is not None
    assert first.first_call.caches == ["attention_bias_cache"]
    assert [f.code for f in first.first_call.findings] == ["FXL404"]
    assert "FXL404" not in first.codes()
    text = str(first)
    assert "Steady state: the first call fills `attention_bias_cache`" in text
    assert "1 finding of the first call only" in text and "test_steady_state.py:" in text
    d = first.to_dict()
    assert d["first_call"]["caches"] == ["attention_bias_cache"]
    assert d["first_call"]["findings"][0]["code"] == "FXL404"


def test_the_json_with_a_first_call_is_valid_against_the_schema():
    jsonschema = pytest.importorskip("jsonschema")
    from fxlint.reporting.schema import report_schema

    d = json.loads(json.dumps(fxlint.lint(CachedBias().eval(), X, config=False).to_dict()))
    jsonschema.validate(d, report_schema())


def test_training_recomputes_it_every_call_so_the_gather_is_reported():
    r = fxlint.lint(CachedBias().train(), X, config=False)
    assert r.first_call is None
    assert "first call" not in str(r)


def test_a_tensor_attribute_built_on_the_first_call_is_a_cache_too():
    r = fxlint.lint(RelIndices().eval(), torch.randn(2, 16, 16), config=False)
    assert r.first_call is not None and r.first_call.caches == ["rel_indices"]
    assert r.first_call.findings, "the first call's gather"
    assert not any(f.code.startswith("FXL40") for f in r.findings)


def test_state_that_changes_every_call_is_captured_once(monkeypatch):
    calls = []
    real = graphs._capture_dynamo_once

    def counting(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(graphs, "_capture_dynamo_once", counting)
    r = fxlint.lint(Counter(), torch.randn(4, 2, 8), config=False)
    assert len(calls) == 1 and r.first_call is None


def test_a_model_without_python_state_is_captured_once(monkeypatch):
    calls = []
    real = graphs._capture_dynamo_once
    monkeypatch.setattr(graphs, "_capture_dynamo_once", lambda *a, **k: calls.append(1) or real(*a, **k))
    fxlint.lint(nn.Sequential(nn.Linear(8, 8), nn.ReLU()), torch.randn(2, 8), config=False)
    assert len(calls) == 1


def test_the_lint_leaves_the_cache_as_the_model_would_after_a_call():
    m = CachedBias().eval()
    fxlint.lint(m, X, config=False)
    assert list(m.attention_bias_cache) == ["cpu"]
    torch.testing.assert_close(m(X), (X + m.attention_biases[:, m.attention_bias_idxs]).softmax(-1))


def test_the_backend_replaces_the_first_compile_after_the_cache_fill_and_keeps_a_new_shape():
    m = CachedBias().eval()
    compiled = torch.compile(m, backend="fxlint", options={"inner": "eager", "config": False})
    torch._dynamo.reset()
    with fxlint.collect() as s:
        compiled(X)
        assert "FXL404" in {f.code for f in s.findings}  # the first call's program, while it is the only one
        compiled(X)  # guards on the cache fail: Dynamo recompiles the steady-state program
        assert len(s.reports) == 2
        assert "FXL404" not in {f.code for f in s.findings}
    torch._dynamo.reset()
    m2 = Counter()
    compiled2 = torch.compile(m2, backend="fxlint", options={"inner": "eager", "config": False})
    with fxlint.collect() as s2:
        compiled2(torch.randn(4, 2, 8))
        compiled2(torch.randn(4, 2, 8))  # `calls` changes: Dynamo may recompile for the new int value
        compiled2(torch.randn(4, 3, 8))  # new shapes: both programs run
    sigs = {r.extras["frame"][2] for r in s2.reports if r.extras.get("frame")}
    assert len(sigs) >= 2
    assert s2.findings  # the transpose(0, 1).contiguous() copy of each shape's program is kept
    torch._dynamo.reset()


def test_what_torch_compile_or_a_library_wrapping_it_sets_on_the_module_is_not_a_cache(monkeypatch):
    """Lightning wraps torch.compile and stores `_compile_kwargs` on the compiled module; any wrapper
    may: only what the call itself changes counts."""
    real = torch.compile

    def wrapping(model, *a, **k):
        out = real(model, *a, **k)
        if isinstance(model, nn.Module):
            model.__dict__["_wrapper_kwargs"] = dict(k)  # set on the module, outside the call
        return out

    monkeypatch.setattr(torch, "compile", wrapping)
    calls = []
    real_once = graphs._capture_dynamo_once
    monkeypatch.setattr(graphs, "_capture_dynamo_once", lambda *a, **k: calls.append(1) or real_once(*a, **k))
    r = fxlint.lint(CachedBias().train(), X, config=False)
    assert r.first_call is None and len(calls) == 1
