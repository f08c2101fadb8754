"""Unusual programs, through every entry point: ``fxlint.lint``, the backend (inner ``eager`` and
``aot_eager``, with the rewrites on) and ``fxlint.rewrite``.

Each must come through without an error or an fxlint warning, with results equal to eager (and
the model, its buffers and the caller's inputs as they were after a lint). Covered: multiple and
nested outputs (tuple, dict, dataclass, list, None, ints), in-place ops on inputs, buffer
mutation (BatchNorm running stats), zero-size and 0-d tensors, integer/bool/bfloat16/float16/
complex dtypes, graph breaks with data-dependent control flow and recompiles (findings
deduplicated), very deep graphs (the speed target), ``torch.no_grad()`` and
``torch.inference_mode()`` callers, and a module called twice in one forward.
"""

from __future__ import annotations

import dataclasses
import gc
import time
import warnings
from typing import Any

import pytest
import torch
import torch.nn as nn
import torch.utils._pytree as pytree

import fxlint
from fxlint.errors import CaptureError, FxlintWarning


def _clone(inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(a.detach().clone().requires_grad_(a.requires_grad) if isinstance(a, torch.Tensor) else a
                 for a in inputs)


def _leaves(x: Any) -> list[Any]:
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return _leaves([getattr(x, f.name) for f in dataclasses.fields(x)])
    return pytree.tree_leaves(x)


def _assert_same(a: Any, b: Any) -> None:
    la, lb = _leaves(a), _leaves(b)
    assert len(la) == len(lb), (a, b)
    for x, y in zip(la, lb):
        if isinstance(x, torch.Tensor):
            torch.testing.assert_close(x, y, equal_nan=True)
        else:
            assert x == y


def _state(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def through_everything(model: nn.Module, inputs: tuple[Any, ...], *, rewrite: bool = True,
                       inners: tuple[str, ...] = ("eager", "aot_eager"), grad: bool = True) -> fxlint.Report:
    """Lint, compile with each inner backend (rewrites on) and rewrite ``model``; check results."""
    ctx = torch.enable_grad() if grad else torch.no_grad()
    with ctx:
        before, given = _state(model), _clone(inputs)
        torch._dynamo.reset()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            report = fxlint.lint(model, inputs)
        assert not report.errors, report.errors
        assert not [w for w in caught if issubclass(w.category, FxlintWarning)], [str(w.message) for w in caught]
        _assert_same(_state(model), before)  # buffers as they were
        _assert_same(inputs, given)  # the caller's inputs as they were
        for inner in inners:
            torch._dynamo.reset()
            torch.manual_seed(0)
            ref_model_state = _state(model)
            expected = model(*_clone(inputs))
            after_eager = _state(model)
            model.load_state_dict(ref_model_state)
            with warnings.catch_warnings(record=True) as caught, fxlint.collect() as session:
                warnings.simplefilter("always")
                torch.manual_seed(0)
                compiled = torch.compile(model, backend="fxlint", options={"inner": inner, "rewrite": rewrite})
                got = compiled(*_clone(inputs))
            torch._dynamo.reset()
            assert not [w for w in caught if issubclass(w.category, FxlintWarning)], \
                (inner, [str(w.message) for w in caught])
            assert not session.errors, session.errors
            assert not [s for s in session.skipped if s.rolled_back], [str(s) for s in session.skipped]
            _assert_same(got, expected)
            _assert_same(_state(model), after_eager)  # buffer updates as eager makes them
            model.load_state_dict(ref_model_state)
        if rewrite:
            try:
                result = fxlint.rewrite(model, _clone(inputs))
            except CaptureError:
                result = None  # a graph break: the backend rewrote every graph above
            if result is not None:
                torch.manual_seed(0)
                expected = model(*_clone(inputs))
                model.load_state_dict(before)
                torch.manual_seed(0)
                _assert_same(result.module(*_clone(inputs)), expected)
                model.load_state_dict(before)
    return report


# --------------------------------------------------------------------------- outputs


@dataclasses.dataclass
class Out:
    logits: torch.Tensor
    aux: dict[str, torch.Tensor]
    steps: int


class NestedOutputs(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> Any:
        h = self.lin(x)
        picked = x[:, [0, 2, 4, 6]]  # FXL401
        return (h, {"picked": picked, "pair": (h.sum(), None)}, [picked * 2, 3])


class DataclassOutput(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> Out:
        h = self.lin(x)
        return Out(h, {"t": x.t().contiguous()}, 2)


@pytest.mark.parametrize("model", [NestedOutputs(), DataclassOutput()], ids=["nested", "dataclass"])
def test_multiple_and_nested_outputs(model):
    report = through_everything(model, (torch.randn(3, 8),))
    assert report.findings


# --------------------------------------------------------------------------- mutation


class InPlaceOnInputs(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        x.add_(1)
        y[0] = 0
        z = x[:, [0, 1, 2]]  # a gather of a mutated input
        z.mul_(2)  # and a write into the gather: it must stay a copy
        return z + y[:, :3]


def test_in_place_ops_on_inputs_and_the_callers_tensors_are_restored():
    x, y = torch.randn(4, 6), torch.randn(4, 6)
    report = through_everything(InPlaceOnInputs(), (x, y))
    assert [f.code for f in report.findings] == ["FXL401"]
    result = fxlint.rewrite(InPlaceOnInputs(), (x.clone(), y.clone()))
    assert not result.applied and "written in place" in result.skipped[0].reason


class WithBatchNorm(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.bn = nn.BatchNorm2d(3)
        self.conv = nn.Conv2d(3, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(self.bn(x))[:, [0, 1]]


def test_buffer_mutation_running_stats_train_and_eval():
    model = WithBatchNorm()
    through_everything(model, (torch.randn(2, 3, 5, 5),))
    through_everything(model.eval(), (torch.randn(2, 3, 5, 5),))


# --------------------------------------------------------------------------- shapes and dtypes


class Shapes(nn.Module):
    def forward(self, x: torch.Tensor, s: torch.Tensor) -> tuple[torch.Tensor, ...]:
        a = x.t().contiguous()
        b = x[:, [0, 1]] if x.shape[1] >= 2 else x
        c = x.reshape(-1)
        return a * s, b.sum() + s, c, s * 2, s.reshape(1, 1)


@pytest.mark.parametrize("shape", [(0, 4), (4, 0), (0, 0), (3, 4)], ids=str)
def test_zero_size_and_0d_tensors(shape):
    through_everything(Shapes(), (torch.randn(*shape), torch.tensor(2.0)))


def test_a_0d_only_program():
    class Scalars(nn.Module):
        def forward(self, a, b):
            return (a * b).float() + a.clone(), a.detach()

    through_everything(Scalars(), (torch.tensor(3.0, requires_grad=True), torch.tensor(2.0)))


DTYPES = [torch.int64, torch.int32, torch.uint8, torch.bool, torch.bfloat16, torch.float16, torch.complex64,
          torch.float64]


class AnyDtype(nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        a = x.permute(1, 0).contiguous()  # FXL101
        b = x[:, [0, 2, 4]]  # FXL401
        c = x.reshape(-1)
        d = x.clone()
        e = x.to(x.dtype)  # FXL108: nothing changes
        return a, b, c, d, e, x[[1]]


def _tensor(dtype: torch.dtype) -> torch.Tensor:
    if dtype == torch.bool:
        return torch.rand(4, 6) > 0.5
    if dtype.is_floating_point or dtype.is_complex:
        return torch.randn(4, 6, dtype=dtype)
    return torch.randint(0, 100, (4, 6), dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_every_dtype_and_the_runtime_confirms_the_copies(dtype):
    x = _tensor(dtype)
    report = through_everything(AnyDtype(), (x,))
    assert {"FXL101", "FXL401"} <= {f.code for f in report.findings}
    from fxlint.runtime.oracle import check

    check(AnyDtype(), (x,)).assert_all_confirmed()


def test_complex_and_half_precision_arithmetic_with_gradients():
    class Mixed(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(6, 6)

        def forward(self, x):
            h = self.lin(x).half().float()  # FXL103
            z = torch.view_as_complex(h.reshape(4, 3, 2).contiguous())
            return (z * z.conj()).real.bfloat16().float().sum(-1)

    report = through_everything(Mixed(), (torch.randn(4, 6, requires_grad=True),))
    assert "FXL103" in {f.code for f in report.findings}


# --------------------------------------------------------------------------- control flow


class DataDependent(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.lin(x)
        g = h.t().contiguous()  # FXL101, before the break
        if h.sum() > 0:  # a data-dependent branch: a graph break
            h = h * 2
        else:
            h = h - 1
        return h[:, [0, 2, 4]] + g.sum()  # FXL401 after the break


def test_graph_breaks_data_dependent_control_flow_and_recompiles_deduplicate():
    model = DataDependent()
    report = through_everything(model, (torch.randn(3, 8),))
    assert {"FXL101", "FXL401", "FXL501"} <= {f.code for f in report.findings}
    # recompiles: new static shapes, both branches; every finding once
    torch._dynamo.reset()
    with fxlint.collect() as session:
        compiled = torch.compile(model, backend="fxlint", options={"inner": "eager"}, dynamic=False)
        for b in (2, 3, 5, 7):
            for sign in (1.0, -1.0):
                x = torch.randn(b, 8)
                with torch.no_grad():
                    model.lin.bias.fill_(10.0 * sign)
                compiled(x)
    torch._dynamo.reset()
    assert session.graphs >= 6  # several compiles of each graph
    keys = [f.key() for f in session.findings]
    assert len(keys) == len(set(keys))
    assert sorted(f.code for f in session.findings if f.code in ("FXL101", "FXL401")) == ["FXL101", "FXL401"]


# --------------------------------------------------------------------------- callers


@pytest.mark.parametrize("mode", ["no_grad", "inference_mode"])
def test_no_grad_and_inference_mode_callers(mode):
    ctx = torch.no_grad if mode == "no_grad" else torch.inference_mode
    model = DataclassOutput()
    x = torch.randn(3, 8)
    with ctx():
        report = fxlint.lint(model, (x,))
        assert not report.errors
        assert not [f for f in report.findings if f.code.startswith("FXL3")]  # inference: no gradient rules
        torch._dynamo.reset()
        with warnings.catch_warnings(record=True) as caught, fxlint.collect() as session:
            warnings.simplefilter("always")
            out = torch.compile(model, backend="fxlint", options={"inner": "eager", "rewrite": True})(x)
        torch._dynamo.reset()
        assert not [w for w in caught if issubclass(w.category, FxlintWarning)]
        assert not session.errors
        _assert_same(out, model(x))
        audit = fxlint.audit(model, (x,))
        assert audit.total_bytes > 0


class Twice(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = nn.Sequential(nn.Linear(6, 6), nn.ReLU())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.block(x)
        h = self.block(h.t().contiguous().t())  # the same module again, on a copied layout
        return h[:, [0, 1, 2]]


def test_a_module_called_twice_in_one_forward():
    report = through_everything(Twice(), (torch.randn(6, 6, requires_grad=True),))
    assert {"FXL101", "FXL401"} <= {f.code for f in report.findings}
    assert not [f for f in report.findings if f.code.startswith("FXL3")]  # both calls train the block


# --------------------------------------------------------------------------- deep graphs


def _analysis_seconds(n: int) -> tuple[int, float]:
    from fxlint.benchmarks.lint_speed import analyse, synthetic_graph
    from fxlint.canon import build_view

    gm = synthetic_graph(n, values="real")
    best = float("inf")
    for _ in range(2):  # the better of two: the machine is shared
        gc.collect()
        start = time.process_time()  # CPU time of this process
        analyse([build_view(gm, origin="fx", label="synthetic")])
        best = min(best, time.process_time() - start)
    return len(gm.graph.nodes), best


@pytest.mark.slow
def test_deep_graphs_scale_linearly():
    """Canonical view + every rule grow linearly with the graph: 30,000 nodes cost about three times
    what 10,000 do, measured in one run (a quadratic step would cost nine times). What holds on any
    machine is the ratio; the absolute figures (the "under 1 s for 10,000 nodes" target) are
    measured by `fxlint bench --lint-speed` (bench/lint_speed.py), not asserted here. A small graph
    first, so that imports and first-call caches are not charged to the 10,000-node one (measured
    here: 10k -> 20k -> 40k cost 1.0, 2.4, 4.7 s; the first ratio is the noisy one)."""
    _analysis_seconds(1_000)
    n10, t10 = _analysis_seconds(10_000)
    n30, t30 = _analysis_seconds(30_000)
    print(f"analysis: {n10} nodes {t10 * 1000:.0f} ms CPU, {n30} nodes {t30 * 1000:.0f} ms CPU, "
          f"ratio {t30 / t10:.2f}")
    assert t30 / t10 < 6.0, (t10, t30)  # linear is 3 (4.3 seen: caches, GC), quadratic 9


def test_a_20k_node_graph_module_through_lint():
    from fxlint.benchmarks.lint_speed import synthetic_graph

    gm = synthetic_graph(20_000, values="real")
    report = fxlint.lint(gm, (torch.randn(16, 16), torch.randn(16, 16)))
    assert not report.errors and len(report.findings) > 100
