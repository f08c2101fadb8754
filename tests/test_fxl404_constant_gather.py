"""FXL404 constant-gather: a gather from a parameter/buffer table with constant indices, in inference."""

from __future__ import annotations


import torch

import fxlint
from tests.copy_helpers import findings, line_with
from tests.rule_snapshots import lint_fixture, load_fixture

FIXTURE = load_fixture("FXL404")


def _lint(train: bool, confirm: bool = False):
    return lint_fixture("FXL404", train=train, confirm=confirm)


def test_positives_in_inference_confirmed_with_the_gathered_bytes():
    got = sorted(findings(_lint(False, confirm=True), "FXL404"), key=lambda f: f.line)
    fwd = FIXTURE.Fixture.forward
    assert [f.line for f in got] == [line_with(fwd, "# positive: arange"), line_with(fwd, "# positive: a buffer"),
                                     line_with(fwd, "# positive: a table computed"),
                                     line_with(fwd, "# positive: torch.gather")]
    assert [f.bytes for f in got] == [8 * 8 * 8 * 4, 64 * 2 * 4, 8 * 8 * 8 * 4, 2 * 8 * 8]  # the gathered tensors
    assert all(f.status == "confirmed" and f.severity.value == "info" for f in got), [f.status for f in got]
    assert got[0].details["table"] == "rel_pos_h" and "once" in got[0].fix


def test_silent_in_training():
    assert findings(_lint(True), "FXL404") == []


def test_the_fix_gives_the_same_values_without_the_gather():
    """Computed once (a buffer), the model's output is the same and the audit sees no gather on the line."""
    model, (q, i) = FIXTURE.make()
    with torch.no_grad():
        cached = model.table[model.index.view(-1)].view(8, 8, -1)
        gathered = [c for c in fxlint.audit(lambda: model.table[model.index.view(-1)]).copies if c.kind == "gather"]
        assert gathered and gathered[0].bytes == 64 * 2 * 4
        torch.testing.assert_close(cached, model.table[model.index.view(-1)].view(8, 8, -1))


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    from tests.rule_snapshots import marked_lines, reported_lines, rule_output

    out = rule_output("FXL404", train=False)
    assert reported_lines(out, "FXL404") == set(marked_lines("FXL404", "positive"))
    assert out == snapshot
