"""The kernel stride model on hand-picked facts (each one measured; the sweep checks thousands more),
its ATen helper ports against torch itself, and its behaviour on symbols and other devices."""

from __future__ import annotations

import itertools

import pytest
import sympy
import torch
from torch._prims_common import suggest_memory_format

from fxlint import kernels as K
from fxlint.kernels.conv import ONEDNN_AMX_CONV1D
from fxlint.tensor.info import TensorInfo
from tests._sweep import leaf, strides_for

TI = TensorInfo.from_tensor


def ti(shape, stride=None, dtype=torch.float32, rg=False, device="cpu") -> TensorInfo:
    stride = tuple(stride) if stride is not None else strides_for(shape)
    return TensorInfo(shape=tuple(shape), stride=stride, storage_offset=0, dtype=dtype, device=torch.device(device),
                      requires_grad=rg)


def fwd(pred, operand=None):
    return [(c.operand, c.nbytes) for c in pred.forward(operand)]


# --------------------------------------------------------------------------- matrices


def test_mm_takes_transposes_and_padded_rows_but_clones_step_slices_and_expands():
    a = torch.randn(16, 8)
    assert fwd(K.predict_mm(TI(a.t().contiguous().t()), TI(torch.randn(8, 12)))) == []
    assert fwd(K.predict_mm(TI(torch.randn(16, 11)[:, :8]), TI(torch.randn(8, 12)))) == []
    assert fwd(K.predict_mm(TI(torch.randn(16, 16)[:, ::2]), TI(torch.randn(8, 12)))) == [("a", 512)]
    assert fwd(K.predict_mm(TI(a), TI(torch.randn(1, 12).expand(8, 12)))) == [("b", 384)]


def test_mm_backward_clones_the_saved_operand_again():
    a = leaf((16, 8), strides_for((16, 8), step={1: 2}))
    b = leaf((8, 12), strides_for((8, 12)), requires_grad=True)
    pred = K.predict_mm(TI(a), TI(b), grad=True)
    assert [(c.operand, c.nbytes) for c in pred.backward()] == [("a", 512)]


def test_attention_layouts_exactly():
    B, S, H, D = 2, 16, 4, 8
    bhsd = ti((B, H, S, D))
    bshd_t = ti((B, H, S, D), strides_for((B, H, S, D), order=[0, 2, 1, 3]))  # (B,S,H,D).transpose(1, 2)
    k_t = ti((B, H, D, S), strides_for((B, H, D, S), order=[0, 1, 3, 2]))  # contiguous k.transpose(-2, -1)
    kt_from_bshd = ti((B, H, D, S), strides_for((B, H, D, S), order=[0, 3, 1, 2]))
    assert fwd(K.predict_matmul(bhsd, k_t)) == []  # the standard contiguous case is free
    copies = fwd(K.predict_matmul(bshd_t, kt_from_bshd))
    assert copies == [("a", B * H * S * D * 4), ("b", B * H * S * D * 4)]
    assert {c.reason for c in K.predict_matmul(bshd_t, kt_from_bshd).forward()} == {"batch-fold"}
    # one head, or a batch of one: the batch dims merge after all (size-1 dims take any stride)
    for b, h in ((2, 1), (1, 4)):
        q1 = ti((b, h, S, D), strides_for((b, h, S, D), order=[0, 2, 1, 3]))
        k1 = ti((b, h, D, S), strides_for((b, h, D, S), order=[0, 3, 1, 2]))
        assert fwd(K.predict_matmul(q1, k1)) == [], (b, h)


def test_linear_on_a_permuted_input_copies_only_with_a_trainable_weight():
    x = ti((2, 8, 16), strides_for((2, 8, 16), order=[1, 0, 2]))  # (S, B, D).permute(1, 0, 2)
    w = ti((24, 16), rg=True)
    w_frozen = ti((24, 16))
    assert [c.reason for c in K.predict_linear(x, w, ti((24,), rg=True), grad=True).forward()] == ["fold-grad"]
    assert fwd(K.predict_linear(x, w_frozen, None)) == []
    assert fwd(K.predict_matmul(x, ti((16, 24), strides_for((16, 24), order=[1, 0]), rg=True))) == [("a", 1024)]


def test_broadcast_batch_is_materialised_at_the_full_batch_size():
    q = ti((2, 4, 16, 8))
    k = ti((1, 4, 8, 16))
    pred = K.predict_matmul(q, k)
    assert [(c.operand, c.nbytes, c.reason) for c in pred.forward()] == [("b", 2 * 4 * 8 * 16 * 4, "broadcast")]
    # a 3-d broadcast of batch 1 is taken by bmm with a zero batch stride: no copy
    assert fwd(K.predict_matmul(ti((8, 16, 8)), ti((1, 8, 16)))) == []


