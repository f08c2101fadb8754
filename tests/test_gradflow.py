"""The gradient-flow analysis behind FXL301-304/FXL109: path counts, the fraction
definition, which cut is named, natural non-differentiable ops, several graphs,
every graph origin, and linear time on a 10,000-node graph."""

from __future__ import annotations

import gc
import time

import pytest
import torch
import torch.fx as fx
import torch.nn as nn

from fxlint.canon import build_view
from fxlint.capture.graphs import capture
from fxlint.analysis.gradflow import analyse
from fxlint.capture.program import Program


def flow_of(target, *inputs):
    cap = capture(target, inputs)
    return analyse(cap.program()), cap


class Unrolled(nn.Module):
    """A GRUCell loop over ``steps`` whose hidden state is detached after step ``k - 1``."""

    def __init__(self, steps: int, k: int):
        super().__init__()
        self.steps, self.k = steps, k
        self.cell = nn.GRUCell(3, 5)
        self.head = nn.Linear(5, 1)

    def forward(self, x):
        h = torch.zeros(x.shape[1], 5)
        for t in range(self.steps):
            h = self.cell(x[t], h)
            if t == self.k - 1:
                h = h.detach()
        return self.head(h)


@pytest.mark.parametrize("steps,k", [(6, 2), (8, 6)])
def test_fraction_cut_is_the_share_of_time_steps_dropped(steps, k):
    flow, _ = flow_of(Unrolled(steps, k), torch.randn(steps, 2, 3))
    for name in ("cell.weight_ih", "cell.weight_hh", "cell.bias_ih", "cell.bias_hh"):
        pf = flow.params[name]
        assert (pf.paths, pf.uncut) == (steps, steps - k)
        assert pf.fraction_cut == pytest.approx(k / steps) and not pf.lost
    assert flow.params["head.weight"].fraction_cut == 0
    [site] = flow.sites("detach")
    assert site.params == ["cell.weight_ih", "cell.weight_hh", "cell.bias_ih", "cell.bias_hh"]


