"""The rewrite engine and the FXL401 rewrite: applied where safe, refused where not, always verified.

Every applied rewrite is checked three ways: the rewritten module computes the
same outputs and gradients as the model, the gather is gone from its graph,
and the runtime audit (torch.profiler) sees fewer copied bytes.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

import fxlint
from fxlint.canon import build_view
from fxlint.rewrite import NotApplied
from tests.conftest import line_of

HERE = __file__


class Head(nn.Module):
    """A Linear, then the indexing under test on its output (so gradients reach parameters)."""

    def __init__(self, fn, width: int = 16):
        super().__init__()
        self.lin = nn.Linear(width, width)
        self.fn = fn

    def forward(self, x):
        return self.fn(self.lin(x))


def _arange_step3(y):
    n = y.size(1)
    return y[:, torch.arange(0, n, 3)]  # arange step 3


def _index_select(x):
    return torch.index_select(x, 1, torch.tensor([2, 3, 4, 5]))  # index_select tensor


def _single(x):
    return x[[5]]  # single row


def _comprehension(output):
    return output[:, [i for i in range(0, output.size(1), 2)]]  # comprehension


def _negative(x):
    return x[:, [-4, -3, -2, -1]]  # negative


def _range(x):
    return x[:, range(1, 16, 5)]  # range object


HELD_OUT = [
    ("arange step 3", _arange_step3, "# arange step 3", "return y[:, 0:n:3]"),
    ("index_select tensor", _index_select, "# index_select tensor", "return x[:, 2:6]"),
    ("single row", _single, "# single row", "return x[5:6]"),
    ("comprehension", _comprehension, "# comprehension", "return output[:, ::2]"),
    ("negative", _negative, "# negative", "return x[:, 12:]"),
    ("range object", _range, "# range object", "return x[:, 1::5]"),
]


def _grads(module, x):
    out = module(x)
    w = torch.randn(out.shape, generator=torch.Generator().manual_seed(1))
    return out, torch.autograd.grad((out * w).sum(), list(module.parameters()))


def _ops(gm):
    return [n.op for n in build_view(gm, origin="fx")]


@pytest.mark.parametrize("label,fn,marker,edit", HELD_OUT, ids=[h[0] for h in HELD_OUT])
def test_held_out_spellings_are_rewritten_verified_and_copy_less(label, fn, marker, edit):
    model = Head(fn)
    x = torch.randn(8, 16)
    result = fxlint.rewrite(model, (x,))
    [applied] = result.applied
    assert result.skipped == [] and result.verified and result.checked == "outputs and gradients"
    assert applied.code == "FXL401" and (applied.file, applied.line) == (HERE, line_of(HERE, marker))
    assert applied.source_edit is not None and applied.source_edit[1].startswith(edit)
    assert "index" not in _ops(result.module) and "index" in _ops(result.original)

    out0, g0 = _grads(model, x)
    out1, g1 = _grads(result.module, x)
    assert torch.equal(out0, out1)
    assert all(torch.equal(a, b) for a, b in zip(g0, g1))

    for train in (False, True):
        before = fxlint.audit(model, (x,), train=train).total_bytes
        after = fxlint.audit(result.module, (x,), train=train).total_bytes
        assert after < before, (train, before, after)
    assert applied.bytes_saved == out0.numel() * out0.element_size()


def test_speech_separation_scenario():
    from models import speech_separation

    model, inputs = speech_separation.make(batch=2, channels=128, time=100)
    result = fxlint.rewrite(model, inputs)
    [applied] = result.applied
    # the slice moves before the per-channel affine, which then computes only the kept half
    assert applied.description == ("output[:, [0, 2, 4, 6, ..., 126]] -> output[:, ::2], taken before mul and add "
                                   "(which now compute only the selected elements)")
    assert applied.source_edit == ("speaker_a = output[:, [i for i in range(0, output.size(1), 2)]]",
                                   "speaker_a = output[:, ::2]")
    out0, g0 = _grads(model, *inputs)
    out1, g1 = _grads(result.module, *inputs)
    assert torch.equal(out0, out1) and all(torch.equal(a, b) for a, b in zip(g0, g1))
    line = line_of(speech_separation.__file__, "speaker_a = output[")
    affine = line_of(speech_separation.__file__, "output = separated * self.scale")
    for train in (False, True):
        before = fxlint.audit(model, inputs, train=train)
        after = fxlint.audit(result.module, inputs, train=train)
        # the gather (and in training its index_put_ scatter of the whole output's gradient) is
        # gone; what is left is the backward of the parameters' slices (scale[::2], shift[::2] of
        # 128 channels), attributed to the affine's line through the nodes' stack traces
        assert before.at(speech_separation.__file__, line, "forward")
        assert not after.at(speech_separation.__file__, line, "forward")
        assert not after.at(speech_separation.__file__, line, "backward")
        assert after.total_bytes < before.total_bytes
        if train:
            bw = after.at(speech_separation.__file__, affine, "backward")
            assert bw and all("aten::slice_backward" in c.chain for c in bw)
            assert after.total_bytes == 2 * 64 * 4  # each slice_backward writes its 64 kept floats
        else:
            assert after.total_bytes == 0


# --------------------------------------------------------------------------- traps: the rewrite must refuse


def _trap_result_mutated(h):
    z = h[:, [0, 2, 4]]
    z.add_(1)
    return h.sum() + z.sum()


def _trap_result_setitem(h):
    z = h[:, [0, 2, 4]]
    z[0] = 0.0
    return h * 1, z * 1


def _trap_base_mutated(h):
    z = h[:, [0, 2]]
    h.mul_(3)
    return z * 1


def _trap_base_copy_into(h):
    z = h[:, [0, 2]]
    h.copy_(torch.zeros_like(h))
    return z * 1


def _trap_view_of_base_mutated(h):
    z = h[:, [0, 2]]
    h.t()[0].zero_()
    return z * 1


def _trap_out_kwarg(h):
    z = h[:, [0, 2]]
    torch.mul(h, 2, out=h)
    return z * 1


def _trap_returned_with_base(h):
    return h, h[:, [0, 2]]


def _trap_view_needs_contiguous(h):
    return h[:, [0, 1, 2, 3]].view(-1)


TRAPS = [
    ("result mutated in place", _trap_result_mutated, "the result is written in place"),
    ("setitem into the result", _trap_result_setitem, "the result is written in place"),
    ("base mutated in place", _trap_base_mutated, "the indexed tensor is written in place"),
    ("copy_ into the base", _trap_base_copy_into, "the indexed tensor is written in place"),
    ("a view of the base mutated", _trap_view_of_base_mutated, "the indexed tensor is written in place"),
    ("out= into the base", _trap_out_kwarg, "the indexed tensor is written in place"),
    ("returned with its base", _trap_returned_with_base, "alias the output"),
    ("view() needs contiguous memory", _trap_view_needs_contiguous, "does not accept the rewritten value"),
]


@pytest.mark.parametrize("label,fn,reason", TRAPS, ids=[t[0] for t in TRAPS])
def test_traps_are_not_rewritten_and_results_do_not_change(label, fn, reason):
    model = Head(fn)
    x = torch.randn(4, 16)
    with torch.no_grad():  # in-place writes into a Linear's output need no autograd here
        result = fxlint.rewrite(model, (x,))
        [skipped] = result.skipped
        assert result.applied == []
        assert skipped.code == "FXL401" and reason in skipped.reason and not skipped.rolled_back
        assert "not applied: " in str(skipped)
        want, got = model(x), result.module(x)
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    assert all(torch.equal(a, b) for a, b in zip(want, got))


def test_result_returned_from_an_input_would_alias_it():
    result = fxlint.rewrite(lambda x: x[:, [0, 2]], (torch.randn(4, 16),))
    [skipped] = result.skipped
    assert "alias the graph input `x`" in skipped.reason


def test_mutation_before_the_index_does_not_block_it():
    def f(h):
        h.mul_(2)
        return h[:, [0, 2]] * 1

    with torch.no_grad():
        result = fxlint.rewrite(Head(f), (torch.randn(4, 16),))
    assert len(result.applied) == 1


def test_several_dims_rewritten_without_grad_refused_in_training():
    def f(h):
        return h[[[1], [2]], [0, 2, 4]] * 1

    model, x = Head(f), torch.randn(4, 16)
    with torch.no_grad():
        result = fxlint.rewrite(model, (x,))
        [applied] = result.applied
        assert applied.description.endswith("lin[1:3, :5:2]") or applied.description.endswith("linear[1:3, :5:2]")
        assert torch.equal(result.module(x), model(x))
        assert fxlint.audit(result.module, (x,)).total_bytes < fxlint.audit(model, (x,)).total_bytes
    [skipped] = fxlint.rewrite(model, (x,)).skipped
    assert "2 dims would be sliced" in skipped.reason


# --------------------------------------------------------------------------- verification and rollback


def _wrong_rewrite(site):
    """Replaces the gather by a slice with the wrong start: verification must catch it."""
    from fxlint.rewrite.base import Change
    from fxlint.rewrite.graph import retarget_as_basic_index

    node = site.node
    nodes = retarget_as_basic_index(site.gm, node.node, node.input.node,
                                    [("slice", (None, None, None)), ("slice", (1, 8, 2))])
    return Change(new_nodes=nodes, description="wrong on purpose")


def broken_fxl401(fn):
    """The default registry with FXL401's rewrite replaced by ``fn`` (passed as ``registry=``)."""
    return broken_registry("FXL401", fn)


