"""The canonical view: one op name per operation whatever the spelling, from
Dynamo, symbolic_trace and torch.export graphs alike."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from fxlint.canon import GraphView
from fxlint.capture.graphs import capture


def dynamo_view(fn, *inputs) -> GraphView:
    cap = capture(fn, inputs)
    assert len(cap.views) == 1
    return cap.views[0]


def export_view(module: nn.Module, *inputs) -> GraphView:
    return capture(torch.export.export(module, inputs)).views[0]


def fx_view(module: nn.Module, *inputs) -> GraphView:
    return capture(torch.fx.symbolic_trace(module), inputs).views[0]


class Fn(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


PERMUTE_SPELLINGS = [
    ("x.T", lambda x: x.T, (1, 0)),
    ("x.mT", lambda x: x.mT, (1, 0)),
    ("x.t()", lambda x: x.t(), (1, 0)),
    ("torch.transpose", lambda x: torch.transpose(x, 0, 1), (1, 0)),
    ("x.transpose(-1,-2)", lambda x: x.transpose(-1, -2), (1, 0)),
    ("x.permute", lambda x: x.permute(1, 0), (1, 0)),
    ("torch.permute", lambda x: torch.permute(x, (1, 0)), (1, 0)),
    ("x.swapaxes", lambda x: x.swapaxes(0, 1), (1, 0)),
    ("torch.movedim", lambda x: torch.movedim(x, 0, 1), (1, 0)),
]


@pytest.mark.parametrize("label,fn,dims", PERMUTE_SPELLINGS, ids=[p[0] for p in PERMUTE_SPELLINGS])
@pytest.mark.parametrize("origin", ["dynamo", "fx", "export"])
def test_every_transpose_spelling_is_one_permute(label, fn, dims, origin):
    x = torch.randn(3, 4)
    if origin == "dynamo":
        view = dynamo_view(lambda x: fn(x) + 1, x)
    elif origin == "fx":
        view = fx_view(Fn(lambda x: fn(x) + 1), x)
    else:
        view = export_view(Fn(lambda x: fn(x) + 1), x)
    perms = view.ops("permute")
    assert len(perms) == 1, [(n.op, n.spelling) for n in view]
    assert perms[0].args["dims"] == dims
    assert perms[0].tensor.shape == (4, 3)
    assert perms[0].tensor.stride == (1, 4)
    assert perms[0].input.kind == "input"


def test_permute_of_3d_tensor_and_movedim_lists():
    x = torch.randn(2, 3, 4)
    view = dynamo_view(lambda x: (x.permute(2, 0, 1) + 1, x.mT + 1, torch.movedim(x, (0, 1), (2, 0)) + 1), x)
    dims = [n.args["dims"] for n in view.ops("permute")]
    assert dims == [(2, 0, 1), (0, 2, 1), (1, 2, 0)]
    ref = torch.movedim(x, (0, 1), (2, 0))
    assert ref.shape == x.permute(1, 2, 0).shape


def test_getitem_decoding_slices_ints_none_ellipsis_lists_and_tensors():
    x = torch.randn(4, 8, 6)
    idx = torch.tensor([1, 2])

    def f(x, idx):
        a = x[..., None, 1:3]
        b = x[:, [0, 2, 4]]
        c = x[1, :, ::2]
        d = x[idx]
        e = x[x > 0]
        return a, b, c, d, e

    view = capture(f, (x, idx)).views[0]
    by_line = {n.name: n for n in view}
    slices = view.ops("slice")
    index = view.ops("index")
    kinds = [[i.kind for i in n.args["index"].items] for n in slices]
    assert ["slice", "slice", "newaxis", "slice"] in kinds  # x[..., None, 1:3]
    assert ["int", "slice", "slice"] in kinds  # x[1, :, ::2]
    adv = {n.args["index"].advanced[0].kind for n in index}
    assert "tensor" in adv
    lists = [n for n in index if n.args["index"].advanced[0].values == (0, 2, 4)]
    assert len(lists) == 1 and lists[0].args["index"].advanced[0].dim == 1
    assert by_line  # the view keeps every node by name


def test_setitem_has_the_canonical_subscript_of_getitem():
    """A subscript write gets the ``IndexSpec`` a read of the same subscript gets (``Ellipsis``
    expanded, trailing dims padded), the subscript as written, and its value; the region it names
    and its shape are read from the spec, basic or advanced alike."""
    def f(x, m, y):
        x = x * 1
        r = x[:, 1::1] + 0
        x[..., 1:] = y
        x[m] = 2.0
        x[0, None, :3] = r[0, :3]
        return x

    x, m, y = torch.randn(4, 6), torch.randn(4, 6) > 0, torch.randn(4, 5)
    view = dynamo_view(f, x, m, y)
    writes = view.ops("setitem")
    assert len(writes) == 3, [(n.op, n.spelling) for n in view]
    basic, mask, third = (w.args["index"] for w in writes)
    assert [i.kind for i in basic.items] == ["slice", "slice"] and basic.style == "setitem"
    assert basic.written == "[..., 1:]" and basic.text == "[..., 1:]"
    assert writes[0].args["value"].kind == "input" and writes[1].args["value"] == 2.0
    [read] = [n for n in view.ops("slice") if n.input is writes[0].input]
    assert read.args["index"].written == "[:, 1::1]"
    assert read.args["index"].same_region(basic)  # x[:, 1::1] and x[..., 1:] name the same elements
    assert basic.region_shape((4, 6)) == (4, 5)
    assert mask.is_advanced and mask.advanced[0].kind == "mask" and mask.region_shape((4, 6)) is None
    assert [i.kind for i in third.items] == ["int", "newaxis", "slice"] and third.region_shape((4, 6)) == (1, 3)
    assert not third.same_region(basic)


def test_index_select_and_aten_index_share_the_index_op():
    x = torch.randn(4, 8)
    m = Fn(lambda x: (x.index_select(1, torch.arange(2, 6)), x[:, [1, 3]]))
    for view in (dynamo_view(m, x), export_view(m, x)):
        idx = view.ops("index")
        assert len(idx) == 2, [(n.op, n.spelling) for n in view]
        values = sorted(view.const_ints(i.args["index"].advanced[0].index) or i.args["index"].advanced[0].values
                        for i in idx)
        assert values == [(1, 3), (2, 3, 4, 5)]


def test_roles_of_inputs_parameters_and_buffers_in_every_origin():
    m = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))
    x = torch.randn(3, 4)
    for view in (dynamo_view(m, x), export_view(m, x), fx_view(m, x)):
        kinds = {n.param_name: n.kind for n in view if n.kind in ("parameter", "buffer")}
        if view.origin == "fx":  # symbolic_trace keeps leaf modules as call_module nodes
            mods = [n for n in view if n.node.op == "call_module"]
            assert any("0.weight" in n.module_params for n in mods)
            continue
        assert kinds["0.weight"] == "parameter", kinds
        assert kinds["0.bias"] == "parameter"
        assert kinds["1.running_mean"] == "buffer"
        inputs = [n for n in view if n.kind == "input"]
        assert len(inputs) == 1


def test_values_locations_and_module_paths():
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(8, 8)

        def forward(self, x):
            return self.proj(x)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([Block(), Block()])

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x.t()

    view = dynamo_view(Net(), torch.randn(2, 8))
    linears = view.ops("linear")
    assert [n.module_path for n in linears] == ["layers.0.proj", "layers.1.proj"]
    # the user's line is the call in Block.forward, not torch/nn/modules/linear.py
    assert all(n.location.file == __file__ for n in linears)
    assert all("self.proj(x)" in n.location.code for n in linears)
    assert linears[0].args["weight"].param_name == "layers.0.proj.weight"
    assert view.ops("permute")[0].tensor.stride == (1, 8)


def test_dataflow_graph_and_mutation_and_grad_regions():
    def f(x, w):
        y = x @ w
        with torch.no_grad():
            z = y * 2
        y.add_(1)
        return y, z

    view = dynamo_view(f, torch.randn(2, 2), torch.randn(2, 2, requires_grad=True))
    g = view.graph
    mm = view.ops("matmul")[0]
    assert g.has_edge(mm.args["a"].name, mm.name)
    assert all(isinstance(n, str) for n in g.nodes)
    add_ = [n for n in view if n.mutates]
    assert add_ and add_[0].mutates[0] is mm
    mul = view.ops("mul")[0]
    assert mul.grad_enabled is False and mm.grad_enabled is True


def test_to_family_and_factories():
    def f(x):
        a = x.half().float()
        b = x.to(torch.float64)
        c = x.to("cpu")
        d = torch.arange(4) + torch.zeros(4, device=x.device)
        return a, b, c, d

    view = dynamo_view(f, torch.randn(4))
    tos = view.ops("to")
    assert [n.args["dtype"] for n in tos] == [torch.float16, torch.float32, torch.float64, None]
    assert tos[-1].args["device"] == "cpu"
    facts = {n.args["kind"]: n.args["device"] for n in view.ops("factory")}
    assert facts["arange"] is None and facts["zeros"] is not None
    assert view.const_ints(view.ops("factory")[0]) == (0, 1, 2, 3)


def test_positional_flags_of_to_are_non_blocking_then_copy():
    def f(x):
        return x.to(torch.float64, True), x.to(torch.float64, False, True), x.to("cpu", torch.float64, copy=True)

    view = dynamo_view(f, torch.randn(4))
    flags = [(n.args["non_blocking"], n.args["copy"]) for n in view.ops("to")]
    assert flags == [(True, False), (False, True), (False, True)]


def test_dynamic_shapes_keep_symbols_without_guards():
    def f(x):
        return x.t().reshape(-1)

    torch._dynamo.reset()
    x = torch.randn(5, 6)
    torch._dynamo.mark_dynamic(x, 0)
    view = dynamo_view(f, x)
    t = view.ops("permute")[0].tensor
    assert t.is_symbolic
    assert t.is_contiguous() is False  # decided without knowing the symbol


# --------------------------------------------------------------------------- grad mode


class GradModes(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b, self.c = nn.Linear(4, 4), nn.Linear(4, 4), nn.Linear(4, 4)

    def forward(self, x):
        with torch.no_grad():
            h = self.a(x)
        with torch.inference_mode():
            g = self.b(x)
        with torch.set_grad_enabled(False):
            k = self.c(x)
        return self.c(h) + k + g.sum().item() * 0


def _linear_modes(view):
    return [n.grad_enabled for n in view.ops("linear")]


def test_grad_modes_in_dynamo_including_inference_mode():
    cap = capture(GradModes(), (torch.randn(2, 4),))
    view = cap.views[0]
    assert _linear_modes(view) == [False, False, False, True]
    modes = [(n.args["style"], n.args["enabled"]) for n in view.ops("set_grad_enabled")]
    assert ("inference_mode", False) in modes and ("inference_mode", True) in modes
    assert view.entry_grad_enabled and view.requires_grad_known


def test_export_grad_region_is_inlined():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(4, 4), nn.Linear(4, 4)

        def forward(self, x):
            with torch.no_grad():
                h = self.a(x)
            return self.b(h)

    view = export_view(M(), torch.randn(2, 4))
    inner = [n for n in view.ops("linear") if not n.grad_enabled]
    assert len(inner) == 1 and "/" in inner[0].name
    assert {i.param_name for i in inner[0].inputs if i.kind == "parameter"} == {"a.weight", "a.bias"}
    [region] = view.ops("grad_region")
    assert region.inputs == inner  # data flows through the region's nodes, never around them
    assert not view.requires_grad_known


def test_alias_is_not_a_detach_and_entry_grad_mode_is_recorded():
    view = export_view(Fn(lambda x: torch.ops.aten.alias(x) + 1), torch.randn(3))
    assert view.ops("detach") == [] and len(view.ops("alias")) == 1
    with torch.no_grad():
        view = dynamo_view(lambda x: x * 2, torch.randn(3))
    assert not view.entry_grad_enabled and all(not n.grad_enabled for n in view)


def test_parameters_of_several_models_keep_their_local_names():
    g, d = nn.Linear(4, 4), nn.Linear(4, 1)

    def step(G, D, z):
        return D(G(z)).mean()

    view = dynamo_view(step, g, d, torch.randn(2, 4))
    names = {n.param_name for n in view.parameters}
    assert names == {"G.weight", "G.bias", "D.weight", "D.bias"}
POINTWISE_SPELLINGS = [
    ("a + b", lambda a, b: a + b),
    ("torch.add", lambda a, b: torch.add(a, b)),
    ("Tensor.mul", lambda a, b: a.mul(b)),
    ("a / b", lambda a, b: a / b),
    ("a - b", lambda a, b: a - b),
    ("torch.where", lambda a, b: torch.where(a > 0, a, b)),
    ("torch.maximum", lambda a, b: torch.maximum(a, b)),
    ("F.relu(a) * b", lambda a, b: torch.nn.functional.relu(a) * b),
    ("a.sigmoid() + b", lambda a, b: a.sigmoid() + b),
    ("masked_fill", lambda a, b: b.masked_fill(a > 0, 0.0)),
]


class Fn2(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, a, b):
        return self.fn(a, b)


@pytest.mark.parametrize("label,fn", POINTWISE_SPELLINGS, ids=[p[0] for p in POINTWISE_SPELLINGS])
def test_pointwise_ops_are_recognised_in_every_origin(label, fn):
    a, b = torch.randn(3, 4), torch.randn(1, 4)
    m = Fn2(fn)
    for view in (capture(fn, (a, b)).views[0], capture(torch.export.export(m, (a, b))).views[0],
                 capture(torch.fx.symbolic_trace(m), (a, b)).views[0]):
        ops = [n for n in view if n.kind == "op"]
        assert ops and all(n.is_pointwise for n in ops), (view.origin, [(n.op, n.spelling) for n in ops])
        last = ops[-1]
        assert {i.kind for i in last.tensor_inputs} <= {"input", "op"}
        assert all(i.tensor is not None for i in last.tensor_inputs)


def test_module_activations_are_pointwise_in_symbolic_trace():
    m = nn.Sequential(nn.ReLU(), nn.GELU(), nn.Sigmoid())
    view = capture(torch.fx.symbolic_trace(m), (torch.randn(2, 3),)).views[0]
    assert [n.is_pointwise for n in view if n.kind == "op"] == [True, True, True]


def test_device_moves_in_every_spelling_become_to_with_a_device():
    """`.cuda()` cannot run on a CPU-only build, so this reads the traced graph without values:
    the copy rules then compare the devices of the fake tensors, whatever the spelling."""
    from fxlint.canon import build_view

    class M(nn.Module):
        def forward(self, x):
            return x.cuda(), x.cpu(), x.to("cuda:1"), x.to(torch.device("cpu")), x.to(x)

    view = build_view(torch.fx.symbolic_trace(M()), origin="fx")
    tos = view.ops("to")
    assert [str(n.args["device"]) for n in tos[:4]] == ["cuda", "cpu", "cuda:1", "cpu"]
    assert [n.args["style"] for n in tos] == ["cuda", "cpu", "to", "to", "to"]
def _aliases(view):
    return {n.name: [a.name for a in n.aliases] for n in view if n.aliases}


@pytest.mark.parametrize("origin", ["dynamo", "export", "fx"])
def test_aliases_name_the_inputs_an_output_may_share_memory_with(origin):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.drop = nn.Dropout(0.5)

        def forward(self, x):
            v = x.t()  # a view
            c = x.clone()  # fresh memory
            c.add_(1)  # in place: returns c
            d = self.drop(c)  # eval dropout hands back its input
            return v, d * 2, x[:, [0, 1]]  # the gather is fresh memory

    m = Net().eval()
    x = torch.randn(3, 4)
    view = {"dynamo": lambda: dynamo_view(m, x), "export": lambda: export_view(m, x),
            "fx": lambda: fx_view(m, x)}[origin]()
    by_op = {}
    for n in view:
        by_op.setdefault(n.op, []).append(n)
    [perm] = by_op["permute"]
    assert perm.aliases == [perm.input]
    [clone] = by_op["clone"]
    assert clone.aliases == []
    inplace = [n for n in view if n.mutates]
    assert inplace and all(n.aliases == n.mutates for n in inplace)
    [gather] = by_op["index"]
    assert gather.aliases == []
    assert not any(n.aliases for n in view if n.op == "mul")
    for n in by_op.get("dropout", []):  # eval dropout returns its input itself
        assert n.aliases == [n.input]
    if origin == "fx":
        assert by_op["dropout"], "symbolic_trace keeps nn.Dropout as a module call"


def test_graph_break_that_ended_a_dynamo_graph_is_on_its_view():
    def f(x):
        y = x * 2
        print("break")  # graph break
        return y + 1

    from tests.conftest import line_of

    cap = capture(f, (torch.randn(3),))
    first, second = cap.views
    assert first.graph_break is not None and second.graph_break is None
    assert first.graph_break.location.line == line_of(__file__, "# graph break")
    assert export_view(Fn(lambda x: x * 2), torch.randn(3)).graph_break is None
# --------------------------------------------------------------------------- conv geometry, linear bias, batch_norm mode
# (added for the layout rules: the kernel model needs stride/dilation/output_padding and whether there is a bias)


class _Convs(nn.Module):
    def __init__(self):
        super().__init__()
        self.c2 = nn.Conv2d(3, 4, 3, stride=2, padding=1, dilation=1, bias=False)
        self.t2 = nn.ConvTranspose2d(4, 2, 3, stride=2, output_padding=1)

    def forward(self, x):
        return self.t2(self.c2(x))


@pytest.mark.parametrize("origin", ["dynamo", "fx", "export"])
def test_conv_geometry_and_bias_in_every_origin(origin):
    x = torch.randn(1, 3, 8, 8)
    m = _Convs()
    view = {"dynamo": lambda: dynamo_view(m, x), "fx": lambda: fx_view(m, x), "export": lambda: export_view(m, x)}[origin]()
    c2, t2 = view.ops("conv")
    assert (c2.args["stride"], c2.args["padding"], c2.args["dilation"]) == ((2, 2), (1, 1), (1, 1))
    assert c2.args["has_bias"] is False and c2.args["transposed"] is False
    assert t2.args["transposed"] is True and t2.args["has_bias"] is True
    assert (t2.args["stride"], t2.args["output_padding"]) == ((2, 2), (1, 1))
    assert c2.args["weight_info"].shape == (4, 3, 3, 3)


def test_functional_conv_keeps_string_padding_and_expands_ints():
    w = torch.randn(4, 3, 3)
    view = dynamo_view(lambda x: torch.nn.functional.conv1d(x, w, padding="same", dilation=2), torch.randn(1, 3, 10))
    [c] = view.ops("conv")
    assert c.args["padding"] == "same" and c.args["dilation"] == (2,) and c.args["stride"] == (1,)
    assert c.args["has_bias"] is False


def test_linear_module_records_its_bias():
    m = nn.Sequential(nn.Linear(4, 3, bias=False), nn.Linear(3, 2))
    first, second = fx_view(m, torch.randn(2, 4)).ops("linear")
    assert first.args["has_bias"] is False and second.args["has_bias"] is True


@pytest.mark.parametrize("origin", ["dynamo", "fx", "export"])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_records_whether_it_uses_batch_statistics(origin, training):
    m = nn.Sequential(nn.BatchNorm2d(3)).train(training)
    x = torch.randn(2, 3, 4, 4)
    view = {"dynamo": lambda: dynamo_view(m, x), "fx": lambda: fx_view(m, x), "export": lambda: export_view(m, x)}[origin]()
    [bn] = view.ops("batch_norm")
    assert bn.args["training"] is training


def test_writers_lists_the_nodes_that_write_in_place_in_graph_order():
    def f(x, y):
        a = x * 2
        a.add_(1)
        b = y.clone()
        b[0] = 0
        return a + b

    [view] = capture(f, (torch.randn(3), torch.randn(3))).views
    writers = view.writers
    assert [w.op for w in writers] == ["add_", "setitem"]
    assert [w.mutates[0].op for w in writers] == ["mul", "clone"]
    assert view.writers is writers  # computed once


# --------------------------------------------------------------------------- the registry


def test_the_op_table_in_the_docs_is_the_registry():
    """Every canonical op in the package docstring's table is registered, and every registered one is
    in it: the table is ``op_table()`` pasted (rerun it after adding a normaliser)."""
    import fxlint.canon as canon
    from fxlint.canon.ops import op_table

    table = op_table()
    assert table in canon.__doc__, "the op table in fxlint/canon/__init__.py is stale; paste:\n" + table


def test_derived_op_tables_are_the_ones_passes_relied_on():
    """The tables are derived from the registrations now; pinned to what they were by hand."""
    from fxlint.canon import FACTORY_NAMES, MAYBE_VIEW_OPS, POINTWISE_OPS, VIEW_OPS
    from fxlint.canon.ops import CANONICAL_OPS, COMPUTING_MODULE_OPS, PASSTHROUGH_OPS

    assert VIEW_OPS == {"permute", "view", "expand", "slice", "detach", "data", "squeeze", "unsqueeze", "unbind",
                        "split", "chunk", "narrow", "select", "diagonal", "as_strided", "real", "imag",
                        "view_as_real", "view_as_complex", "unfold", "split_with_sizes", "alias"}
    assert MAYBE_VIEW_OPS == {"reshape", "contiguous", "to"}
    assert PASSTHROUGH_OPS == {"dropout", "alpha_dropout", "feature_alpha_dropout", "dropout1d", "dropout2d",
                               "dropout3d", "identity", "lift_fresh", "tuple_getitem",
                               "wait"}  # a collective's wait_tensor hands back the tensor it waited for
    assert COMPUTING_MODULE_OPS == {"linear", "conv", "layer_norm", "group_norm", "batch_norm", "instance_norm",
                                    "softmax", "log_softmax", "embedding", "pad",  # nn.ZeroPad2d, nn.ConstantPad*d
                                    "avg_pool2d", "max_pool2d", "adaptive_avg_pool2d", "upsample", "im2col",
                                    "rnn"}  # nn.LSTM/GRU/RNN
    assert {"arange", "zeros", "tensor", "empty_strided", "tril_indices"} <= FACTORY_NAMES
    assert {"add", "relu", "where", "not_"} <= POINTWISE_OPS and not POINTWISE_OPS & VIEW_OPS
    assert {"permute", "slice", "index", "tuple_getitem", "grad_region", "mm", "addmm", "factory"} <= CANONICAL_OPS


def test_a_canonical_op_is_registered_once():
    from fxlint.canon import declare, normaliser

    with pytest.raises(ValueError, match="registered twice"):
        normaliser("permute", spellings={"fxlint_test_permute"}, doc="-")(lambda c: None)
    with pytest.raises(ValueError, match="registered twice"):
        declare("grad_region", doc="-")
    with pytest.raises(ValueError, match="does not declare"):
        normaliser("fxlint_test_op", spellings={"x": "other_op"}, doc="-")


KEYWORD_SPELLINGS = [
    ("torch.transpose(x, dim0=0, dim1=2)", lambda x: torch.transpose(x, dim0=0, dim1=2), (2, 1, 0)),
    ("x.transpose(dim1=2, dim0=0)", lambda x: x.transpose(dim1=2, dim0=0), (2, 1, 0)),
    ("x.swapaxes(axis0=0, axis1=1)", lambda x: x.swapaxes(axis0=0, axis1=1), (1, 0, 2)),
    ("x.permute(dims=(2, 0, 1))", lambda x: x.permute(dims=(2, 0, 1)), (2, 0, 1)),
    ("x.permute([2, 0, 1])", lambda x: x.permute([2, 0, 1]), (2, 0, 1)),
    ("x.movedim(source=0, destination=2)", lambda x: x.movedim(source=0, destination=2), (1, 2, 0)),
]


@pytest.mark.parametrize("label,fn,dims", KEYWORD_SPELLINGS, ids=[k[0] for k in KEYWORD_SPELLINGS])
@pytest.mark.parametrize("origin", ["dynamo", "fx", "export"])
def test_arguments_are_bound_by_name_whatever_the_spelling(label, fn, dims, origin):
    x = torch.randn(2, 3, 4)
    view = {"dynamo": lambda: dynamo_view(lambda x: fn(x) + 1, x), "fx": lambda: fx_view(Fn(lambda x: fn(x) + 1), x),
            "export": lambda: export_view(Fn(lambda x: fn(x) + 1), x)}[origin]()
    [perm] = view.ops("permute")
    assert perm.args["dims"] == dims


def test_a_transpose_remembers_the_dims_as_written():
    x = torch.randn(2, 3, 4, 5)
    view = dynamo_view(lambda x: (x.transpose(-2, -1) + 1, x.transpose(1, 2) + 1, x.permute(0, 2, 1, 3) + 1), x)
    written = [(n.args["dims"], n.args["written"]) for n in view.ops("permute")]
    assert written == [((0, 1, 3, 2), (-2, -1)), ((0, 2, 1, 3), (1, 2)), ((0, 2, 1, 3), None)]


@pytest.mark.parametrize("origin", ["dynamo", "fx", "export"])
def test_keyword_conv_geometry_and_matmul_operands_bind_by_name(origin):
    w = torch.randn(4, 3, 3, 3)

    def f(x):
        y = torch.nn.functional.conv2d(x, weight=w, stride=2, groups=1, dilation=1, padding=1)
        z = torch.addmm(torch.zeros(4), mat1=y.flatten(1)[:, :3], mat2=torch.ones(3, 4))
        return torch.mm(z, mat2=torch.ones(4, 2))

    x = torch.randn(1, 3, 8, 8)
    view = {"dynamo": lambda: dynamo_view(f, x), "fx": lambda: fx_view(Fn(f), x),
            "export": lambda: export_view(Fn(f), x)}[origin]()
    [c] = view.ops("conv")
    assert (c.args["stride"], c.args["padding"], c.args["groups"]) == ((2, 2), (1, 1), 1)
    assert c.args["weight_info"].shape == (4, 3, 3, 3)
    [addmm] = view.ops("addmm")
    assert addmm.args["a"].tensor.shape == (1, 3) and addmm.args["b"].tensor.shape == (3, 4)
    [mm] = view.ops("mm")
    assert mm.args["b"].tensor.shape == (4, 2)


def test_binding_reads_schemas_signatures_and_the_explicit_table():
    import operator

    import torch.fx as fx

    from fxlint.canon.binding import bind

    g = fx.Graph()
    x = g.placeholder("x")
    cases = {
        "method varargs": (g.call_method("permute", (x, 2, 0, 1)), {"self": x, "dims": (2, 0, 1)}),
        "method list": (g.call_method("permute", (x, [2, 0, 1])), {"self": x, "dims": [2, 0, 1]}),
        "torch builtin": (g.call_function(torch.transpose, (x, 0), {"dim1": 2}), {"self": x, "dim0": 0, "dim1": 2}),
        "aten overload": (g.call_function(torch.ops.aten._native_batch_norm_legit.no_stats,
                                          (x, None, None, True, 0.1, 1e-5)),
                          {"input": x, "weight": None, "bias": None, "training": True, "momentum": 0.1, "eps": 1e-5}),
        "python function": (g.call_function(torch.nn.functional.softmax, (x, 1)), {"input": x, "dim": 1}),
        "operator": (g.call_function(operator.getitem, (x, 0)), {"input": x, "index": 0}),
        "explicit method": (g.call_method("cuda", (x, 0)), {"self": x, "device": 0}),
        "tensor overloads only": (g.call_method("slice", (x, 1, 0, 4)), {"self": x, "dim": 1, "start": 0, "end": 4}),
    }
    for label, (node, expected) in cases.items():
        assert bind(node) == expected, label


def test_a_first_argument_passed_by_keyword_is_the_input():
    """`F.scaled_dot_product_attention(query=q, key=k, value=v)` (diffusers' attention dispatch) and
    `F.linear(input=x, weight=w)`: the first parameter, passed by name, is the node's input."""
    import torch.nn.functional as F

    w = torch.randn(8, 8)

    def f(q, k, v):
        out = F.scaled_dot_product_attention(query=q, key=k, value=v)
        return F.linear(input=out, weight=w)

    q = torch.randn(2, 2, 4, 8)
    view = dynamo_view(f, q, q.clone(), q.clone())
    [a] = view.ops("scaled_dot_product_attention")
    assert [a.args[k].kind if a.args[k] is not None else None for k in ("query", "key", "value")] == ["input"] * 3
    [lin] = view.ops("linear")
    assert lin.input is a


def test_a_one_operand_einsum_that_only_permutes_is_a_permute():
    from fxlint.canon.text import call_text

    def f(x):
        a = torch.einsum("nhwc->nchw", x)  # a view of x
        b = torch.einsum("nhwc->nch", x)  # sums w: stays an einsum
        c = torch.einsum("nhwc,nhwc->nchw", x, x)  # two operands: stays an einsum
        return a, b, c

    view = dynamo_view(f, torch.randn(2, 3, 4, 5))
    [p] = view.ops("permute")
    assert p.args["dims"] == (0, 3, 1, 2) and p.input.kind == "input" and p.is_view
    assert call_text(p) == 'torch.einsum("nhwc->nchw", ...)'
    assert len(view.ops("einsum")) == 2
