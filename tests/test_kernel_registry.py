"""The kernel-model registry (fxlint/kernels/model_registry.py): every registered model predicts a
node of its op, and every list of kernel ops - ``KERNEL_OPS``, the ops FXL201/FXL202/FXL203
check, the operand roles FXL201 names - is derived from it."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F

from fxlint import kernels as K
from fxlint.capture.graphs import capture
from fxlint.kernels.model_registry import KernelModel, KernelRegistry, kernel_model
from fxlint.passes import (fxl201_noncontiguous_matmul, fxl202_noncontiguous_conv, fxl203_noncontiguous_norm,
                           fxl205_pad_copy, fxl206_noncontiguous_spatial, fxl207_noncontiguous_rnn,
                           fxl210_istft_input_copy)

r = torch.randn
_GRU = torch.nn.GRU(4, 3)

#: one small program per kernel op: a new model without an example here fails the first test
EXAMPLES = {
    "mm": (lambda a, b: torch.mm(a, b), (r(4, 3), r(3, 5))),
    "addmm": (lambda c, a, b: torch.addmm(c, a, b), (r(5), r(4, 3), r(3, 5))),
    "mv": (lambda a, v: torch.mv(a, v), (r(4, 3), r(3))),
    "dot": (lambda u, v: torch.dot(u, v), (r(3), r(3))),
    "bmm": (lambda a, b: torch.bmm(a, b), (r(2, 4, 3), r(2, 3, 5))),
    "baddbmm": (lambda c, a, b: torch.baddbmm(c, a, b), (r(2, 4, 5), r(2, 4, 3), r(2, 3, 5))),
    "matmul": (lambda a, b: a @ b, (r(2, 2, 4, 3), r(2, 2, 3, 5))),
    "linear": (lambda x, w, b: F.linear(x, w, b), (r(2, 4, 3), r(5, 3), r(5))),
    "conv": (lambda x, w: F.conv2d(x, w), (r(1, 3, 8, 8), r(4, 3, 3, 3))),
    "layer_norm": (lambda x: F.layer_norm(x, (8,)), (r(2, 4, 8),)),
    "group_norm": (lambda x: F.group_norm(x, 2), (r(2, 4, 3, 3),)),
    "instance_norm": (lambda x: F.instance_norm(x), (r(2, 4, 3, 3),)),
    "rms_norm": (lambda x: F.rms_norm(x, (8,)), (r(2, 4, 8),)),
    "batch_norm": (lambda x, m, v: F.batch_norm(x, m, v), (r(2, 4, 3, 3), torch.zeros(4), torch.ones(4))),
    "softmax": (lambda x: torch.softmax(x, -1), (r(2, 4),)),
    "log_softmax": (lambda x: F.log_softmax(x, -1), (r(2, 4),)),
    "pad": (lambda x: F.pad(x, (1, 1)), (r(2, 4),)),
    "scaled_dot_product_attention": (lambda q: F.scaled_dot_product_attention(q, q, q), (r(2, 2, 4, 8),)),
    "einsum": (lambda a, b: torch.einsum("bij,bjk->bik", a, b), (r(2, 3, 4), r(2, 4, 5))),
    "avg_pool2d": (lambda x: F.avg_pool2d(x, 2), (r(1, 2, 4, 4),)),
    "max_pool2d": (lambda x: F.max_pool2d(x, 2), (r(1, 2, 4, 4),)),
    "adaptive_avg_pool2d": (lambda x: F.adaptive_avg_pool2d(x, 2), (r(1, 2, 4, 4),)),
    "upsample": (lambda x: F.interpolate(x, scale_factor=2, mode="bicubic"), (r(1, 2, 4, 4),)),
    "im2col": (lambda x: F.unfold(x, 2), (r(1, 2, 4, 4),)),
    "rnn": (lambda x: _GRU(x)[0], (r(5, 2, 4),)),
    "istft": (lambda z: torch.istft(z, 8, 2, window=torch.hann_window(8)), (torch.randn(2, 5, 6, dtype=torch.complex64),)),
}


def test_every_registered_model_has_an_example():
    assert set(K.ops()) == set(EXAMPLES)
    assert K.KERNEL_OPS == K.ops()


@pytest.mark.parametrize("op", list(EXAMPLES))
def test_every_registered_model_predicts_a_node_of_its_op(op):
    fn, args = EXAMPLES[op]
    (node,) = capture(fn, args).views[0].ops(op)
    model = K.model_for(op)
    assert model is not None and model.op == op
    pred = K.predict(node)
    assert pred is not None, op
    assert pred == model.predict(node, K.Env.current())  # predict dispatches to this op's model
    assert pred.kernel.startswith(op) or op in ("linear", "conv")  # conv2d; linear -> "linear"


def test_every_family_lives_in_its_own_module_and_every_op_in_one_family():
    modules = {m.family: set() for m in K.models()}
    for m in K.models():
        modules[m.family].add(m.module.rsplit(".", 1)[-1])
    assert set(K.families()) == {"matmul", "conv", "norm", "softmax", "pad", "attention", "spatial",
                                "rnn", "spectral"}
    assert modules == {"matmul": {"blas", "bmm", "matmul", "einsum"}, "conv": {"conv"}, "norm": {"norm"},
                       "softmax": {"softmax"}, "pad": {"pad"}, "attention": {"attention"},
                       "spatial": {"spatial"}, "rnn": {"rnn"}, "spectral": {"spectral"}}
    assert sorted(K.ops()) == sorted(set(K.ops()))


class _Recorder:
    """A graph view that records which ops a rule asks for (and has none of them)."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def ops(self, *names: str) -> list:
        self.asked.extend(names)
        return []