def broken_registry(code, fn):
    import dataclasses

    from fxlint.registry import default_registry

    reg = default_registry()
    return reg.replacing(dataclasses.replace(reg.rewrite_for(code), apply=fn))


def test_a_rewrite_that_changes_results_is_rolled_back():
    reg = broken_fxl401(_wrong_rewrite)
    model, x = Head(lambda h: h[:, [0, 2, 4, 6]]), torch.randn(4, 16)
    result = fxlint.rewrite(model, (x,), registry=reg)
    [skipped] = result.skipped
    assert result.applied == [] and skipped.rolled_back
    assert "rolled back" in skipped.reason and "output 0 differs" in skipped.reason
    assert result.module is result.original
    assert torch.equal(result.module(x), model(x))


def test_verify_false_skips_the_check():
    reg = broken_fxl401(_wrong_rewrite)
    model, x = Head(lambda h: h[:, [0, 2, 4, 6]]), torch.randn(4, 16)
    result = fxlint.rewrite(model, (x,), verify=False, registry=reg)
    assert len(result.applied) == 1 and not result.verified
    assert "not verified" in str(result)
    assert not torch.equal(result.module(x), model(x))  # what verification is there to prevent


def test_a_rewrite_that_raises_is_reported_and_the_graph_kept():
    def boom(site):
        with site.gm.graph.inserting_after(site.node.node):  # a half-done edit, then a crash
            site.gm.graph.call_function(torch.relu, (site.node.node,))
        raise RuntimeError("injected")

    reg = broken_fxl401(boom)
    model, x = Head(lambda h: h[:, [0, 2, 4, 6]]), torch.randn(4, 16)
    with pytest.warns(fxlint.FxlintWarning, match="the FXL401 rewrite failed"):  # an fxlint bug: said aloud
        result = fxlint.rewrite(model, (x,), registry=reg)
    [skipped] = result.skipped
    assert "injected" in skipped.reason and skipped.rolled_back
    assert torch.equal(result.module(x), model(x))