class TwoCuts(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b, self.c = nn.Linear(4, 4), nn.Linear(4, 4), nn.Linear(4, 4)

    def forward(self, x):
        h = self.a(x).detach()
        h = self.b(h).detach()
        return self.c(h)


def test_each_cut_names_only_the_parameters_it_stops():
    flow, _ = flow_of(TwoCuts(), torch.randn(2, 4))
    first, second = flow.sites("detach")
    assert first.params == ["a.weight", "a.bias"]
    assert second.params == ["b.weight", "b.bias"]  # a.* were already stopped by the first cut
    assert flow.params["a.weight"].lost and flow.params["b.bias"].lost and not flow.params["c.weight"].lost


class NaturalBlocks(nn.Module):
    """argmax, comparisons, integer casts and sizes carry no gradient: not cuts, not paths."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.gate = nn.Linear(4, 4)

    def forward(self, x):
        y = self.lin(x)
        idx = self.gate(x).argmax(-1)
        mask = (self.gate(x) > 0).float()
        return y * mask + idx.unsqueeze(-1) + y.new_zeros(y.shape[0], 1) * y.shape[1]


def test_non_differentiable_ops_are_neither_cuts_nor_paths():
    flow, _ = flow_of(NaturalBlocks(), torch.randn(2, 4))
    assert flow.cuts == []
    assert flow.params["lin.weight"].fraction_cut == 0
    assert flow.params["gate.weight"].paths == 0  # its only routes are argmax and a comparison


LIN = nn.Linear(4, 4)  # a module in a global: its parameters are LIN.weight, LIN.bias


def test_parameter_cut_in_one_graph_but_used_in_another_is_not_lost():
    def f(x):
        h = LIN(x).detach()
        print("graph break")
        return LIN(h)

    flow, cap = flow_of(f, torch.randn(2, 4))
    assert len(cap.views) == 2
    pf = flow.params["LIN.weight"]
    assert not pf.lost and 0 < pf.fraction_cut < 1


LIN2 = nn.Linear(4, 4)


@torch._dynamo.disable
def _eager_part(h):
    return h * LIN2.weight.sum()  # runs outside every graph: fxlint cannot see this use


def test_autograd_overrules_a_static_never_trains():
    """A parameter the returned values reach at runtime is never called lost."""

    def f(x):
        return _eager_part(LIN2(x).detach())

    flow, cap = flow_of(f, torch.randn(2, 4))
    assert flow.params["LIN2.weight"].uncut == 0  # statically every path is cut...
    assert cap.reach is not None and "LIN2.weight" in cap.reach.parameters  # ...autograd says otherwise
    assert not flow.params["LIN2.weight"].lost
    assert flow.params["LIN2.bias"].lost  # and autograd agrees: LIN2.bias gets no gradient


class Regions(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(4, 4), nn.Linear(4, 4)

    def forward(self, x):
        with torch.no_grad():
            h = self.a(x)
        return self.b(h)


@pytest.mark.parametrize("origin", ["dynamo", "export"])
def test_grad_disabled_region_cuts_in_dynamo_and_export(origin):
    x = torch.randn(2, 4)
    target = Regions() if origin == "dynamo" else torch.export.export(Regions(), (x,))
    flow, _ = flow_of(target, x)
    [site] = flow.sites("no_grad")
    assert site.params == ["a.weight", "a.bias"]
    assert flow.params["a.weight"].lost and not flow.params["b.weight"].lost


def test_symbolic_trace_module_calls_own_their_parameters():
    gm = torch.fx.symbolic_trace(TwoCuts())
    flow, _ = flow_of(gm, torch.randn(2, 4))
    assert [s.params for s in flow.sites("detach")] == [["a.weight", "a.bias"], ["b.weight", "b.bias"]]
    assert flow.params["a.weight"].lost and flow.params["c.weight"].uncut == 1


def test_frozen_parameters_are_not_followed():
    m = TwoCuts()
    m.a.requires_grad_(False)
    flow, _ = flow_of(m, torch.randn(2, 4))
    assert "a.weight" not in flow.params
    assert [s.params for s in flow.sites("detach")] == [["b.weight", "b.bias"]]


# --------------------------------------------------------------------------- linear time


def synthetic(n_nodes: int, n_params: int = 100) -> fx.GraphModule:
    """A long chain of ops over ``n_params`` parameters, with a residual add every
    10 ops (so path counts grow to hundreds of bits) and a detach every 97."""
    root = nn.Module()
    for i in range(n_params):
        root.register_parameter(f"w{i}", nn.Parameter(torch.randn(4)))
    g = fx.Graph()
    h = prev = g.placeholder("x")
    count, i, used = 2, 0, []
    every = max(1, n_nodes // n_params)
    while count < n_nodes:
        if i % every == 0 and len(used) < n_params:
            used.append(g.get_attr(f"w{len(used)}"))
            count += 1
        h = g.call_function(torch.mul, (h, used[-1]))
        count += 1
        if i % 10 == 0:
            h = prev = g.call_function(torch.add, (h, prev))
            count += 1
        if i % 97 == 0:
            h = g.call_method("detach", (h,))
            count += 1
        i += 1
    g.output(h)
    return fx.GraphModule(root, g)


def test_ten_thousand_nodes_well_under_a_second():
    view = build_view(synthetic(10_000), origin="fx", label="synthetic")
    assert len(view) >= 10_000
    gc.collect()  # garbage from earlier tests is not this analysis' cost
    # CPU time of this process: other jobs on a shared machine do not inflate it
    start = time.process_time()
    flow = analyse(Program([view]))  # includes building the networkx graph
    elapsed = time.process_time() - start
    print(f"gradflow on {len(view)} nodes: {elapsed * 1000:.0f} ms CPU")
    assert elapsed < 0.5, elapsed
    assert len(flow.params) >= 50 and flow.cuts
    assert max(p.paths for p in flow.params.values()).bit_length() > 64  # exact big path counts


class ReturnsStats(nn.Module):
    """Values returned for logging, with no gradient on purpose, beside the loss."""

    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(4, 4)
        self.head = nn.Linear(4, 1)

    def forward(self, x, y):
        feats = self.enc(x)
        pred = self.head(feats).squeeze(-1)
        loss = ((pred - y) ** 2).mean()
        with torch.no_grad():
            mae = (pred - y).abs().mean()
        return loss, mae, feats.detach()


def test_outputs_without_gradient_beside_a_loss_are_not_cuts():
    flow, _ = flow_of(ReturnsStats(), torch.randn(3, 4), torch.randn(3))
    assert all(pf.fraction_cut == 0 for pf in flow.params.values())
    assert flow.sites("detach") == [] and flow.sites("no_grad") == []


def test_a_model_whose_only_output_is_detached_is_still_reported():
    class AllDetached(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            return self.lin(x).detach()

    flow, _ = flow_of(AllDetached(), torch.randn(2, 4))
    assert flow.params["lin.weight"].lost and flow.sites("detach")
