"""FXL406 gather-scatter: message passing that writes per-edge messages, then sums them into nodes."""

from __future__ import annotations

import re

import pytest
import torch
import torch.nn as nn

import fxlint
from tests.copy_helpers import findings
from tests.rule_snapshots import lint_fixture, load_fixture, marked_lines

FIXTURE = load_fixture("FXL406")
N, E, C, H = FIXTURE.N, FIXTURE.E, FIXTURE.C, FIXTURE.H


def _by_line(report) -> dict[int, fxlint.Finding]:
    return {f.line: f for f in findings(report, "FXL406")}


def test_positives_confirmed_by_the_audit_with_the_messages_bytes():
    got = _by_line(lint_fixture("FXL406", train=False, confirm=True))
    assert sorted(got) == marked_lines("FXL406", "positive")  # and no negative
    for f in got.values():
        assert f.bytes == E * C * 4, f  # E x C float32 messages (E x H x C/H for the heads)
        assert f.status == "confirmed", (f.line, f.status)
        assert f.severity.value == "info"


def test_the_details_and_the_message_use_the_users_names():
    got = sorted(_by_line(lint_fixture("FXL406", train=False)).values(), key=lambda f: f.line)
    d = [f.details for f in got]
    assert [x["tensor"] for x in d] == ["x", "x", "x", "x", "xh"]
    assert {x["index"] for x in d} == {"src"} and {x["scatter_index"] for x in d} == {"dst"}
    assert [x["scatter"] for x in d] == [".scatter_add_", ".index_add_", ".index_add_", ".scatter_reduce",
                                         ".index_put_"]
    assert [x["reduction"] for x in d] == ["sum", "sum", "sum", "mean", "sum"]
    assert [x["coefficients"] for x in d] == [(), (), ("edge_weight",), (), ("alpha",)]
    assert [x["features"] for x in d] == ["8", "8", "8", "8", "2 x 4"]
    assert all(x["edges"] == E and x["nodes"] == N and x["copied"] == E * C * 4 for x in d)
    weighted = got[2]
    assert weighted.message == (
        f"`x` gathered by `src` writes {E} x {C} per-edge messages scaled by edge_weight (1.3 kB per call), then "
        "`.index_add_` aggregates them (sum) into nodes by `dst`: one sparse matmul computes the same sum without "
        "the messages")
    assert "torch.sparse.mm(adj, x)" in weighted.fix and f"{N} x {N} CSR" in weighted.fix
    assert "values edge_weight" in weighted.fix and "coalesce" in weighted.fix
    assert "in-degree" in got[3].fix and "for each head h" in got[4].fix
    for f in got:  # no name Dynamo made up
        assert not re.search(r"\bl_\w+_\b|\b\w+_\d+\b", f.message + f.fix), f.message


