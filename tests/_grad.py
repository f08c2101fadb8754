"""Autograd as the oracle for the gradient rules: run the model eagerly, backward
from its returned values, and see which parameters got a gradient."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn as nn
import torch.utils._pytree as pytree


def gradients(model: nn.Module, inputs: Any) -> dict[str, str]:
    """``{param name: "none" | "zero" | "nonzero"}`` after one backward from the sum
    of every floating-point tensor the model returns (the model is not changed)."""
    args = inputs if isinstance(inputs, tuple) else (inputs,)
    for p in model.parameters():
        p.grad = None
    out = model(*args)
    roots = [t for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor) and t.is_floating_point()]
    total = sum(t.sum() for t in roots if t.requires_grad)
    if isinstance(total, torch.Tensor):
        total.backward()
    result = {}
    for name, p in model.named_parameters():
        if p.grad is None:
            result[name] = "none"
        elif not torch.any(p.grad != 0):
            result[name] = "zero"
        else:
            result[name] = "nonzero"
        p.grad = None
    return result


def check_verdicts(report, model: nn.Module, inputs: Any, codes: set[str] | None = None) -> dict[str, str]:
    """Every parameter a finding says never trains gets no gradient from autograd;
    every parameter it says is only partly cut, and every parameter no finding
    names as lost, still gets one (unless autograd gives it none for another
    reason the test states). Returns autograd's verdicts."""
    grads = gradients(model, inputs)
    findings = list(report.findings) + list(report.suppressed)
    lost = set()
    partial = set()
    for f in findings:
        if codes is not None and f.code not in codes:
            continue
        lost.update(f.details.get("lost_parameters", []))
        partial.update(set(f.details.get("cut_parameters", [])) - set(f.details.get("lost_parameters", [])))
    for name in lost:
        assert grads[name] in ("none", "zero"), f"{name}: fxlint says it never trains, autograd gives {grads[name]}"
    for name in partial:
        assert grads[name] == "nonzero", f"{name}: fxlint says partly cut, autograd gives {grads[name]}"
    return grads
