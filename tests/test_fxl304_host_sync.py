"""FXL304 host-sync: a `.item()` scale, a loss rebuilt from `.item()`, logging that
cuts nothing, `float()`/`.tolist()`, syncs kept in the graph, the backend's
one-graph view, and inference staying quiet; every verdict against autograd."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

import fxlint
from tests._grad import check_verdicts
from tests.conftest import line_of


class ItemScale(nn.Module):
    """Held-out style: a gate's mean, taken with `.item()`, scales the output."""

    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(4, 8)
        self.gate = nn.Linear(8, 1)
        self.dec = nn.Linear(8, 3)

    def forward(self, x):
        h = torch.relu(self.enc(x))
        scale = self.gate(h).mean().item()  # ITEM-SCALE
        return self.dec(h) * scale


X = torch.randn(5, 4)


def test_item_scale_names_the_parameters_that_never_train():
    m = ItemScale()
    report = fxlint.lint(m, X)
    [f] = report.by_code("FXL304")
    assert f.severity == "error" and f.line == line_of(__file__, "# ITEM-SCALE")
    assert f.details["lost_parameters"] == ["gate.weight", "gate.bias"]
    assert set(f.details["cut_parameters"]) == {"enc.weight", "enc.bias", "gate.weight", "gate.bias"}
    assert "gate.weight" in f.message and "enc.weight" in f.message
    assert "FXL501" in report.codes()  # the graph break itself
    grads = check_verdicts(report, m, X)
    assert grads["gate.weight"] == "none" and grads["enc.weight"] == "nonzero"


class Normalised(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(4, 8)

    def forward(self, x):
        y = self.net(x)
        return y / y.norm().item()  # NORM-ITEM


def test_normalisation_by_a_python_number_is_a_partial_cut():
    m = Normalised()
    report = fxlint.lint(m, X)
    [f] = report.by_code("FXL304")
    assert f.severity == "warning" and f.line == line_of(__file__, "# NORM-ITEM")
    assert f.details["lost_parameters"] == [] and f.details["fraction_cut"]["net.weight"] == 0.5
    check_verdicts(report, m, X)


class Logged(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(4, 1)

    def forward(self, x):
        loss = self.net(x).pow(2).mean()
        value = loss.item()  # a read-out: the tensor itself is returned
        del value
        return loss


def test_reading_out_a_value_that_is_returned_cuts_nothing():
    report = fxlint.lint(Logged(), X)
    assert report.by_code("FXL304") == []
    assert report.by_code("FXL501")  # still a graph break


class Rebuilt(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Linear(4, 1)
        self.aux = nn.Linear(4, 1)

    def forward(self, x):
        main_loss = self.main(x).pow(2).mean()
        aux_loss = self.aux(x).abs().mean()
        return main_loss + 0.5 * float(aux_loss)  # FLOAT-AUX


def test_loss_rebuilt_with_float():
    m = Rebuilt()
    report = fxlint.lint(m, X)
    [f] = report.by_code("FXL304")
    assert f.line == line_of(__file__, "# FLOAT-AUX") and f.details["lost_parameters"] == ["aux.weight", "aux.bias"]
    grads = check_verdicts(report, m, X)
    assert grads["aux.weight"] == "none" and grads["main.weight"] == "nonzero"


def test_tolist():
    class ToList(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Linear(4, 2)

        def forward(self, x):
            a, b = self.w(x).mean(0).tolist()  # TOLIST
            return x * a + b

    [f] = fxlint.lint(ToList(), X).by_code("FXL304")
    assert f.severity == "error" and f.line == line_of(__file__, "# TOLIST")
    assert f.details["lost_parameters"] == ["w.weight", "w.bias"]


def test_sync_kept_in_the_graph_is_followed_too():
    import torch._dynamo.config as dynamo_config

    with dynamo_config.patch(capture_scalar_outputs=True):
        m = ItemScale()
        report = fxlint.lint(m, X)
    assert report.graph_breaks == 0
    [f] = report.by_code("FXL304")
    assert f.severity == "error" and f.line == line_of(__file__, "# ITEM-SCALE")
    assert f.details["lost_parameters"] == ["gate.weight", "gate.bias"]
    check_verdicts(report, m, X)


def test_inference_is_quiet():
    report = fxlint.lint(ItemScale().eval(), X)
    assert report.by_code("FXL304") == [] and report.by_code("FXL501")


def test_backend_names_the_parameters_without_a_verdict():
    torch._dynamo.reset()
    compiled = torch.compile(ItemScale(), backend="fxlint", options={"inner": "eager"})
    with fxlint.collect() as session:
        compiled(X)
    [f] = [f for f in session.findings if f.code == "FXL304"]
    # one graph at a time, before anything runs: no claim that gate.* never train
    assert f.severity == "warning" and f.details["lost_parameters"] == []
    assert {"gate.weight", "gate.bias"} <= set(f.details["cut_parameters"])
    assert f.line == line_of(__file__, "# ITEM-SCALE") and "fxlint.lint" in f.message


@pytest.mark.parametrize("expression,receiver", [
    ("aux_loss.item()", "aux_loss"), ("float(loss)", "loss"), ("y.sum().item()", None),
    ("x.cpu().item()", "x"), ("not valid (", None),
])
def test_receiver_of_the_sync(expression, receiver):
    from fxlint.passes.fxl304_host_sync import _receiver

    assert _receiver(expression) == receiver


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    """Every positive of the fixture reported with its exact text, no negative reported; autograd settles which parameters never train."""
    from tests.rule_snapshots import marked_lines, reported_lines, rule_output

    out = rule_output("FXL304")
    assert reported_lines(out, "FXL304") == set(marked_lines("FXL304", "positive")) and "# negative" not in out
    assert out.count("FXL304 error") == 1 and out.count("FXL304 warning") == 1
    assert out == snapshot


def test_fixture_verdicts_agree_with_autograd():
    """Who never trains and who still learns, on the fixture, as autograd sees it."""
    from tests.rule_snapshots import load_fixture

    model, inputs = load_fixture("FXL304").make()
    report = fxlint.lint(model, inputs, select="FXL304", config=False)
    grads = check_verdicts(report, model, inputs)
    assert grads["gate.weight"] == "none" and grads["net.weight"] == "nonzero"