def test_the_documented_fix_gives_the_same_values_on_a_graph_without_duplicate_edges():
    _model, (x, edge_index, w, alpha, _) = FIXTURE.make()
    src, dst = edge_index
    assert torch.unique(src * N + dst).numel() == E  # no duplicate edges

    def adj(values):
        return torch.sparse_coo_tensor(torch.stack([dst, src]), values, (N, N)).coalesce().to_sparse_csr()

    x_j = x.index_select(0, src)
    flagged_sum = x.new_zeros(N, C).scatter_add_(0, dst.view(-1, 1).expand_as(x_j), x_j)
    torch.testing.assert_close(torch.sparse.mm(adj(torch.ones(E)), x), flagged_sum)
    flagged_weighted = torch.zeros(N, C).index_add_(0, dst, x.index_select(0, src) * w.view(-1, 1))
    torch.testing.assert_close(torch.sparse.mm(adj(w), x), flagged_weighted)
    flagged_mean = torch.zeros(N, C).scatter_reduce(0, dst.view(-1, 1).expand_as(x_j), x_j, "mean",
                                                    include_self=False)
    degree = torch.zeros(N).index_add_(0, dst, torch.ones(E)).clamp(min=1)
    torch.testing.assert_close(torch.sparse.mm(adj(1 / degree[dst]), x), flagged_mean)
    xh = x.view(N, H, C // H)
    flagged_heads = torch.zeros(N, H, C // H).index_put_((dst,), alpha.unsqueeze(-1) * xh.index_select(0, src),
                                                         accumulate=True)
    per_head = torch.stack([torch.sparse.mm(adj(alpha[:, k]), xh[:, k]) for k in range(H)], 1)
    torch.testing.assert_close(per_head, flagged_heads)


class Aggregate(nn.Module):
    def forward(self, x, edge_index):
        x_j = x[edge_index[0]]
        return torch.zeros_like(x).index_add_(0, edge_index[1], x_j)


def test_it_owns_a_subscript_gather_over_fxl402_and_says_the_bytes_under_dynamic_shapes():
    x, ei = torch.randn(N, C), FIXTURE.graph()
    with torch.no_grad():
        full = fxlint.lint(Aggregate().eval(), (x, ei), config=False)
        alone = fxlint.lint(Aggregate().eval(), (x, ei), config=False, select="FXL402")
    assert full.codes() == {"FXL406"} and alone.codes() == set()  # one owner, whatever the selection
    torch._dynamo.reset()
    ei = FIXTURE.graph()
    torch._dynamo.mark_dynamic(ei, 1)
    rep = fxlint.lint(Aggregate(), (x, ei), config=False, select="FXL406")
    torch._dynamo.reset()
    [f] = findings(rep, "FXL406")
    assert f.bytes is None and f.bytes_expr is not None and "s" in f.bytes_expr, f.bytes_expr
    assert re.fullmatch(rf"{C * 4}\*s\d+", f.bytes_expr.replace(" ", "")), f.bytes_expr


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    from tests.rule_snapshots import reported_lines, rule_output

    out = rule_output("FXL406")
    assert reported_lines(out, "FXL406") == set(marked_lines("FXL406", "positive"))
    assert out == snapshot


# --------------------------------------------------------------------------- PyTorch Geometric


def _pyg_graph():
    pytest.importorskip("torch_geometric")
    from torch_geometric.utils import coalesce

    torch.manual_seed(0)
    n, e = 40, 200
    edge_index = coalesce(torch.randint(0, n, (2, 4 * e)), num_nodes=n)[:, :e]
    return torch.randn(n, 16), edge_index


class Conv(nn.Module):
    def __init__(self, conv):
        super().__init__()
        self.conv = conv

    def forward(self, x, edge_index):
        return self.conv(x, edge_index)


@pytest.mark.parametrize("name", ["SAGEConv", "SAGEConv-mean", "GCNConv", "GINConv"])
def test_pyg_convs_given_an_edge_index_are_found(name):
    x, edge_index = _pyg_graph()
    from torch_geometric import nn as gnn

    conv = {"SAGEConv": lambda: gnn.SAGEConv(16, 16, aggr="sum"), "SAGEConv-mean": lambda: gnn.SAGEConv(16, 16),
            "GCNConv": lambda: gnn.GCNConv(16, 16, normalize=False),
            "GINConv": lambda: gnn.GINConv(nn.Linear(16, 16))}[name]()
    with torch.no_grad():
        rep = fxlint.lint(Conv(conv).eval(), (x, edge_index), config=False, select="FXL406")
    [f] = findings(rep, "FXL406")
    assert f.file.endswith("message_passing.py") and f.bytes == edge_index.size(1) * 16 * 4
    assert f.details["tensor"] == "x" and f.details["reduction"] == ("mean" if name.endswith("mean") else "sum")
    assert "to_torch_csr_tensor(edge_index.flip(0))" in f.fix


def test_pyg_gather_is_confirmed_where_eager_makes_it():
    """PyG gathers on a branch only torch.compile takes (``if torch.jit.is_scripting() or is_compiling():``
    in ``_index_select``); eager gathers in ``_index_select_safe``: the finding says so and the audit
    confirms it with eager's copy, on the other line."""
    x, edge_index = _pyg_graph()
    from torch_geometric import nn as gnn

    with torch.no_grad():
        rep = fxlint.lint(Conv(gnn.SAGEConv(16, 16)).eval(), (x, edge_index), config=False, select="FXL406",
                          confirm=True)
    [f] = findings(rep, "FXL406")
    assert f.compiled_only is not None and "is_compiling()" in f.compiled_only
    assert f.status == "confirmed" and f.eager_site is not None
    assert f.eager_site[0] == f.file and f.eager_site[1] != f.line
    assert not [u for u in rep.unexplained if (u["file"], u["line"]) == f.eager_site]


def test_pyg_csr_adjacency_gives_the_same_output_without_the_gather():
    """The fix for a PyG conv: the CSR of the flipped edge_index; the audit sees no index_select then."""
    x, edge_index = _pyg_graph()
    from torch_geometric.nn import SAGEConv
    from torch_geometric.utils import to_torch_csr_tensor

    conv = SAGEConv(16, 16, aggr="sum").eval()
    adj_t = to_torch_csr_tensor(edge_index.flip(0), size=(x.size(0), x.size(0)))
    with torch.no_grad():
        torch.testing.assert_close(conv(x, adj_t), conv(x, edge_index))
        audited = fxlint.audit(lambda: conv(x, adj_t))
    assert not [c for c in audited.copies if c.op == "aten::index_select"]


@pytest.mark.parametrize("name", ["EdgeConv", "SAGEConv-max"])
def test_pyg_convs_without_a_linear_sum_are_not(name):
    x, edge_index = _pyg_graph()
    from torch_geometric import nn as gnn

    conv = {"EdgeConv": lambda: gnn.EdgeConv(nn.Linear(32, 16)),
            "SAGEConv-max": lambda: gnn.SAGEConv(16, 16, aggr="max")}[name]()
    with torch.no_grad():
        rep = fxlint.lint(Conv(conv).eval(), (x, edge_index), config=False, select="FXL406")
    assert findings(rep, "FXL406") == []