def test_two_d_at_n_d_with_trainable_left_operand_copies_the_operand_and_the_result():
    w = ti((24, 16), rg=True)
    x = ti((2, 16, 8))
    pred = K.predict_matmul(w, x, grad=True)
    assert [(c.operand, c.nbytes) for c in pred.forward()] == [("b", 1024), ("output", 2 * 24 * 8 * 4)]


def test_bmm_paths():
    env = K.Env.current()
    a = ti((4, 16, 16), (512, 32, 2))  # a[..., ::2] of (4, 16, 32)
    b = ti((4, 16, 12))
    per_batch = K.predict_bmm(a, b, env=env)
    assert per_batch.path.endswith("gemm per batch")
    assert [(c.operand, c.count, c.nbytes) for c in per_batch.forward()] == [("a", 4, 4 * 16 * 16 * 4)]
    assert K.predict_bmm(ti((4, 4, 4), (64, 16, 2)), ti((4, 4, 4)), env=env).forward() == []  # tiny: naive loop
    expanded = ti((4, 16, 12), (0, 12, 1))
    assert K.predict_bmm(ti((4, 16, 16)), expanded, env=env).forward() == []  # float32: any batch stride
    if env.mkldnn and env.mkldnn_bf16:
        bf = K.predict_bmm(ti((4, 16, 16), dtype=torch.bfloat16), ti((4, 16, 12), (0, 12, 1), torch.bfloat16), env=env)
        assert [(c.operand, c.op) for c in bf.forward()] == [("b", "aten::contiguous")]


# --------------------------------------------------------------------------- convolution


def test_permuted_clips_into_conv3d_copy_forward_and_backward():
    clips = ti((2, 3, 8, 16, 16), strides_for((2, 3, 8, 16, 16), order=[0, 2, 1, 3, 4]), rg=False)
    w = ti((8, 3, 3, 3, 3), rg=True)
    out = ti((2, 8, 8, 16, 16))
    pred = K.predict_conv(clips, w, output=out, stride=(1, 1, 1), dilation=(1, 1, 1), grad=True)
    assert [(c.operand, c.phase, c.nbytes) for c in pred.copies if c.avoidable] == [
        ("input", "forward", clips.nbytes), ("input", "backward", clips.nbytes)]


def test_channels_last_input_converts_a_contiguous_weight_and_is_not_copied():
    x = ti((2, 3, 16, 16), strides_for((2, 3, 16, 16), order=[0, 2, 3, 1]))
    w = ti((8, 3, 3, 3))
    pred = K.predict_conv(x, w, output=ti((2, 8, 14, 14)), stride=(1, 1), dilation=(1, 1))
    assert [(c.operand, c.nbytes) for c in pred.forward()] == [("weight", w.nbytes)]
    w_cl = ti((8, 3, 3, 3), strides_for((8, 3, 3, 3), order=[0, 2, 3, 1]))
    assert K.predict_conv(x, w_cl, output=ti((2, 8, 14, 14)), stride=(1, 1), dilation=(1, 1)).forward() == []


def test_conv1d_copies_any_non_contiguous_input_even_a_channels_last_like_one():
    x = ti((2, 6, 16), strides_for((2, 6, 16), order=[0, 2, 1]))  # (B, L, C).transpose(1, 2)
    pred = K.predict_conv(x, ti((5, 6, 3)), output=ti((2, 5, 14)), stride=(1,), dilation=(1,))
    assert [(c.operand, c.reason) for c in pred.forward()] == [("input", "conv1d-input")]


def test_small_conv3d_takes_the_slow_path_that_copies_channels_last_3d_input():
    x = ti((1, 3, 4, 6, 6), strides_for((1, 3, 4, 6, 6), order=[0, 2, 3, 4, 1]))
    pred = K.predict_conv(x, ti((5, 3, 3, 3, 3)), output=ti((1, 5, 2, 4, 4)), has_bias=False, stride=(1, 1, 1),
                          dilation=(1, 1, 1), env=K.Env(num_threads=2))
    assert pred.path.startswith("conv3d: slow 3-d")
    assert [c.operand for c in pred.forward()] == ["input"]


# --------------------------------------------------------------------------- norms, softmax