@pytest.mark.parametrize("rule,families", [
    (fxl201_noncontiguous_matmul, ("matmul", "attention")),
    (fxl202_noncontiguous_conv, ("conv",)),
    (fxl203_noncontiguous_norm, ("norm", "softmax")),
    (fxl205_pad_copy, ("pad",)),
    (fxl206_noncontiguous_spatial, ("spatial",)),
    (fxl207_noncontiguous_rnn, ("rnn",)),
    (fxl210_istft_input_copy, ("spectral",)),
])
def test_the_layout_rules_check_exactly_the_ops_of_their_kernel_families(rule, families):
    view = _Recorder()
    list(rule.check(view, SimpleNamespace()))
    assert sorted(view.asked) == sorted(K.ops(family=families))


def test_every_kernel_op_is_checked_by_a_layout_rule():
    checked = set()
    for rule in (fxl201_noncontiguous_matmul, fxl202_noncontiguous_conv, fxl203_noncontiguous_norm, fxl205_pad_copy,
                 fxl206_noncontiguous_spatial, fxl207_noncontiguous_rnn, fxl210_istft_input_copy):
        view = _Recorder()
        list(rule.check(view, SimpleNamespace()))
        checked |= set(view.asked)
    assert checked == set(K.ops())


def test_fxl201_names_operands_by_their_registered_roles():
    assert K.operand_role("mv", "a") == "matrix" and K.operand_role("mv", "b") == "vector"
    assert K.operand_role("addmm", "a") == "mat1" and K.operand_role("baddbmm", "b") == "batch2"
    assert K.operand_role("matmul", "a") == "left operand" and K.operand_role("linear", "weight") == "weight"
    assert K.operand_role("mm", "output") == "output"  # no role: the operand's own name
    assert K.operand_role("no_such_op", "x") == "x"


def test_a_model_registered_in_a_registry_is_what_predict_dispatches_to():
    reg = KernelRegistry()
    seen = []

    @kernel_model("pool", family="pool", operands={"input": "input"}, registry=reg)
    def _pool(node, env):
        seen.append(node)
        return K.KernelPrediction("pool", "pool: test", ())

    node = SimpleNamespace(op="pool", args={})
    assert reg.ops() == ("pool",) and reg.ops(family="pool") == ("pool",) and reg.ops(family="matmul") == ()
    assert K.predict(node, registry=reg).path == "pool: test" and seen == [node]
    assert K.predict(node) is None  # the package's registry has no such model
    assert K.predict(SimpleNamespace(op="mm", args={}), registry=reg) is None


def test_a_second_model_for_one_op_is_an_error():
    reg = KernelRegistry()
    kernel_model("x", family="f", operands={}, registry=reg)(lambda node, env: None)
    with pytest.raises(ValueError, match="already registered"):
        kernel_model("x", family="f", operands={}, registry=reg)(lambda node, env: None)
    with pytest.raises(ValueError, match="already registered"):
        K.REGISTRY.register(KernelModel("mm", "matmul", {}, lambda node, env: None))


def test_undecided_symbols_make_predict_answer_none():
    from fxlint.tensor.symbolic import Undecided

    reg = KernelRegistry()

    @kernel_model("u", family="f", operands={}, registry=reg)
    def _undecided(node, env):
        raise Undecided("s0 == 4")

    assert K.predict(SimpleNamespace(op="u", args={}), registry=reg) is None
