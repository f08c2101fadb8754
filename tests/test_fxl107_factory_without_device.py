"""FXL107 factory-without-device: CPU factories moved to the model's device, quiet on an all-CPU run.

This machine has no accelerator: the model's tensors live on `meta`, which stands for "another
device". The audit records the CPU -> meta move as a device copy of the same size, so the findings
are confirmed. A CPU index handed to a kernel on another device is copied by that kernel on a GPU;
meta kernels copy nothing, so that case is checked without the audit (see the last test).
"""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

import fxlint
from tests.copy_helpers import Expect, check_negative, check_positive, findings

META = torch.randn(4, 8, device="meta")
CPU = torch.randn(4, 8)


def arange_to(x):
    return x + torch.arange(8, dtype=x.dtype).to(x.device)  # arange moved


def zeros_to_other(x):
    return x * torch.ones(4, 8).to(x)  # ones moved with .to(tensor)


def tensor_literal(x):
    return x + torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]).to(x.device)  # a literal moved


def converted_then_moved(x):
    return x + (torch.arange(8).float() / 8).to(x.device)  # float() and / on the CPU, then moved


def two_lines(x):
    pos = torch.linspace(0, 1, 8)  # built here
    return x * pos.to(x.device)  # moved here


class PosEmb(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(16, 8)

    def forward(self, x):
        return x + self.emb(torch.arange(x.shape[0]).to(x.device))  # the OCR seed's line


POSITIVE = [
    ("arange().to(x.device)", arange_to, (META,), [Expect("# arange moved", 32)]),
    ("ones().to(x)", zeros_to_other, (META,), [Expect("# ones moved", 128)]),
    ("tensor([...]).to(device)", tensor_literal, (META,), [Expect("# a literal moved", 32)]),
    ("converted on the CPU, then moved", converted_then_moved, (META,),
     [Expect("# float() and / on the CPU", 32 + 32)]),  # the move and the CPU float() copy, same line
    ("built and moved on two lines", two_lines, (META,), [Expect("# moved here", 32)]),
    ("positional embedding", PosEmb().to("meta"), (META,), [Expect("# the OCR seed's line", 32)]),
]


@pytest.mark.parametrize("label,fn,inputs,expected", POSITIVE, ids=[p[0] for p in POSITIVE])
def test_positive(label, fn, inputs, expected):
    check_positive(fn, inputs, "FXL107", expected)


NEGATIVE = [
    ("everything on the CPU", arange_to, (CPU,)),
    ("everything on the CPU, literal", tensor_literal, (CPU,)),
    ("built on the device", lambda x: x + torch.arange(8, device=x.device, dtype=x.dtype), (META,)),
    ("a 0-dim CPU scalar is passed as a scalar", lambda x: x * torch.tensor(2.0), (META,)),
    ("the model on the CPU", PosEmb(), (CPU,)),
]


@pytest.mark.parametrize("label,fn,inputs", NEGATIVE, ids=[n[0] for n in NEGATIVE])
def test_negative(label, fn, inputs):
    check_negative(fn, inputs, "FXL107")


def test_message_fix_and_details():
    [f] = findings(fxlint.lint(two_lines, (META,), select="FXL107"), "FXL107")
    assert "`torch.linspace(...)`" in f.message and "is built on the CPU" in f.message
    assert f"at line {f.details['factory_line']}" in f.message and "copied to meta" in f.message
    assert "device=x.device" in f.fix
    assert f.details["kind"] == "linspace" and f.details["target_device"] == "meta" and f.details["via"] == "to"
    [g] = findings(fxlint.lint(converted_then_moved, (META,), select="FXL107"), "FXL107")
    assert "dtype=torch.float32" in g.fix and g.details["conversions"]


def test_through_torch_export_the_factory_device_is_explicit_cpu():
    m = PosEmb().to("meta")
    [f] = findings(fxlint.lint(torch.export.export(m, (META,)), select="FXL107"), "FXL107")
    assert f.bytes == 32 and f.details["kind"] == "arange"
    assert findings(fxlint.lint(torch.export.export(PosEmb(), (CPU,)), select="FXL107"), "FXL107") == []


def test_cpu_index_into_another_device_is_reported_but_meta_cannot_show_the_copy():
    fn = lambda x: x[:, torch.arange(0, 8, 3)]  # noqa: E731 - a CPU index into a meta tensor
    report = fxlint.lint(fn, (META,), select="FXL107", confirm=True)
    [f] = findings(report, "FXL107")
    assert f.details["via"] == "index" and f.bytes == 3 * 8
    # on a GPU the index kernel copies the index host-to-device; a meta kernel copies nothing, so the
    # audit on this machine cannot back the finding
    assert f.status == "refuted"


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    """Every positive of the fixture reported with its exact text (CPU conversions on the way counted, a
    factory built on one line and moved on another); no negative reported."""
    from tests.rule_snapshots import rule_output

    out = rule_output("FXL107")
    assert out.count("FXL107 warning") == 7 and "negative" not in out
    assert out == snapshot