@pytest.mark.parametrize("kind", ["layer_norm", "instance_norm"])
def test_norms_copy_non_contiguous_input(kind):
    x = ti((2, 8, 8, 16), strides_for((2, 8, 8, 16), order=[0, 3, 1, 2]))  # NCHW.permute(0, 2, 3, 1)
    pred = K.predict_norm(kind, x, grad=True)
    assert fwd(pred) == [("input", x.nbytes)]
    assert [c.nbytes for c in pred.backward()] == ([x.nbytes] if kind == "layer_norm" else [])


def test_group_norm_keeps_channels_last_and_softmax_does_not():
    cl = ti((2, 8, 4, 4), strides_for((2, 8, 4, 4), order=[0, 2, 3, 1]))
    assert fwd(K.predict_norm("group_norm", cl)) == []
    assert fwd(K.predict_softmax(cl)) == [("input", cl.nbytes)]
    assert fwd(K.predict_norm("batch_norm", cl, training=True)) == []


def test_rms_norm_copies_a_permuted_result_but_not_a_sliced_one():
    permuted = ti((2, 8, 6), strides_for((2, 8, 6), order=[1, 0, 2]))
    sliced = ti((2, 8, 6), strides_for((2, 8, 6), step={2: 2}))
    assert fwd(K.predict_norm("rms_norm", permuted)) == [("input", permuted.nbytes)]
    assert fwd(K.predict_norm("rms_norm", sliced)) == []


# --------------------------------------------------------------------------- ATen ports


def _layouts(shape):
    n = len(shape)
    for order in itertools.permutations(range(n)):
        yield strides_for(shape, order=order)
    yield strides_for(shape, step={n - 1: 2})
    yield strides_for(shape, zero=(0,))
    yield strides_for(shape, pad={n - 1: 2})


def test_suggest_memory_format_and_contiguity_agree_with_torch():
    for shape in [(2, 3, 4, 5), (1, 3, 1, 5), (2, 1, 4, 4), (2, 3, 4, 5, 2), (1, 1, 1, 1)]:
        for st in _layouts(shape):
            t = torch.empty_strided(shape, st)
            # torch's own port of c10's is_channels_last_strides_* (what suggest_memory_format reads)
            expect = str(suggest_memory_format(t)).replace("torch.", "").replace("_format", "")
            assert K.suggest_memory_format(TI(t)) == expect, (shape, st)
            dense_cl = expect != "contiguous" and t.is_contiguous(memory_format=suggest_memory_format(t)) \
                and not t.is_contiguous()
            assert (K.is_channels_last_dense(TI(t)) is not None) == dense_cl, (shape, st)


# --------------------------------------------------------------------------- symbols, devices


def test_symbolic_sizes_decide_when_they_can_and_say_unknown_when_they_cannot():
    s0, s1 = sympy.Symbol("s0", integer=True, positive=True), sympy.Symbol("s1", integer=True, positive=True)
    H, D = 4, 8
    # (B, S, H, D).transpose(1, 2) with symbolic B and S: the batch dims (B, H) never merge
    q = ti((s0, H, s1, D), (s1 * H * D, D, H * D, 1))
    k = ti((s0, H, D, s1), (s1 * H * D, D, 1, H * D))
    pred = K.predict_matmul(q, k)
    assert pred is not None and [c.operand for c in pred.forward()] == ["a", "b"]
    assert sympy.simplify(pred.forward()[0].nbytes - s0 * s1 * H * D * 4) == 0
    # contiguous (B, H, S, D) with symbols: free, decided
    qc = ti((s0, H, s1, D), (H * s1 * D, s1 * D, D, 1))
    kc = ti((s0, H, D, s1), (H * s1 * D, s1 * D, 1, D))
    assert K.predict_matmul(qc, kc).forward() == []


def test_undecidable_comparisons_return_none():
    s0, s1 = sympy.Symbol("s0", integer=True, positive=True), sympy.Symbol("s1", integer=True, positive=True)
    b = ti((8, s0), (1, s1))  # column-major only if s1 >= 8: depends on the symbol
    assert K.predict_mm(ti((4, 8)), b) is None


