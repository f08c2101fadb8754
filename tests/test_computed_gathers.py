"""Gathers that are the computation: a per-segment statistic read back to the values it summarises (segment
softmax, a degree norm, a per-graph norm: ``segment-statistic``), rows moved by an index the model chose by its
own values (top-k pooling: ``selection``). Message passing's gathers of aggregated rows, gathers by an index the
model receives or builds from constants, are not."""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn

import fxlint
from fxlint.runtime.profiler import UNAVOIDABLE
from tests.conftest import line_of

HERE = __file__
SEGMENT = UNAVOIDABLE["segment-statistic"]
SELECTION = UNAVOIDABLE["selection"]


def _line(marker: str) -> int:
    return line_of(HERE, marker)


def scatter(src: torch.Tensor, index: torch.Tensor, n: int, reduce: str) -> torch.Tensor:
    """PyG's ``scatter`` on the CPU."""
    index = index.view(-1, *([1] * (src.dim() - 1))).expand_as(src)
    size = (n, *src.shape[1:])
    if reduce == "sum":
        return src.new_zeros(size).scatter_add_(0, index, src)
    return src.new_zeros(size).scatter_reduce_(0, index, src, reduce, include_self=False)


class SegmentSoftmaxAttention(nn.Module):
    """GAT-style attention: a segment softmax over each node's incoming edges, then a weighted sum."""

    def __init__(self, c: int = 16) -> None:
        super().__init__()
        self.lin = nn.Linear(c, c)
        self.att = nn.Parameter(torch.randn(c))

    def forward(self, x, edge_index):
        row, col = edge_index[0], edge_index[1]
        h = self.lin(x)
        logits = (h[row] * self.att).sum(-1)  # messages: a gather of node features
        n = x.shape[0]
        top = scatter(logits.detach(), col, n, "amax")
        out = logits - top.index_select(0, col)  # softmax max
        out = out.exp()
        total = scatter(out, col, n, "sum") + 1e-16
        total = total.index_select(0, col)  # softmax sum
        alpha = out / total
        return scatter(h[row] * alpha[:, None], col, n, "sum")


class DegreeNorm(nn.Module):
    """GCN's symmetric normalisation of the edge weights, then propagation."""

    def forward(self, x, edge_index, edge_weight):
        row, col = edge_index[0], edge_index[1]
        deg = scatter(edge_weight, col, x.shape[0], "sum")
        dis = deg.pow(-0.5)
        dis.masked_fill_(dis == float("inf"), 0)
        w = dis[row] * edge_weight * dis[col]  # degree norm
        return scatter(x[row] * w[:, None], col, x.shape[0], "sum")  # propagate


class GraphNorm(nn.Module):
    """A per-graph normalisation of node features (PyG's GraphNorm, LayerNorm(mode="graph"))."""

    def __init__(self, c: int = 16) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(c))

    def forward(self, x, batch):
        x = x * self.weight
        n = int(batch.max()) + 1
        count = scatter(torch.ones_like(batch, dtype=x.dtype), batch, n, "sum").clamp(min=1)
        mean = scatter(x, batch, n, "sum") / count[:, None]
        out = x - mean[batch]  # graph mean
        var = scatter(out * out, batch, n, "sum") / count[:, None]
        return out / (var + 1e-5).sqrt()[batch]  # graph std


class Propagate(nn.Module):
    """APPNP: rows aggregated by message passing, read back as the next round's messages (a sparse matmul
    avoids those gathers: they stay copies), and a statistic read into values it does not summarise."""

    def forward(self, x, edge_index, edge_weight):
        row, col = edge_index[0], edge_index[1]
        h = x
        for _ in range(2):
            h = scatter(h[row] * edge_weight[:, None], col, x.shape[0], "sum")  # next round
            h = 0.9 * h + 0.1 * x
        deg = scatter(edge_weight, col, x.shape[0], "sum")
        return h, deg[row] * torch.sigmoid(x[col, 0])  # not its values


def _graph(n: int = 12, e: int = 40):
    g = torch.Generator().manual_seed(0)
    edge_index = torch.randint(0, n, (2, e), generator=g)
    return torch.randn(n, 16, generator=g), edge_index, torch.rand(e, generator=g) + 0.1


