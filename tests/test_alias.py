"""fxlint.canon.alias: one alias and mutation analysis for the rules and the rewrites.

What shares storage for sure (view ops), what may share memory (maybe-views, pass-throughs, in-place
results), who writes in place (in-place ops, setitem, ``out=``), what leaves the graph, and the
hazards a rewrite that turns a copy into a view must refuse.
"""

from __future__ import annotations

import pytest
import torch

from fxlint.canon.alias import (
    Aliasing,
    escapes,
    is_mutated,
    may_require_grad,
    mutated_after,
    view_base,
    view_family,
    writes_after,
)
from fxlint.canon import GraphView
from fxlint.capture.graphs import capture
from fxlint.rewrite.safety import view_hazard
from tests.test_canon import Fn


class Fn2(Fn):
    def forward(self, x, y):
        return self.fn(x, y)


def view_of(fn, *inputs, origin: str = "dynamo") -> GraphView:
    if origin == "dynamo":
        [view] = capture(fn, inputs).views
        return view
    module = (Fn if len(inputs) == 1 else Fn2)(fn)
    if origin == "export":
        return capture(torch.export.export(module, inputs)).views[0]
    return capture(torch.fx.symbolic_trace(module), inputs).views[0]


def one(view: GraphView, op: str):
    [n] = view.ops(op)
    return n


@pytest.mark.parametrize("origin", ["dynamo", "export", "fx"])
def test_views_through_permute_slice_and_expand_share_storage_maybe_views_do_not_count(origin):
    def f(x):
        a = x * 2
        p = a.permute(1, 0)
        s = p[:, ::2]
        e = a.expand(3, 4, 6)
        r = a.reshape(-1)  # may or may not copy: not certainly the same storage
        c = a.clone()
        return s + 1, e + 1, r + 1, c + 1

    view = view_of(f, torch.randn(4, 6), origin=origin)
    a, p, s, e, r, c = one(view, "mul"), one(view, "permute"), one(view, "slice"), one(view, "expand"), \
        one(view, "reshape"), one(view, "clone")
    assert view_base(s) is a and view_base(e) is a and view_base(a) is a
    assert view_family(s) == view_family(a) == {a, p, s, e}
    assert r not in view_family(a) and c not in view_family(a)
    aliasing = Aliasing(view)
    assert aliasing.shares_memory(s, e) and aliasing.shares_memory(r, a)  # reshape may hand back its input
    assert not aliasing.shares_memory(c, a)
    assert aliasing.group(s) == [n for n in view.nodes if n in {a, p, s, e, r}]


def _setitem(b):
    b[1] = 0


def _copy(b):
    b[1].copy_(torch.zeros(4))


# export functionalises in-place ops; symbolic_trace cannot trace setitem on a proxy
@pytest.mark.parametrize("origin,write,op", [("dynamo", _setitem, "setitem"), ("fx", _copy, "copy_")])
def test_in_place_writers_and_setitem_are_found_after_a_node(origin, write, op):
    def f(x):
        a = x * 2
        v = a[0]
        b = a.clone()
        v.add_(1)  # writes into a through its view
        write(b)  # writes into b (or a view of it)
        return a, b

    view = view_of(f, torch.randn(3, 4), origin=origin)
    a, b = one(view, "mul"), one(view, "clone")
    add_, other = one(view, "add_"), one(view, op)
    assert view.writers == [add_, other]
    assert mutated_after(view_family(a), a, view) == [add_]
    assert mutated_after(view_family(a), add_, view) == []  # only writes after the node count
    assert list(writes_after(view_family(a) | view_family(b), a, view)) == [(add_, add_.mutates[0]),
                                                                            (other, other.mutates[0])]
    assert view_base(other.mutates[0]) is b
    assert is_mutated(view_family(b), view) and is_mutated(view_family(a), view)
    [x] = [n for n in view.nodes if n.kind == "input"]
    assert not is_mutated({x}, view)
    assert Aliasing(view).shares_memory(add_, a)  # an in-place op returns what it wrote


def test_out_argument_is_a_write():
    def f(x, buf):
        torch.add(x, 1, out=buf)
        return buf * 2

    view = view_of(f, torch.randn(4), torch.empty(4), origin="fx")
    [w] = view.writers
    assert [m.name for m in w.mutates] == ["y"]  # the second input


@pytest.mark.parametrize("origin", ["dynamo", "export", "fx"])
def test_outputs_that_alias_inputs_escape(origin):
    def f(x):
        t = x.t()  # a view of the input, returned
        y = (x * 2)[:, :2]  # a view of an intermediate, returned
        z = x * 3  # read inside only
        return t, y, z.sum()

    view = view_of(f, torch.randn(4, 6), origin=origin)
    t = one(view, "permute")
    mul3 = [n for n in view.ops("mul") if n is not view_base(one(view, "slice"))][0]
    assert escapes(t, view) and view_base(t).kind == "input"
    assert escapes(view_base(one(view, "slice")), view)  # its view is returned: so is its storage
    assert not escapes(mul3, view)


def test_may_require_grad_follows_autograd_and_no_grad_views():
    def f(x, idx):
        with torch.no_grad():
            g = x * 2  # computed without autograd: does not require grad
            v = x[:, :2]  # a view made under no_grad still requires grad through x
        return g + 1, v + 1, idx + 1

    x = torch.randn(3, 4, requires_grad=True)
    view = view_of(f, x, torch.arange(3))
    g, v = one(view, "mul"), one(view, "slice")
    idx = [n for n in view.nodes if n.kind == "input" and n.tensor.dtype == torch.int64][0]
    assert may_require_grad(view, v) and not may_require_grad(view, g)
    assert not may_require_grad(view, idx)  # integers never require grad


def _hazard(fn, *inputs):
    view = view_of(fn, *inputs)
    node = one(view, "index")
    return view_hazard(view, node, node.input)


def test_view_hazards_a_copy_to_view_rewrite_must_refuse():
    x = torch.randn(4, 8)
    assert _hazard(lambda x: x[:, [0, 2, 4]] * 2, x) is None

    def written_result(x):
        y = (x * 2)[:, [0, 2, 4]]
        y.add_(1)
        return y

    assert "the result is written in place afterwards" in _hazard(written_result, x)

    def written_source(x):
        a = x * 2
        y = a[:, [0, 2, 4]]
        a.mul_(3)
        return y, a

    assert "the indexed tensor is written in place afterwards" in _hazard(written_source, x)
    assert "alias the graph input `x`" in _hazard(lambda x: x[:, [0, 2, 4]], x)

    def two_outputs(x):
        a = x * 2
        return a, a[:, [0, 2, 4]]

    assert "as a view it would alias the output `" in _hazard(two_outputs, x)

    def under_no_grad(x):
        with torch.no_grad():
            y = x[:, [0, 2, 4]]
        return y * 2

    assert "autograd off" in _hazard(under_no_grad, torch.randn(4, 8, requires_grad=True))