def test_other_devices_keep_only_the_composite_copies():
    q = ti((2, 4, 16, 8), strides_for((2, 4, 16, 8), order=[0, 2, 1, 3]), device="meta")
    k = ti((2, 4, 8, 16), strides_for((2, 4, 8, 16), order=[0, 2, 3, 1]), device="meta")
    pred = K.predict_matmul(q, k)
    assert pred is not None and not pred.output_known and [c.operand for c in pred.forward()] == ["a", "b"]
    # linear folds like on the CPU and names its operand as the CPU prediction does
    x = ti((8, 4, 16), (16, 128, 1), rg=True, device="meta")
    lin = K.predict_linear(x, ti((32, 16), rg=True, device="meta"), None, has_bias=False, grad=True)
    assert lin is not None and not lin.output_known
    assert [(c.operand, c.reason) for c in lin.forward()] == [("input", "fold-grad")]
    assert K.predict_mm(ti((4, 8), device="meta"), ti((8, 4), device="meta")) is None
    assert K.predict_conv(ti((2, 3, 8, 8), device="meta"), ti((4, 3, 3, 3), device="meta")) is None
    assert K.predict_softmax(ti((2, 3), device="meta")) is None


def test_env_reads_the_build():
    env = K.Env.current()
    assert env.num_threads == torch.get_num_threads()
    assert env.mkldnn == (torch.backends.mkldnn.is_available() and torch.backends.mkldnn.enabled)
    feats = dict(torch.cpu.get_capabilities())
    assert (env.avx512_bf16, env.avx512_fp16, env.amx) == (
        bool(feats.get("avx512_bf16")), bool(feats.get("avx512_fp16")), bool(feats.get("amx_tile")))


def _cpuinfo_flags() -> set[str] | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return None


def test_env_cpu_features_are_this_machines():
    """What the model reads of the CPU is what the kernel reports (lscpu's flags), on whatever CPU runs this."""
    flags = _cpuinfo_flags()
    if flags is None:
        pytest.skip("no /proc/cpuinfo flags on this system")
    env = K.Env.current()
    # a feature the model reads is one the kernel reports (the reverse can differ: cpuinfo also asks
    # whether the OS saves the feature's registers, which a VM may not)
    assert not env.amx or "amx_tile" in flags
    assert not env.avx512_bf16 or "avx512_bf16" in flags
    assert not env.avx512_fp16 or "avx512_fp16" in flags
    if "avx512f" not in flags:  # a CPU without AVX512 has none of its extensions
        assert not (env.amx or env.avx512_bf16 or env.avx512_fp16)
    assert env.describe()["cpu_family"] == env.cpu_family and env.cpu_family != "unknown"


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_reduced_precision_conv1d_through_onednn_on_amx_leaves_the_input_copies_unknown(dtype):
    """Measured on Sapphire Rapids (AMX): a bfloat16 conv1d through oneDNN makes a strided input contiguous
    twice, where AVX2 and Zen 4 (AVX512-BF16) make it once. ATen's own copy stays claimed on every CPU;
    on AMX the rest of the input's copies is an unknown part the probe measures, elsewhere none."""
    x = ti((2, 4, 10), strides_for((2, 4, 10), order=[0, 2, 1]), dtype=dtype)
    w, out = ti((8, 4, 1), dtype=dtype), ti((2, 8, 5), dtype=dtype)
    base = dict(mkldnn=True, mkldnn_bf16=True, mkldnn_fp16=True, num_threads=2)
    for amx in (False, True):
        pred = K.predict_conv(x, w, output=out, has_bias=False, stride=(2,), dilation=(1,),
                              env=K.Env(**base, amx=amx))
        assert "oneDNN" in pred.path
        assert [(c.operand, c.reason) for c in pred.forward()] == [("input", "conv1d-input")]
        assert pred.knows("forward", "input", ["conv1d-input"])  # ATen's copy: claimed everywhere
        assert pred.knows("forward", "input") is (not amx)
        amx_parts = [u for u in pred.machine_dependent if u.reason == ONEDNN_AMX_CONV1D]
        assert pred.probe is not None and len(amx_parts) == (1 if amx else 0)  # the probe can answer it
    # a contiguous input is not copied on any CPU: nothing unknown about it
    contig = K.predict_conv(ti((2, 4, 10), dtype=dtype), w, output=out, has_bias=False, stride=(2,),
                            dilation=(1,), env=K.Env(**base, amx=True))
    assert contig.forward() == [] and contig.knows("forward", "input")
    # float32 and the native kernels are ATen's alone: known on AMX too
    f32 = K.predict_conv(ti((2, 4, 10), x.stride), ti((8, 4, 1)), output=ti((2, 8, 5)), has_bias=False,
                         stride=(2,), dilation=(1,), env=K.Env(**base, amx=True))
    assert f32.knows("forward", "input")
    native = K.predict_conv(x, w, output=out, has_bias=False, stride=(2,), dilation=(1,),
                            env=K.Env(mkldnn=False, amx=True))
    assert "oneDNN" not in native.path and native.knows("forward", "input")