def _at(report, marker):
    return report.at(HERE, _line(marker), phase="forward"), report.at(HERE, _line(marker), phase="backward")


@pytest.mark.parametrize("train", [False, True])
def test_segment_softmax_reads_its_max_and_sum_back_as_the_computation(train):
    x, edge_index, _ = _graph()
    report = fxlint.audit(SegmentSoftmaxAttention(), (x, edge_index), train=train)
    for marker in ("# softmax max", "# softmax sum"):
        fwd, back = _at(report, marker)
        gathers = [c for c in fwd if c.kind == "gather"]
        assert [c.bytes for c in gathers] == [40 * 4], (marker, [(c.chain, c.bytes) for c in fwd])
        assert all(not c.avoidable and c.reason == SEGMENT for c in gathers)
        # the max is of detached logits: no gradient; the sum's gather writes its gradient back in training
        if train and marker == "# softmax sum":
            assert back and all(not c.avoidable and c.reason == SEGMENT for c in back), [
                (c.chain, c.grad_fn, c.reason) for c in back]
        else:
            assert back == []
    # the messages, a gather of node features, stay copies (a sparse matmul avoids them)
    fwd, _ = _at(report, "# messages")
    assert [c.avoidable for c in fwd if c.kind == "gather"] == [True]


def test_a_degree_norm_reads_the_degree_back_into_the_weights_it_sums():
    x, edge_index, w = _graph()
    report = fxlint.audit(DegreeNorm(), (x, edge_index, w))
    fwd, _ = _at(report, "# degree norm")
    gathers = [c for c in fwd if c.kind == "gather"]
    assert len(gathers) == 2 and all(c.reason == SEGMENT and not c.avoidable for c in gathers)
    prop, _ = _at(report, "# propagate")
    assert [c.avoidable for c in prop if c.kind == "gather"] == [True]


def test_a_per_graph_norm_reads_its_mean_and_std_back():
    x, _, _ = _graph()
    batch = torch.tensor([0] * 5 + [1] * 7)
    report = fxlint.audit(GraphNorm(), (x, batch), train=True)
    for marker in ("# graph mean", "# graph std"):
        fwd, back = _at(report, marker)
        gathers = [c for c in fwd if c.kind == "gather"]
        assert len(gathers) == 1 and gathers[0].reason == SEGMENT, (marker, [(c.chain, c.reason) for c in fwd])
        assert back and all(c.reason == SEGMENT for c in back if c.kind in ("gather", "scatter"))


def test_rows_aggregated_by_message_passing_and_read_back_stay_copies():
    x, edge_index, w = _graph()
    report = fxlint.audit(Propagate(), (x, edge_index, w))
    fwd, _ = _at(report, "# next round")
    gathers = [c for c in fwd if c.kind == "gather"]
    # the first round gathers x, the second the aggregated rows: neither is a statistic of its consumer's values
    assert len(gathers) == 2 and all(c.avoidable for c in gathers), [(c.chain, c.reason) for c in gathers]
    fwd, _ = _at(report, "# not its values")
    assert [c.avoidable for c in fwd if c.kind == "gather"] == [True, True]


