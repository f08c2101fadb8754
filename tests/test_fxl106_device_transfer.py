"""FXL106 device-transfer: moves that change the device, in the graph.

This machine has no accelerator: the `meta` device stands for "another device". A CPU tensor moved
to `meta` is a device copy for the fake tensors and for the profiler alike (kind "device"), so those
findings are confirmed by the audit. Moves *from* meta to the CPU cannot run (meta has no data):
they are checked on the exported graph only, without the audit.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

import fxlint
from tests.copy_helpers import Expect, Fn, check_negative, check_positive, findings

X = torch.randn(4, 8)
META = torch.randn(4, 8, device="meta")


def input_moved(x):
    return x.to("meta") * 2  # moves an input


def like_other(x, other):
    return x.to(other) + other  # .to(tensor) spelling


def to_other_device(x, other):
    return x.to(other.device) * other  # .to(other.device)


class Table(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("table", torch.randn(8, 8))

    def forward(self, x):
        return x @ self.table.to(x.device)  # a buffer moved every call


POSITIVE = [
    ("input moved", input_moved, (X,), [Expect("# moves an input", 128)]),
    (".to(other)", like_other, (X, META), [Expect("# .to(tensor) spelling", 128)]),
    (".to(other.device)", to_other_device, (X, META), [Expect("# .to(other.device)", 128)]),
    ("buffer moved", Table(), (META,), [Expect("# a buffer moved", 256)]),
]


@pytest.mark.parametrize("label,fn,inputs,expected", POSITIVE, ids=[p[0] for p in POSITIVE])
def test_positive(label, fn, inputs, expected):
    [f] = check_positive(fn, inputs, "FXL106", expected)
    audit = fxlint.audit(fn, inputs)
    assert [c.kind for c in audit.copies if c.line == f.line and c.avoidable] == ["device"]


NEGATIVE = [
    ("to(x.device) on one device", lambda x: x.to(x.device) * 2, (X,)),
    ("cpu() on the CPU", lambda x: x.cpu() + 1, (X,)),
    ("dtype only", lambda x: x.to(torch.float16) + 1, (X,)),
    ("meta to meta", lambda x: x.to("meta") * 2, (META,)),
    ("a CPU factory moved is FXL107's", lambda x: x + torch.arange(8).float().to(x.device), (META,)),
]


@pytest.mark.parametrize("label,fn,inputs", NEGATIVE, ids=[n[0] for n in NEGATIVE])
def test_negative(label, fn, inputs):
    check_negative(fn, inputs, "FXL106")


def test_parameter_moved_in_forward_names_it_and_counts_the_gradient_copy_back():
    lin = nn.Linear(8, 8)

    class Offload(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lin

        def forward(self, x):
            w = self.lin.weight.to(x.device)
            return x @ w.t()

    [f] = findings(fxlint.lint(Offload(), (META,), select="FXL106"), "FXL106")
    assert "the parameter `lin.weight`" in f.message and "move the model once" in f.fix
    assert "register_buffer" not in f.fix  # it is registered already: the advice is to move the model
    # backward would copy the weight's gradient back (ToCopyBackward0); meta cannot run it, so the
    # prediction is checked against the rule's own accounting: the parameter's size
    assert f.details["backward_bytes"] == lin.weight.numel() * 4 and "copied back in backward" in f.message


def test_cpu_and_cuda_spellings_on_an_exported_graph():
    class M(nn.Module):
        def forward(self, x):
            return x.cpu() * 2  # meta -> cpu

    ep = torch.export.export(M(), (META,))
    [f] = findings(fxlint.lint(ep, select="FXL106"), "FXL106")
    assert f.details["src_device"] == "meta" and f.details["dst_device"] == "cpu" and f.bytes == 128
    assert "pass the input on cpu" in f.fix


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    """Every positive of the fixture reported with its exact text (a parameter's gradient copied back); no
    negative reported."""
    from tests.rule_snapshots import rule_output

    out = rule_output("FXL106")
    assert out.count("FXL106 warning") == 5 and "negative" not in out
    assert out == snapshot
