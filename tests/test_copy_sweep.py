"""The copy rules' predicted bytes against the runtime, over a generated sweep.

A seeded generator writes functions whose every line is one case: a tensor laid out in the graph by
permutes, transposes, step slices, narrows, expands of size-1 and new dims (stride 0), in several
dtypes and shapes (size-1 dims included), then one operation: ``.contiguous()`` (both memory
formats), ``.reshape``/``.flatten``/``.ravel``, a dtype round trip, a ``.repeat`` or
``.expand().contiguous()`` feeding a broadcast, or a conversion that changes nothing. Each function is
linted once (Dynamo) and audited once (eager, profiler), and for every line:

    bytes of the FXL1xx findings on the line == bytes of the copies the runtime made there

so a missed copy, a false alarm and a wrong byte count all fail, with the line's code in the message.
The generator is seeded (SEED); SWEEP_LINES lines per function, FUNCTIONS functions.
"""

from __future__ import annotations

import importlib.util
import math
import random
import sys

import pytest
import torch

import fxlint

SEED = 20240611
FUNCTIONS = 3
SWEEP_LINES = 50
DTYPES = {"float32": torch.float32, "float16": torch.float16, "float64": torch.float64, "int64": torch.int64}


def _layout(rng: random.Random, t: torch.Tensor, var: str) -> tuple[torch.Tensor, str]:
    """Apply 0-3 random layout ops to ``t`` (eagerly, to know the shapes) and return the same ops as text."""
    text = var
    for _ in range(rng.randint(0, 3)):
        r = t.dim()
        kind = rng.choice(["permute", "transpose", "step", "narrow", "expand", "unsqueeze_expand", "mT"])
        if kind == "permute":
            perm = list(range(r))
            rng.shuffle(perm)
            t, text = t.permute(*perm), f"{text}.permute({', '.join(map(str, perm))})"
        elif kind == "transpose" and r >= 2:
            a, b = rng.randrange(r), rng.randrange(r)
            t, text = t.transpose(a, b), f"{text}.transpose({a}, {b})"
        elif kind == "mT" and r >= 2:
            t, text = t.mT, f"{text}.mT"
        elif kind == "step":
            d = rng.randrange(r)
            t = t[(slice(None),) * d + (slice(None, None, 2),)]
            text = f"{text}[{':, ' * d}::2]"
        elif kind == "narrow":
            d = rng.randrange(r)
            if t.shape[d] >= 2:
                t, text = t.narrow(d, 1, t.shape[d] - 1), f"{text}.narrow({d}, 1, {t.shape[d] - 1})"
        elif kind == "expand":
            ones = [d for d in range(r) if t.shape[d] == 1]
            if ones:
                d = rng.choice(ones)
                shape = list(t.shape)
                shape[d] = 3
                t, text = t.expand(*shape), f"{text}.expand({', '.join(map(str, shape))})"
        elif kind == "unsqueeze_expand" and r < 5:
            d = rng.randint(0, r)
            t = t.unsqueeze(d)
            shape = list(t.shape)
            shape[d] = 2
            t, text = t.expand(*shape), f"{text}.unsqueeze({d}).expand({', '.join(map(str, shape))})"
    return t, text


