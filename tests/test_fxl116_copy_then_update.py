"""FXL116 copy-then-update: positives, negatives, the copy against the profiler, the fix's values."""

from __future__ import annotations

import torch
from torch.profiler import profile

from tests.copy_helpers import findings
from tests.rule_snapshots import lint_fixture, marked_lines, reported_lines, rule_output


def test_positives_confirmed_by_the_copy():
    got = findings(lint_fixture("FXL116", train=False, confirm=True), "FXL116")
    assert {f.line for f in got} == set(marked_lines("FXL116", "positive"))
    for f in got:
        assert f.status == "confirmed" and f.bytes == 400 * 8
    assert {f.details["out_of_place"] for f in got} == {"mul", "add"}
    assert any("torch.mul(edge_index[1], ..., out=idx[1:])" in f.message for f in got)


def test_the_out_form_gives_the_same_values_without_the_copy():
    """What the fix claims, against the profiler: the `out=` spelling drops the region's `copy_`."""
    ei = torch.randint(0, 100, (2, 400))

    def copied():
        idx = ei.new_empty(401)
        idx[0] = -1
        idx[1:] = ei[1]
        idx[1:].mul_(100).add_(ei[0])
        return idx

    def written():
        idx = ei.new_empty(401)
        idx[0] = -1
        torch.mul(ei[1], 100, out=idx[1:]).add_(ei[0])
        return idx

    assert torch.equal(copied(), written())
    counts = []
    for f in (copied, written):
        with profile(record_shapes=True) as p:
            f()
        counts.append([e.input_shapes[0] for e in p.events() if e.name == "aten::copy_"])
    assert [400] in counts[0] and [400] not in counts[1]


def test_a_float_tensor_of_an_fx_trace_is_left_alone():
    """fx values carry no requires_grad: a float region may need a gradient there, so nothing is said."""
    import fxlint

    class M(torch.nn.Module):
        def forward(self, x):
            y = torch.zeros(4, 8)
            y[1:] = x[1:]
            y[1:].mul_(2)
            return y

    gm = torch.fx.symbolic_trace(M())
    assert findings(fxlint.lint(gm, (torch.randn(4, 8),), select=["FXL116"]), "FXL116") == []


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    out = rule_output("FXL116")
    assert reported_lines(out, "FXL116") == set(marked_lines("FXL116", "positive"))
    assert out == snapshot