class TopKPool(nn.Module):
    """Graph U-Net's top-k pooling and unpooling: keep the best-scored half of the nodes, relabel the edges."""

    def __init__(self, c: int = 16) -> None:
        super().__init__()
        self.score = nn.Linear(c, 1)

    def forward(self, x, edge_index, batch):
        score = torch.tanh(self.score(x)).view(-1)
        values, perm = torch.sort(score, descending=True)
        perm = perm[: x.shape[0] // 2]
        pooled = x[perm] * values[: perm.shape[0], None]  # keep the best
        pooled_batch = batch[perm]  # their graphs
        pooled_batch, order = torch.sort(pooled_batch, stable=True)
        starts = torch.tensor([0, 3])
        offsets = starts[pooled_batch]  # offsets of their graphs
        relabel = torch.full((x.shape[0],), -1, dtype=torch.long)
        relabel[perm] = torch.arange(perm.shape[0])  # relabel
        row, col = relabel[edge_index[0]], relabel[edge_index[1]]  # edges of the kept nodes
        up = torch.zeros_like(x)
        up[perm] = pooled  # unpool
        return up, pooled_batch, row, col, offsets, order


class FixedIndex(nn.Module):
    """Gathers by an index the model receives or builds from constants, and a scalar maximum (a value, not a
    choice) turned into an index."""

    def forward(self, x, edge_index, lengths):
        by_input = x[edge_index[0]]  # received
        fixed = x[:, torch.tensor([0, 2, 4, 6])]  # constant
        last = x[lengths - lengths.max()]  # shifted by the maximum
        return by_input, fixed, last


class TextPooling(nn.Module):
    """CLIP's pooling at each text's end-of-text token (the largest id), and sequences sorted by length: the input's
    data chooses the rows."""

    def forward(self, hidden, input_ids, lengths):
        pooled = hidden[torch.arange(hidden.shape[0]), input_ids.argmax(dim=-1)]  # end of text
        by_length = hidden[lengths.argsort(descending=True)]  # longest first
        return pooled, by_length


@pytest.mark.parametrize("train", [False, True])
def test_rows_moved_by_an_index_the_model_chose_by_its_values_are_a_selection(train):
    x, edge_index, _ = _graph()
    batch = torch.tensor([0] * 5 + [1] * 7)
    report = fxlint.audit(TopKPool(), (x, edge_index, batch), train=train)
    for marker in ("# keep the best", "# their graphs", "# relabel", "# edges of the kept nodes", "# unpool",
                   "# offsets of their graphs"):
        fwd, back = _at(report, marker)
        moved = [c for c in fwd if c.kind in ("gather", "scatter")]
        assert moved and all(not c.avoidable and c.reason == SELECTION for c in moved), (
            marker, [(c.chain, c.kind, c.reason) for c in fwd])
        # the gradients of the pooled rows and of the unpooling are the selection's too
        assert all(not c.avoidable and c.reason == SELECTION for c in back), (
            marker, [(c.chain, c.grad_fn) for c in back])
        if train and marker in ("# keep the best", "# unpool"):
            assert back


def test_rows_the_input_data_chooses_are_a_selection():
    hidden = torch.randn(3, 7, 16, requires_grad=True)
    input_ids = torch.randint(0, 100, (3, 7))
    lengths = torch.tensor([5, 7, 2])
    report = fxlint.audit(TextPooling(), (hidden, input_ids, lengths), train=True)
    for marker in ("# end of text", "# longest first"):
        fwd, back = _at(report, marker)
        moved = [c for c in fwd if c.kind == "gather"]
        assert moved and all(c.reason == SELECTION for c in moved), (marker, [(c.chain, c.reason) for c in fwd])
        assert back and all(c.reason == SELECTION for c in back), (marker, [(c.chain, c.reason) for c in back])


def test_an_index_received_built_from_constants_or_from_a_maximum_value_is_no_selection():
    x, edge_index, _ = _graph()
    lengths = torch.randint(1, 9, (12,))
    report = fxlint.audit(FixedIndex(), (x, edge_index, lengths))
    for marker in ("# received", "# constant", "# shifted by the maximum"):
        fwd, _ = _at(report, marker)
        gathers = [c for c in fwd if c.kind == "gather"]
        assert gathers and all(c.avoidable for c in gathers), (marker, [(c.chain, c.reason) for c in fwd])


def test_a_speed_finding_on_a_selection_is_confirmed_by_the_gather_it_speeds_up():
    """FXL402 says index_select makes the same copy faster: the gather of a selection (unavoidable) backs it; a
    boolean mask's compaction is FXL403's and stays avoidable."""
    x, edge_index, _ = _graph()
    batch = torch.tensor([0] * 5 + [1] * 7)
    report = fxlint.lint(TopKPool().eval(), (x, edge_index, batch), confirm=True, config=False)
    found = [f for f in report.findings if f.code == "FXL402" and f.line == _line("# keep the best")]
    assert [f.status for f in found] == ["confirmed"], [(f.code, f.line, f.status) for f in report.findings]
    # its copy stays the selection's: the census does not count it against fxlint
    audit = fxlint.audit(TopKPool().eval(), (x, edge_index, batch))
    fwd, _ = _at(audit, "# keep the best")
    assert [c.reason for c in fwd if c.kind == "gather"] == [SELECTION]


def test_a_boolean_mask_built_from_a_selection_compacts_and_stays_a_copy():
    class Filter(nn.Module):
        def forward(self, scores, edge_index):
            keep = torch.full((scores.shape[0],), -1, dtype=torch.long)
            _, perm = scores.topk(scores.shape[0] // 2)
            keep[perm] = torch.arange(perm.shape[0])
            row = keep[edge_index[0]]
            return row[row >= 0]  # compact

    x, edge_index, _ = _graph()
    audit = fxlint.audit(Filter(), (x[:, 0], edge_index))
    fwd, _ = _at(audit, "# compact")
    assert [c.avoidable for c in fwd if c.kind == "gather"] == [True], [(c.chain, c.reason) for c in fwd]


class EdgeConv(nn.Module):
    """DGCNN's EdgeConv: a network on every edge's (x_i, x_j - x_i), max-reduced into the target nodes."""

    def __init__(self, c: int = 16) -> None:
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(2 * c, c), nn.ReLU(), nn.Linear(c, c))

    def forward(self, x, edge_index):
        row, col = edge_index[0], edge_index[1]
        x_i, x_j = x.index_select(0, col), x.index_select(0, row)  # edge operands
        return scatter(self.mlp(torch.cat([x_i, x_j - x_i], dim=-1)), col, x.shape[0], "amax")


class ContinuousFilter(nn.Module):
    """SchNet's continuous-filter convolution: the gathered rows times a filter as wide as they are."""

    def __init__(self, c: int = 16) -> None:
        super().__init__()
        self.filter = nn.Sequential(nn.Linear(4, c), nn.Tanh(), nn.Linear(c, c))

    def forward(self, x, edge_index, edge_attr):
        row, col = edge_index[0], edge_index[1]
        w = self.filter(edge_attr)
        return scatter(x[row] * w, col, x.shape[0], "sum")  # filtered


class NodeLogits(nn.Module):
    """Per-edge values computed from gathered rows and only summed over their features: a per-node computation
    gathered late (avoidable by computing it per node first), and a per-edge scalar: neither mixes the rows."""

    def __init__(self, c: int = 16) -> None:
        super().__init__()
        self.att = nn.Parameter(torch.randn(c))

    def forward(self, x, edge_index, edge_weight):
        row, col = edge_index[0], edge_index[1]
        logits = (x[row] * self.att).sum(-1)  # late
        return scatter(torch.sigmoid(logits) - edge_weight, col, x.shape[0], "sum")


@pytest.mark.parametrize("train", [False, True])
def test_gathered_rows_a_network_or_a_full_width_filter_mixes_before_the_reduction_are_the_computation(train):
    x, edge_index, _ = _graph()
    x.requires_grad_(train)  # the node features of a layer after the first: their gathers have a gradient
    report = fxlint.audit(EdgeConv(), (x, edge_index), train=train)
    fwd, back = _at(report, "# edge operands")
    gathers = [c for c in fwd if c.kind == "gather"]
    edge = UNAVOIDABLE["edge-network"]
    assert len(gathers) == 2 and all(not c.avoidable and c.reason == edge for c in gathers), [
        (c.chain, c.reason) for c in fwd]
    assert not train or (back and all(c.reason == edge for c in back if c.kind in ("gather", "scatter")))
    attr = torch.randn(edge_index.shape[1], 4)
    report = fxlint.audit(ContinuousFilter(), (x, edge_index, attr), train=train)
    fwd, _ = _at(report, "# filtered")
    assert [c.reason for c in fwd if c.kind == "gather"] == [edge]


def test_rows_only_summed_over_their_features_or_scaled_by_a_scalar_stay_copies():
    x, edge_index, w = _graph()
    report = fxlint.audit(NodeLogits(), (x, edge_index, w))
    fwd, _ = _at(report, "# late")
    assert [c.avoidable for c in fwd if c.kind == "gather"] == [True], [(c.chain, c.reason) for c in fwd]
    # GCN's propagation (a per-edge scalar) and GAT's messages (alpha per head) stay copies: the tests above