def _target(rng: random.Random, shape: tuple[int, ...]) -> tuple[int, ...]:
    n = math.prod(shape)
    mode = rng.choice(["flatten", "merge", "split", "factor"])
    if mode == "flatten" or not shape:
        return (n,)
    if mode == "merge" and len(shape) >= 2:
        d = rng.randrange(len(shape) - 1)
        return shape[:d] + (shape[d] * shape[d + 1],) + shape[d + 2:]
    if mode == "split":
        d = rng.randrange(len(shape))
        divs = [k for k in range(1, shape[d] + 1) if shape[d] % k == 0]
        k = rng.choice(divs)
        return shape[:d] + (k, shape[d] // k) + shape[d + 1:]
    out, left = [], n
    for _ in range(rng.randint(0, 2)):
        divs = [k for k in range(1, left + 1) if left % k == 0]
        k = rng.choice(divs)
        out.append(k)
        left //= k
    return tuple(out) + (left,)


def _case(rng: random.Random, var: str) -> tuple[torch.Tensor, str]:
    rank = rng.randint(1, 4)
    shape = tuple(rng.choice([1, 2, 3, 4, 6]) for _ in range(rank))
    dtype = rng.choice(list(DTYPES))
    base = torch.randn(shape).to(DTYPES[dtype]) if dtype != "int64" else torch.randint(0, 9, shape)
    t, lay = _layout(rng, base, var)
    floating = dtype != "int64"
    ops = ["contiguous", "contiguous_reduced", "reshape", "flatten", "ravel", "noop"]
    if floating:
        ops += ["roundtrip", "roundtrip"]
    if t.dim() == 4:
        ops.append("channels_last")
    if any(s == 1 for s in t.shape):
        ops += ["repeat", "expand_contiguous"]
    op = rng.choice(ops)
    if op == "contiguous":
        expr = f"{lay}.contiguous()"
    elif op == "contiguous_reduced":
        expr = f"{lay}.contiguous().sum()"
    elif op == "reshape":
        expr = f"{lay}.reshape({', '.join(map(str, _target(rng, tuple(t.shape))))})"
    elif op == "flatten":
        s = rng.randrange(t.dim())
        e = rng.randint(s, t.dim() - 1)
        expr = f"{lay}.flatten({s}, {e})"
    elif op == "ravel":
        expr = f"{lay}.ravel()"
    elif op == "noop":
        expr = f"{lay}.to(torch.{dtype})"
    elif op == "roundtrip":
        via = rng.choice([d for d in ("float16", "float64", "float32") if d != dtype])
        expr = f"{lay}.to(torch.{via}).to(torch.{dtype})"
    elif op == "channels_last":
        expr = f"{lay}.contiguous(memory_format=torch.channels_last)"
    else:
        d = rng.choice([d for d in range(t.dim()) if t.shape[d] == 1])
        full = list(t.shape)
        full[d] = 4
        other = f"torch.ones({', '.join(map(str, full))}, dtype={lay}.dtype)"
        if op == "repeat":
            reps = [1] * t.dim()
            reps[d] = 4
            expr = f"{lay}.repeat({', '.join(map(str, reps))}) * {other}"
        else:
            expr = f"{lay}.expand({', '.join(map(str, full))}).contiguous() * {other}"
    return base, expr


def _module(rng: random.Random, index: int, tmp_path) -> tuple[object, tuple[torch.Tensor, ...], list[str]]:
    inputs, lines = [], []
    for i in range(SWEEP_LINES):
        base, expr = _case(rng, f"x{i}")
        inputs.append(base)
        lines.append(f"    o{i} = {expr}")
    args = ", ".join(f"x{i}" for i in range(SWEEP_LINES))
    src = ["import torch", "", "", f"def sweep({args}):", *lines,
           f"    return ({', '.join(f'o{i}' for i in range(SWEEP_LINES))},)", ""]
    path = tmp_path / f"copy_sweep_{index}.py"
    path.write_text("\n".join(src))
    spec = importlib.util.spec_from_file_location(f"copy_sweep_{index}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod.sweep, tuple(inputs), src


@pytest.mark.parametrize("index", range(FUNCTIONS))
def test_rule_bytes_equal_runtime_copies_line_by_line(index, tmp_path):
    rng = random.Random(SEED + index)
    fn, inputs, src = _module(rng, index, tmp_path)
    report = fxlint.lint(fn, inputs, select="FXL1")
    audit = fxlint.audit(fn, inputs)
    predicted: dict[int, int] = {}
    for f in report.findings:
        assert f.bytes is not None, f.message
        predicted[f.line] = predicted.get(f.line, 0) + f.bytes
    measured: dict[int, int] = {}
    for c in audit.copies:
        # every copy counts: the audit calls a one-element copy a "wrapped scalar" (unavoidable), but
        # no line here multiplies by a Python scalar, so each copy is the case's own
        if c.phase == "forward":
            measured[c.line] = measured.get(c.line, 0) + c.bytes
    first = 5  # line number of the first case in the generated file
    bad = []
    for line in range(first, first + SWEEP_LINES):
        if predicted.get(line, 0) != measured.get(line, 0):
            found = [f"{f.code} {f.bytes}" for f in report.findings if f.line == line]
            ran = [(c.top_op, c.op, c.bytes) for c in audit.copies if c.line == line]
            bad.append(f"{src[line - 1].strip()}\n      predicted {found}, runtime {ran}")
    assert not bad, "\n".join(bad)


def _grid_cases(n: int = 24):
    """view (split) -> permute -> .contiguous() chains on a leaf that requires grad."""
    rng = random.Random(SEED)
    cases = []
    for _ in range(n):
        dims = [rng.choice([1, 2, 3, 4]) for _ in range(rng.randint(2, 4))]
        perm = list(range(len(dims)))
        rng.shuffle(perm)
        cases.append((tuple(dims), tuple(perm)))
    return cases


@pytest.mark.parametrize("dims,perm", _grid_cases())
def test_backward_copy_of_a_permuted_split_view_is_predicted(dims, perm):
    """Forward: one contiguous copy; backward: the gradient comes back permuted and the split view's
    backward copies it when the dims it merges are not adjacent. Predicted vs measured."""
    n = math.prod(dims)

    def fn(x):
        return x.view(*dims).permute(*perm).contiguous() * 2

    x = torch.randn(n, requires_grad=True)
    # the same code object with new sizes would be recompiled with dynamic sizes (Dynamo's automatic
    # dynamic shapes); each case here wants its own static shapes
    torch._dynamo.reset()
    report = fxlint.lint(fn, (x,), select="FXL101")
    audit = fxlint.audit(fn, (x,), train=True)
    measured_fwd = sum(c.bytes for c in audit.copies if c.phase == "forward" and c.avoidable)
    measured_bwd = sum(c.bytes for c in audit.copies if c.phase == "backward" and c.file is not None
                       and c.grad_fn != "MulBackward0")
    found = report.by_code("FXL101")
    assert sum(f.bytes for f in found) == measured_fwd
    assert sum(f.details["backward_bytes"] for f in found) == measured_bwd, (dims, perm, audit.copies)