def test_not_applied_from_a_rewrite_is_reported():
    def refuse(site):
        raise NotApplied("cannot prove it")

    reg = broken_fxl401(refuse)
    result = fxlint.rewrite(Head(lambda h: h[:, [0, 2]]), (torch.randn(4, 16),), registry=reg)
    assert [s.reason for s in result.skipped] == ["cannot prove it"]


def test_silenced_finding_is_not_rewritten():
    def f(h):
        return h[:, [0, 2, 4]]  # fxlint: ignore[FXL401]

    result = fxlint.rewrite(Head(f), (torch.randn(4, 16),))
    [skipped] = result.skipped
    assert result.applied == [] and "silenced" in skipped.reason


def test_select_limits_the_rules():
    model, x = Head(_single), torch.randn(8, 16)
    assert fxlint.rewrite(model, (x,), select="FXL401").applied
    assert fxlint.rewrite(model, (x,), select=["FXL403"]).applied == []
    with pytest.raises(fxlint.ConfigError):
        fxlint.rewrite(model, (x,), select="FXL999")


def test_several_sites_on_one_line_are_each_rewritten():
    def f(h):
        return [h[:, [0, 2]] * i for i in range(3)]  # one line, three gathers

    result = fxlint.rewrite(Head(f), (torch.randn(4, 16),))
    assert len(result.applied) == 3


