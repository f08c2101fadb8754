"""fxlint.canon.text: one rendering of bytes, shapes, slices, permutes and operands in every message."""

from __future__ import annotations

import re

import pytest
import sympy
import torch
import torch.nn as nn

from fxlint.canon import CanonNode
from fxlint.capture.graphs import capture
from fxlint.util.source import Location
from fxlint.tensor.info import TensorInfo
from fxlint.canon.text import (
    bytes_text,
    call_text,
    layout_text,
    line_of,
    operand_name,
    permute_text,
    shape_text,
    slice_text,
    step_text,
    strides_text,
)


def test_bytes_known_symbolic_and_unknown():
    assert bytes_text(6291456) == "6.3 MB"
    assert bytes_text(128) == "128 B"
    assert bytes_text(0) == "0 B"
    s0 = sympy.Symbol("s0", positive=True, integer=True)
    assert bytes_text(4 * s0) == "4*s0 bytes"  # a formula reads as bytes, never "4*s0 B"
    assert bytes_text(sympy.Integer(2000)) == "2.0 kB"  # a symbolic expression that is a number
    assert bytes_text(None) == "an unknown number of bytes"


def test_shapes_and_strides_are_python_tuples():
    t = TensorInfo.from_tensor(torch.empty(2, 3).t())
    assert shape_text((2, 3)) == "(2, 3)"
    assert shape_text((5,)) == "(5,)"  # a 1-tuple keeps its comma, for shapes and strides alike
    assert shape_text(()) == "()"
    assert shape_text(None) == "?"
    assert shape_text(t) == "(3, 2)" and strides_text(t) == "(1, 3)"
    assert strides_text(TensorInfo.from_tensor(torch.empty(5))) == "(1,)"
    assert strides_text(None) == "?"
    assert layout_text(t) == "float32 (3, 2) with strides (1, 3)"


@pytest.mark.parametrize("args,size,text", [
    ((0, None, 2), None, "::2"),
    ((1, 6, 2), None, "1:6:2"),
    ((None, None, None), None, ":"),
    ((0, 8, 2), 8, "::2"),  # runs to the end of a dim of 8
    ((0, 7, 2), 8, "::2"),  # 0, 2, 4, 6: the next element (8) is past the end anyway
    ((0, 6, 2), 8, ":6:2"),
    ((2, "s0", 1), None, "2:s0"),  # a symbolic bound shows by name
])
def test_slices_as_people_write_them(args, size, text):
    assert slice_text(*args, size=size) == text


@pytest.mark.parametrize("dims,spelling,written,text", [
    ((1, 0), "t", None, ".t()"),
    ((1, 0), "T", None, ".T"),
    ((0, 2, 1), "mT", None, ".mT"),
    ((0, 1, 3, 2), "transpose", (-2, -1), ".transpose(-2, -1)"),  # as written
    ((0, 1, 3, 2), "transpose", (2, 3), ".transpose(2, 3)"),
    ((0, 1, 3, 2), "swapaxes", None, ".transpose(2, 3)"),
    ((0, 2, 1), "permute", None, ".permute(0, 2, 1)"),  # a permute the user wrote stays one
    ((1, 2, 0), "movedim", None, ".permute(1, 2, 0)"),
    ((0, 2, 1), None, None, ".transpose(1, 2)"),  # a suggestion: the shortest call
    ((2, 0, 1), None, None, ".permute(2, 0, 1)"),
    (None, "transpose", None, ".permute(...)"),
])
def test_one_permute_rendering(dims, spelling, written, text):
    assert permute_text(dims, spelling, written) == text


def _texts(view, op="permute"):
    return [call_text(n) for n in view.ops(op)]


def test_calls_read_as_the_user_wrote_them_in_every_origin():
    class M(nn.Module):
        def forward(self, x):
            return (x.mT + 1, x.transpose(-2, -1) + 1, x.permute(0, 2, 1) + 1, torch.transpose(x, 1, 2) + 1,
                    x[:, ::2] + 1)

    x = torch.randn(2, 4, 6)
    dynamo = capture(M(), (x,)).views[0]
    assert _texts(dynamo) == [".mT", ".transpose(-2, -1)", ".permute(0, 2, 1)", ".transpose(1, 2)"]
    assert [step_text(n) for n in dynamo.ops("permute")] == _texts(dynamo)  # one rendering in messages
    assert _texts(dynamo, "slice") == ["[:, ::2]"]
    # export records .mT as aten.transpose(x, -2, -1): shown as that transpose, not as a permute
    export = capture(torch.export.export(M(), (x,))).views[0]
    assert _texts(export)[1:] == [".transpose(-2, -1)", ".permute(0, 2, 1)", ".transpose(1, 2)"]
    assert _texts(export)[0] in (".mT", ".transpose(-2, -1)")
    fx = capture(torch.fx.symbolic_trace(M()), (x,)).views[0]
    assert _texts(fx) == _texts(dynamo)


def _node(kind: str, name: str, param_name: str | None = None, line: int | None = None) -> CanonNode:
    loc = Location("model.py", line, "forward", None) if line is not None else None
    return CanonNode(node=None, name=name, kind=kind, op="placeholder", spelling="", param_name=param_name,
                     location=loc)  # type: ignore[arg-type]


def test_operands_by_the_users_names_and_places():
    assert operand_name(_node("input", "l_x_", "L['x']")) == "x"
    assert operand_name(_node("input", "l_tokens_")) == "tokens"
    assert operand_name(_node("parameter", "p", "encoder.proj.weight")) == "encoder.proj.weight"
    assert operand_name(_node("constant", "c", "L['mask']")) == "mask"  # Dynamo's source name, any kind
    assert operand_name(_node("op", "mul_1")) == "mul_1"
    assert operand_name(None) == "x"
    assert line_of(_node("op", "mul_1", line=12)) == "line 12"
    assert line_of(_node("op", "mul_1")) == "node mul_1"
    assert line_of(None) == "?"


def test_every_rule_shows_a_symbolic_size_as_a_formula_in_bytes():
    """FXL401 used to say ``16*s0 B`` where the other copy rules said ``16*s0 bytes``."""
    from tests.test_dynamic_shapes import Copies, _fxlint, _run

    session, _ = _run(Copies(), _fxlint, [3, 5])
    found = {f.code: f for f in session.findings}
    assert {"FXL401", "FXL101", "FXL103"} <= set(found)
    for f in found.values():
        assert f.bytes is None and f.bytes_expr
        assert f"{f.bytes_expr} bytes" in f.message, f.message
        assert not re.search(r"\d B\b", f.message), f.message


def test_line_from_names_the_file_when_it_differs():
    from types import SimpleNamespace

    from fxlint.canon.text import line_from

    def node(file, line):
        return SimpleNamespace(location=SimpleNamespace(file=file, line=line), name="n")

    here = node("/site-packages/diffusers/models/transformers/transformer_2d.py", 480)
    assert line_from(node("/site-packages/diffusers/models/attention_processor.py", 2775), here) == \
        "attention_processor.py:2775"
    assert line_from(node("/site-packages/diffusers/models/transformers/transformer_2d.py", 469), here) == "line 469"
    assert line_from(SimpleNamespace(location=None, name="view_3"), here) == "node view_3"
