"""FXL201 noncontiguous-matmul: held-out spellings (torch.bmm/matmul/mm/addmm/F.linear/@), the right line
and byte count, every finding confirmed by the runtime, and the standard code that must stay clean."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import fxlint
from fxlint.kernels import Env
from fxlint.runtime.oracle import check
from tests.conftest import line_of

HERE = __file__
B, S, H, D = 2, 16, 4, 8


def _line(marker: str) -> int:
    return line_of(HERE, marker)


def _fxl201(report):
    return [f for f in report.findings if f.code == "FXL201"]


class Fn(nn.Module):
    def __init__(self, fn, *params):
        super().__init__()
        self.fn = fn
        self.p = nn.ParameterList(params)

    def forward(self, *xs):
        return self.fn(*xs, *self.p)


def attention_bshd(q, k):
    return torch.matmul(q.permute(0, 2, 1, 3), k.permute(0, 2, 3, 1))  # permuted attention operands


def bmm_step_slice(x, y):
    return torch.bmm(x[..., ::2], y)  # bmm on a step slice


def mm_step_slice(a, b):
    return torch.mm(a, b[:, ::2])  # mm on a step slice


def broadcast_keys(q, k):
    return q @ k  # broadcast key batch


def addmm_expanded(bias, a, row):
    return torch.addmm(bias, a, row.expand(8, 12))  # addmm on an expanded matrix


POSITIVE = [
    # fn, inputs, line marker, expected bytes per finding
    (attention_bshd, lambda: (torch.randn(B, S, H, D), torch.randn(B, S, H, D)),
     "# permuted attention operands", [B * S * H * D * 4] * 2),
    (bmm_step_slice, lambda: (torch.randn(4, 16, 32), torch.randn(4, 16, 12)),
     "# bmm on a step slice", [4 * 16 * 16 * 4]),
    (mm_step_slice, lambda: (torch.randn(16, 8), torch.randn(8, 24)),
     "# mm on a step slice", [8 * 12 * 4]),
    (broadcast_keys, lambda: (torch.randn(B, H, S, D), torch.randn(1, H, D, S)),
     "# broadcast key batch", [B * H * D * S * 4]),
    (addmm_expanded, lambda: (torch.randn(12), torch.randn(16, 8), torch.randn(1, 12)),
     "# addmm on an expanded matrix", [8 * 12 * 4]),
]


@pytest.mark.parametrize("fn,make,marker,sizes", POSITIVE, ids=[p[0].__name__ for p in POSITIVE])
def test_positive_right_line_right_bytes_confirmed(fn, make, marker, sizes):
    inputs = make()
    result = check(fn, inputs, select="FXL201")
    found = _fxl201(result.report)
    assert sorted(f.bytes for f in found) == sorted(sizes), [f.message for f in found]
    assert all((f.file, f.line) == (HERE, _line(marker)) for f in found)
    assert all(f.severity == fxlint.Severity.WARNING for f in found)
    result.assert_all_confirmed()
    result.assert_no_unexplained()


def test_bmm_per_batch_copies_are_one_finding_with_each_copy_listed():
    result = check(bmm_step_slice, (torch.randn(4, 16, 32), torch.randn(4, 16, 12)), select="FXL201")
    [f] = _fxl201(result.report)
    assert f.details["copy_sizes"] == [16 * 16 * 4] * 4  # bmm clones batch by batch
    assert "gemm per batch" in f.details["kernel_path"]
    assert len(result.copies_at(f)) == 4


class PermutedLinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 24)

    def forward(self, x):  # x: (S, B, E)
        return F.linear(x.permute(1, 0, 2), self.proj.weight, self.proj.bias)  # linear on permuted input


def test_linear_on_permuted_input_with_trainable_weight_and_its_fix():
    m, x = PermutedLinear(), torch.randn(8, 2, 16)
    result = check(m, (x,), select="FXL201")
    [f] = _fxl201(result.report)
    assert (f.line, f.bytes) == (_line("# linear on permuted input"), x.numel() * 4)
    assert "fold" in f.message and "requires grad" in f.message
    assert "linear(x).transpose(0, 1)" in f.fix
    result.assert_all_confirmed()
    # the fix really removes the copy and gives the same result
    fixed = lambda x: F.linear(x, m.proj.weight, m.proj.bias).permute(1, 0, 2)  # noqa: E731
    assert torch.allclose(fixed(x), m(x))
    assert [c for c in fxlint.audit(fixed, (x,)).copies if c.avoidable] == []


class WeightAtActivations(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(24, 16))

    def forward(self, x):  # x: (B, 16, N)
        return self.w @ x  # 2-D parameter @ 3-D activations


def test_two_d_parameter_at_batch_copies_operand_and_result():
    x = torch.randn(2, 16, 8)
    result = check(WeightAtActivations(), (x,), select="FXL201")
    [f] = _fxl201(result.report)
    assert f.bytes == x.numel() * 4 + 2 * 24 * 8 * 4
    assert sorted(f.details["copy_sizes"]) == sorted([x.numel() * 4, 2 * 24 * 8 * 4])
    assert "result back" in f.message
    result.assert_all_confirmed()


def test_backward_bytes_counted_and_match_the_training_step():
    a = torch.randn(16, 16)
    w = nn.Parameter(torch.randn(8, 12))

    def f(a):
        return torch.mm(a[:, ::2], w)  # saved step slice

    [finding] = _fxl201(fxlint.lint(f, (a,), select="FXL201"))
    assert finding.details["backward_bytes"] == 16 * 8 * 4
    assert "again in backward" in finding.message
    audit = fxlint.audit(f, (a,), train=True)
    bwd = [c for c in audit.at(HERE, _line("# saved step slice"), phase="backward") if c.avoidable]
    assert sum(c.bytes for c in bwd) == finding.details["backward_bytes"]


# --------------------------------------------------------------------------- precision: standard code is clean


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))

    def forward(self, x):
        return self.net(x)


class ContiguousAttention(nn.Module):
    def __init__(self, dim=32, heads=4):
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(dim, dim)

    def forward(self, q, k, v):  # contiguous (B, H, S, D)
        att = (q @ k.transpose(-2, -1)).softmax(-1)
        return att @ v


NEGATIVE = [
    ("mlp 2-d", MLP(), (torch.randn(8, 32),)),
    ("mlp 3-d tokens", MLP(), (torch.randn(4, 7, 32),)),
    ("attention on contiguous (B, H, S, D)", ContiguousAttention(),
     (torch.randn(B, H, S, D), torch.randn(B, H, S, D), torch.randn(B, H, S, D))),
    ("bmm with a last-two-dims transpose", Fn(lambda q, k: torch.bmm(q, k.transpose(1, 2))),
     (torch.randn(8, 16, 8), torch.randn(8, 16, 8))),
    ("3-d @ frozen 2-d on a permuted input", Fn(lambda x, w: torch.matmul(x.permute(1, 0, 2), w)),
     (torch.randn(16, 2, 8), torch.randn(8, 24))),
    ("sdpa on transposed heads", Fn(lambda q, k, v: F.scaled_dot_product_attention(
        q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))),
     (torch.randn(B, S, H, D), torch.randn(B, S, H, D), torch.randn(B, S, H, D))),
    ("one head transposed", Fn(lambda q, k: q.transpose(1, 2) @ k.transpose(1, 2).transpose(-1, -2)),
     (torch.randn(B, S, 1, D), torch.randn(B, S, 1, D))),
    ("row slice is padded rows", Fn(lambda a, b: a[::2] @ b), (torch.randn(32, 8), torch.randn(8, 12))),
]


@pytest.mark.parametrize("label,model,inputs", NEGATIVE, ids=[n[0] for n in NEGATIVE])
def test_standard_code_is_clean_and_really_copies_nothing(label, model, inputs):
    report = fxlint.lint(model, inputs)
    assert [f for f in report.at_or_above("warning") if f.code.startswith("FXL2")] == []
    copies = [c for c in fxlint.audit(model, inputs).copies if c.avoidable]
    assert copies == [], copies


# --------------------------------------------------------------------------- other graph origins


class PermutedAttention(nn.Module):
    def forward(self, q, k):
        return torch.matmul(q.transpose(1, 2), k.transpose(1, 2).transpose(-1, -2))  # export attention


def test_export_and_symbolic_trace_find_the_same_copies():
    q, k = torch.randn(B, S, H, D), torch.randn(B, S, H, D)
    m = PermutedAttention()
    ep = torch.export.export(m, (q, k))
    found = _fxl201(fxlint.lint(ep, (q, k)))
    assert sorted(f.bytes for f in found) == [q.numel() * 4] * 2
    assert all(f.line == _line("# export attention") for f in found)
    traced = _fxl201(fxlint.lint(torch.fx.symbolic_trace(m), (q, k)))
    assert sorted(f.bytes for f in traced) == [q.numel() * 4] * 2


def test_dynamic_shapes_do_not_crash_and_keep_a_formula():
    torch._dynamo.reset()
    q, k = torch.randn(B, S, H, D), torch.randn(B, S, H, D)
    torch._dynamo.mark_dynamic(q, 1)
    torch._dynamo.mark_dynamic(k, 1)
    with fxlint.collect() as session:
        torch.compile(PermutedAttention(), backend="fxlint", options={"inner": "eager", "select": "FXL201"})(q, k)
    found = [f for f in session.findings if f.code == "FXL201"]
    assert len(found) == 2
    assert all(f.bytes is None and f.bytes_expr for f in found)


def bf16_keys_shared_across_batch(q, k):
    return torch.bmm(q, k.expand(q.shape[0], -1, -1))  # bf16 bmm on an expanded batch


@pytest.mark.skipif(not Env.current().onednn_reduced(torch.bfloat16),
                    reason="needs oneDNN on, with bfloat16 kernels on this CPU (FXLINT_TEST_MKLDNN=0 turns it off)")
def test_bfloat16_bmm_copies_an_expanded_batch_that_float32_takes_as_is():
    q, k = torch.randn(4, 32, 16), torch.randn(1, 16, 32)
    result = check(bf16_keys_shared_across_batch, (q.bfloat16(), k.bfloat16()), select="FXL201")
    [f] = _fxl201(result.report)
    assert (f.line, f.bytes) == (_line("# bf16 bmm on an expanded batch"), 4 * 16 * 32 * 2)
    assert "oneDNN" in f.message
    result.assert_all_confirmed()
    assert _fxl201(fxlint.lint(bf16_keys_shared_across_batch, (q, k))) == []
    assert [c for c in fxlint.audit(bf16_keys_shared_across_batch, (q, k)).copies if c.avoidable] == []


def test_bfloat16_attention_copies_the_same_operands():
    q, k = torch.randn(B, S, H, D).bfloat16(), torch.randn(B, S, H, D).bfloat16()
    result = check(attention_bshd, (q, k), select="FXL201")
    assert sorted(f.bytes for f in _fxl201(result.report)) == [q.numel() * 2] * 2
    result.assert_all_confirmed()
    result.assert_no_unexplained()


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    """Every positive of the fixture reported with its exact text, no negative reported."""
    from tests.rule_snapshots import marked_lines, reported_lines, rule_output

    out = rule_output("FXL201")
    assert reported_lines(out, "FXL201") == set(marked_lines("FXL201", "positive")) and "# negative" not in out
    assert out.count("FXL201 ") == 11  # SDPA's math path copies q, k and v: three findings on its line
    assert out == snapshot


def test_fixture_copies_are_confirmed_by_the_runtime():
    """What the snapshot claims is what the profiler sees: every finding confirmed, no copy unexplained."""
    from tests.rule_snapshots import load_fixture

    model, inputs = load_fixture("FXL201").make()
    report = fxlint.lint(model, inputs, select="FXL201", config=False, confirm=True)
    assert report.findings and all(f.status == "confirmed" for f in report.findings), report
    assert report.unexplained == []


class WindowAttention(nn.Module):
    """tiny_vit's pattern: qkv permuted into (B, H, N, D) and a 3-D (H, N, N) relative-position bias."""

    def __init__(self, dim=32, heads=4, n=16, bias_4d=False):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.heads, self.bias_4d = heads, bias_4d
        self.table = nn.Parameter(torch.randn(heads, n * n))

    def forward(self, x):
        B, N, C = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        bias = self.table.view(self.heads, N, N) * 1.0  # computed (tiny_vit gathers it), not a view of the table
        if self.bias_4d:
            bias = bias.unsqueeze(0)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=bias)  # sdpa with a relative-position bias