def test_graph_stays_valid_new_nodes_carry_values_and_stack_traces():
    model, x = Head(_arange_step3), torch.randn(8, 16)
    result = fxlint.rewrite(model, (x,))
    gm = result.module
    gm.graph.lint()
    node = next(n for n in gm.graph.nodes if n.name == result.applied[0].node)
    assert "example_value" in node.meta and tuple(node.meta["example_value"].shape)[1] == 6
    assert "_arange_step3" in node.meta["stack_trace"]
    assert not any("arange" in n.name for n in gm.graph.nodes)  # the index constant went with the gather


# --------------------------------------------------------------------------- other graph origins


@pytest.mark.parametrize("origin", ["symbolic_trace", "export"])
def test_graph_module_and_exported_program_targets(origin):
    class Fixed(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(16, 16)

        def forward(self, x):
            return self.lin(x)[:, [i for i in range(0, 16, 2)]]

    model, x = Fixed(), torch.randn(4, 16)
    target = torch.fx.symbolic_trace(model) if origin == "symbolic_trace" else torch.export.export(model, (x,))
    result = fxlint.rewrite(target, (x,))
    assert len(result.applied) == 1, result
    if origin == "export":
        assert "aten.slice" in result.applied[0].after
    out0, g0 = _grads(model, x)
    out1, g1 = _grads(result.module, x)
    assert torch.equal(out0, out1) and all(torch.equal(a, b) for a, b in zip(g0, g1))
    assert fxlint.audit(result.module, (x,)).total_bytes < fxlint.audit(model, (x,)).total_bytes


def test_graph_break_is_a_capture_error_pointing_at_the_backend():
    def f(x):
        print("side effect")
        return x[:, [0, 2]]

    with pytest.raises(fxlint.CaptureError, match="rewrite.*True"):
        fxlint.rewrite(f, (torch.randn(4, 16),))


def test_rewrite_leaves_the_model_state_alone():
    model = nn.Sequential(nn.Linear(16, 16), nn.BatchNorm1d(16))
    wrapped = Head(lambda h: model(h)[:, [0, 2, 4]])
    before = model[1].running_mean.clone()
    fxlint.rewrite(wrapped, (torch.randn(8, 16),))
    assert torch.equal(model[1].running_mean, before)


class _RunningStat(torch.nn.Module):
    """A buffer updated with `+=` every call (a running metric), beside a rewritable index."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)
        self.register_buffer("hist", torch.zeros(8))

    def forward(self, x):
        y = self.lin(x)[:, [0, 1, 2, 3, 4, 5, 6, 7]]
        self.hist += y.detach().sum(0)
        return y


def test_rewrite_leaves_the_models_buffers_as_they_were():
    """Dynamo's export replays `self.hist += ...` as a store of its own (fake) result into the module:
    after fxlint.rewrite the user's model must still hold its real buffer, unchanged, and the
    rewritten module must update that same buffer when it runs (as the model would)."""
    torch.manual_seed(0)
    model, x = _RunningStat(), torch.randn(4, 8)
    hist = model.hist
    with torch.no_grad():
        result = fxlint.rewrite(model, (x,))
    assert model.hist is hist and type(model.hist) is torch.Tensor and torch.equal(hist, torch.zeros(8))
    with torch.no_grad():
        expected = model.lin(x).sum(0)
        out = result.module(x)
    assert torch.allclose(model.hist, expected, atol=1e-6) and out.shape == (4, 8)
    assert torch.compile(model, backend="eager")(x).shape == (4, 8)  # a later compile sees real tensors