def test_sdpa_math_path_copies_q_k_v_and_the_4d_mask_fix_removes_them():
    x = torch.randn(2, 16, 32)
    m = WindowAttention()
    with torch.no_grad():
        result = check(m, (x,), select="FXL201")
    found = _fxl201(result.report)
    assert sorted(f.details["operand"] for f in found) == ["key", "query", "value"]
    assert all(f.line == _line("# sdpa with a relative-position bias") and f.bytes == 2 * 16 * 32 * 4 for f in found)
    assert all("attn_mask is 3-D" in f.message and "unsqueeze(0)" in f.fix for f in found)
    assert {f.details["origin"] for f in found} == {"q", "k", "v"}
    result.assert_all_confirmed()
    fixed = WindowAttention(bias_4d=True)
    fixed.load_state_dict(m.state_dict())
    with torch.no_grad():
        assert torch.allclose(fixed(x), m(x), atol=1e-5)
        assert _fxl201(fxlint.lint(fixed, (x,))) == []
        assert [c for c in fxlint.audit(fixed, (x,)).copies if c.avoidable and "scaled_dot_product" in c.top_op] == []


def test_sdpa_on_5d_windows_copies_the_value_whose_batch_dims_do_not_merge():
    def hiera(qkv):  # (B, 3, heads, windows, N, D) unbound on dim 1: 5-D q/k/v
        q, k, v = qkv.unbind(1)
        return F.scaled_dot_product_attention(q, k, v)  # sdpa on 5-D windows

    qkv = torch.randn(2, 3, 4, 2, 16, 8)
    result = check(hiera, (qkv,), select="FXL201")
    [f] = _fxl201(result.report)
    assert (f.details["operand"], f.bytes, f.line) == ("value", 2 * 4 * 2 * 16 * 8 * 4, _line("# sdpa on 5-D windows"))
    assert "4-D" in f.fix
    result.assert_all_confirmed()
    result.assert_no_unexplained()


SDPA_FUSED = [
    ("no mask", lambda q, k, v: F.scaled_dot_product_attention(q, k, v)),
    ("2-D mask", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=torch.zeros(16, 16))),
    ("causal", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)),
]


@pytest.mark.parametrize("label,fn", SDPA_FUSED, ids=[s[0] for s in SDPA_FUSED])
def test_sdpa_fused_path_reads_the_qkv_layout_without_copying(label, fn):
    q, k, v = torch.randn(2, 16, 3, 4, 8).permute(2, 0, 3, 1, 4).unbind(0)
    assert _fxl201(fxlint.lint(fn, (q, k, v))) == []
    assert [c for c in fxlint.audit(fn, (q, k, v)).copies if c.avoidable and "scaled_dot_product" in c.top_op] == []


def maxvit_scores(q, k):
    return torch.einsum("B G H I D, B G H J D -> B G H I J", q, k)  # einsum over permuted windows


def test_einsum_copies_operands_whose_batch_dims_do_not_merge():
    q = torch.randn(2, 5, 3, 4, 8).permute(0, 2, 3, 1, 4)  # (B, G, H, I, D) from (B, I, G, H, D)
    k = torch.randn(2, 3, 4, 5, 8)
    result = check(maxvit_scores, (q, k), select="FXL201")
    [f] = _fxl201(result.report)
    assert (f.line, f.bytes, f.details["operand"], f.details["reason"]) == (
        _line("# einsum over permuted windows"), q.numel() * 4, "a", "einsum-fold")
    assert "torch.einsum copies its first operand" in f.message and "come first and in order" in f.fix
    result.assert_all_confirmed()
    result.assert_no_unexplained()
    qc = q.contiguous()
    assert _fxl201(fxlint.lint(maxvit_scores, (qc, k))) == []
    assert [c for c in fxlint.audit(maxvit_scores, (qc, k)).copies if c.avoidable] == []
