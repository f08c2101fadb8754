"""The runtime copy audit: what the profiler records, attributed to the user's line;
and the cross-check of static findings against it."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn as nn

import fxlint
from fxlint.findings import Finding, Severity
from fxlint.runtime.confirm import match
from fxlint.runtime.oracle import check
from fxlint.runtime.profiler import REDUCTION_KERNELS, UNAVOIDABLE
from tests.conftest import line_of, run_cli

HERE = __file__


def _line(marker: str) -> int:
    return line_of(HERE, marker)


class Video(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(3, 8, 3, padding=1)

    def forward(self, clips):  # clips: (B, T, C, H, W)
        return self.conv(clips.permute(0, 2, 1, 3, 4))  # conv3d on permuted clips


CLIPS = torch.randn(2, 4, 3, 8, 8)


def test_permuted_conv3d_input_is_one_input_sized_copy_on_the_conv_line():
    report = fxlint.audit(Video(), (CLIPS,))
    line = _line("# conv3d on permuted clips")
    copies = report.at(HERE, line)
    assert len(copies) == 1
    c = copies[0]
    assert c.bytes == CLIPS.numel() * 4
    assert c.kernel == "aten::copy_" and c.op == "aten::contiguous" and c.top_op == "aten::conv3d"
    assert "aten::convolution" in c.chain and c.kind == "layout" and c.avoidable
    assert c.module_path == "conv" and c.phase == "forward"
    assert report.total_bytes == c.bytes


def test_training_step_pays_the_layout_copy_again_in_backward():
    m = Video()
    report = fxlint.audit(m, (CLIPS,), train=True)
    line = _line("# conv3d on permuted clips")
    fwd = report.at(HERE, line, phase="forward")
    bwd = report.at(HERE, line, phase="backward")
    assert [c.bytes for c in fwd] == [CLIPS.numel() * 4]
    assert CLIPS.numel() * 4 in [c.bytes for c in bwd]
    assert all(c.grad_fn == "ConvolutionBackward0" for c in bwd)
    assert all(p.grad is None for p in m.parameters()), "the audit left gradients on the model"


def test_contiguous_input_to_conv3d_copies_nothing():
    m = Video()
    report = fxlint.audit(lambda x: m.conv(x), (CLIPS.permute(0, 2, 1, 3, 4).contiguous(),))
    assert report.copies == []


def test_last_two_dims_transpose_into_bmm_copies_nothing():
    def attn(q, k):
        return torch.bmm(q, k.transpose(1, 2))  # bmm with transposed k

    q, k = torch.randn(4, 16, 8), torch.randn(4, 16, 8)
    assert fxlint.audit(attn, (q, k)).copies == []
    report = fxlint.audit(attn, (q, k.requires_grad_()), train=True)
    assert report.at(HERE, _line("# bmm with transposed k")) == []
    # the gradient of k arrives transposed; AccumulateGrad copies it to k's layout
    [acc] = report.copies
    assert acc.grad_fn == "torch::autograd::AccumulateGrad" and acc.bytes == k.numel() * 4 and acc.file is None


def test_matmul_on_permuted_4d_operands_clones_under_reshape():
    def attn(q, k):  # q, k: (B, S, H, D)
        return torch.matmul(q.permute(0, 2, 1, 3), k.permute(0, 2, 3, 1))  # batch dims B,H cannot fold

    q, k = torch.randn(2, 5, 3, 4), torch.randn(2, 5, 3, 4)
    copies = fxlint.audit(attn, (q, k)).at(HERE, _line("# batch dims B,H cannot fold"))
    assert len(copies) == 2
    for c in copies:
        assert c.top_op == "aten::matmul" and "aten::reshape" in c.chain and c.op == "aten::clone"
        assert c.bytes == q.numel() * 4


def test_matmul_3d_by_2d_on_permuted_operand_copies_nothing():
    """Folklore says a permuted operand makes matmul copy; for 3-D @ 2-D, torch 2.13 calls bmm
    with the batch stride instead of folding, so nothing is copied."""

    def f(x, w):
        return torch.matmul(x.permute(1, 0, 2), w)

    assert fxlint.audit(f, (torch.randn(4, 5, 6), torch.randn(6, 7))).copies == []


def test_list_index_is_a_gather_of_the_output_size():
    def f(x):
        return x[:, [0, 2, 4, 6]]  # list index

    x = torch.randn(5, 8)
    [c] = fxlint.audit(f, (x,)).copies
    assert c.kernel == "aten::index" and c.kind == "gather" and c.bytes == 5 * 4 * 4
    assert c.line == _line("# list index")


def test_dtype_conversion_and_unavoidable_copies():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(50, 16)
            self.lin = nn.Linear(16, 16)

        def forward(self, tokens):
            h = self.emb(tokens)  # embedding lookup
            return self.lin(h).half()  # linear then half

    tokens = torch.randint(0, 50, (3, 5))
    report = fxlint.audit(M(), (tokens,))
    emb = report.at(HERE, _line("# embedding lookup"))
    assert [(c.op, c.avoidable) for c in emb] == [("aten::index_select", False)]
    assert emb[0].module_path == "emb" and "embedding" in emb[0].reason
    lin = report.at(HERE, _line("# linear then half"))
    bias = [c for c in lin if not c.avoidable]
    assert len(bias) == 1 and bias[0].top_op == "aten::linear" and bias[0].bytes == 3 * 5 * 16 * 4
    half = [c for c in lin if c.kind == "dtype"]
    assert len(half) == 1 and half[0].bytes == 3 * 5 * 16 * 2 and half[0].dtype == "float16"
    assert report.avoidable_bytes == half[0].bytes


def test_aggregation_by_line_counts_calls_and_shares():
    def f(x):
        for _ in range(3):
            x = x.t().contiguous()  # three copies per call
        return x[[0]]  # one gather

    x = torch.randn(8, 8)
    report = fxlint.audit(f, (x,))
    stats = report.by_line()
    assert stats[0].line == _line("# three copies per call") and stats[0].count == 3
    assert stats[0].bytes == 3 * 256 and stats[1].bytes == 32
    assert abs(sum(s.share for s in stats) - 1.0) < 1e-9
    text = str(report)
    assert "aten::contiguous" in text and "96.0%" in text
    d = json.loads(json.dumps(report.to_dict(), default=str))
    assert d["summary"]["bytes_per_call"] == 3 * 256 + 32 and len(d["lines"]) == 2


def test_audit_leaves_the_model_untouched():
    m = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4)).train()
    before = {k: v.clone() for k, v in m.state_dict().items()}
    x = torch.randn(8, 4, requires_grad=True)
    fxlint.audit(m, (x,), train=True)
    assert all(torch.equal(v, m.state_dict()[k]) for k, v in before.items())
    assert x.grad is None and all(p.grad is None for p in m.parameters())


def test_exported_program_and_symbolic_trace_attribution():
    class M(nn.Module):
        def forward(self, x):
            return x[:, [1, 2, 3]] * 2  # gather in a graph

    x = torch.randn(4, 6)
    ep_report = fxlint.audit(torch.export.export(M(), (x,)), (x,))
    gathers = [c for c in ep_report.copies if c.kind == "gather"]
    assert [(c.line, c.bytes) for c in gathers] == [(_line("# gather in a graph"), 4 * 3 * 4)]
    # the exported program also copies its lifted index constant on every call
    lifted = [c for c in ep_report.copies if c.top_op == "aten::lift_fresh_copy"]
    assert [c.bytes for c in lifted] == [3 * 8] and lifted[0].avoidable
    # and wraps the scalar 2 into a tensor: classified as unavoidable
    assert all(not c.avoidable for c in ep_report.copies if c.bytes == 4)
    gm_report = fxlint.audit(torch.fx.symbolic_trace(M()), (x,))
    [c] = [c for c in gm_report.copies if c.kind == "gather"]
    assert c.file == "<graph>" and c.function == "getitem"


# --------------------------------------------------------------------------- cross-check


def test_confirm_marks_true_findings_and_lists_unexplained_copies():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv3d(3, 4, 1)

        def forward(self, x, clips):
            a = x[:, [0, 2, 4]]  # confirmed gather
            b = self.conv(clips.permute(0, 2, 1, 3, 4))  # unexplained without the layout rules
            return a, b

    x = torch.randn(4, 8)
    report = fxlint.lint(M(), (x, CLIPS), confirm=True, select="FXL4")
    [f] = report.by_code("FXL401")
    assert f.status == "confirmed"
    assert report.summary()["confirmed"] == 1
    [u] = [u for u in report.unexplained if u["line"] == _line("# unexplained without")]
    assert u["bytes"] == CLIPS.numel() * 4 and "aten::contiguous" in u["ops"][0]
    assert "runtime: 1 confirmed" in str(report) and "no finding explains" in str(report)
    # with every rule, FXL202 explains the conv's copy
    full = fxlint.lint(M(), (x, CLIPS), confirm=True)
    assert [g.status for g in full.by_code("FXL202")] == ["confirmed"]
    assert [u for u in full.unexplained if u["line"] == _line("# unexplained without")] == []


def _fake(line: int, nbytes: int | None) -> Finding:
    return Finding(code="FXL101", name="contiguous-copy", severity=Severity.WARNING, message="m",
                   file=HERE, line=line, bytes=nbytes)


def test_wrong_predictions_are_refuted_and_unrun_lines_are_not_run():
    def f(x, flag: bool):
        y = x.t().contiguous()  # a real copy
        z = x + 1  # no copy here
        if flag:
            z = z.t().contiguous()  # never runs with flag=False
        return y, z

    x = torch.randn(4, 6)
    audit = fxlint.audit(f, (x, False))
    copy_line, add_line, branch_line = _line("# a real copy"), _line("# no copy here"), _line("# never runs")
    assert match(_fake(copy_line, 96), audit)[0] == "confirmed"
    assert match(_fake(copy_line, None), audit)[0] == "confirmed"
    assert match(_fake(copy_line, 97), audit)[0] == "refuted"  # wrong size
    assert match(_fake(add_line, 96), audit)[0] == "refuted"  # ran, no copy
    assert match(_fake(branch_line, 96), audit)[0] == "not-run"


def test_oracle_helper():
    result = check(lambda x: x[:, [0, 1, 2]], (torch.randn(3, 5),), select="FXL4")
    result.assert_all_confirmed()
    result.assert_no_unexplained()
    [f] = result.findings
    assert [c.kernel for c in result.copies_at(f)] == ["aten::index"]
    with pytest.raises(AssertionError, match="no finding explains"):
        check(lambda x: x.t().contiguous(), (torch.randn(3, 5),), select="FXL4").assert_no_unexplained()


# --------------------------------------------------------------------------- CLI


def test_cli_audit_text_json_and_train(write_module, tmp_path):
    path = write_module(
        """
        import torch
        import torch.nn as nn

        class Video(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv3d(3, 4, 3)

            def forward(self, clips):
                return self.conv(clips.permute(0, 2, 1, 3, 4))
        """,
        name="video.py",
    )
    proc = run_cli("audit", f"{path}:Video", "-i", "randn(2,4,3,8,8)")
    assert proc.returncode == 0, proc.stderr
    assert "video.py:11" in proc.stdout and "aten::conv3d>aten::contiguous" in proc.stdout
    assert "USDT" not in proc.stderr
    out = tmp_path / "a.json"
    proc = run_cli("audit", f"{path}:Video", "-i", "randn(2,4,3,8,8)", "--train", "--format", "json",
                   "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    phases = {c["phase"] for c in data["copies"]}
    assert phases == {"forward", "backward"} and data["summary"]["train"] is True
    proc = run_cli("audit", f"{path}:Video")
    assert proc.returncode == 2 and "needs example inputs" in proc.stderr


def test_cli_lint_confirm(write_module):
    path = write_module("import torch\n\ndef f(x):\n    return x[:, [0, 1]]\n", name="gather.py")
    proc = run_cli("lint", f"{path}:f", "-i", "randn(3,4)", "--confirm", "--format", "json")
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    assert data["findings"][0]["status"] == "confirmed"
    assert data["summary"]["confirmed"] == 1 and data["runtime"]["unexplained"] == []


def test_host_reads_are_recorded_and_explained_by_the_host_sync_rules():
    def f(a, b):
        s = torch.tensor([a.sum(), b.sum()])  # tensor of tensors: two host reads
        return s * 2

    report = fxlint.audit(f, (torch.randn(3), torch.randn(3)))
    reads = report.at(HERE, _line("# tensor of tensors: two host reads"))
    assert [(c.kind, c.bytes, c.kernel) for c in reads] == [("host-read", 4, "aten::_local_scalar_dense")] * 2
    lint = fxlint.lint(f, (torch.randn(3), torch.randn(3)), confirm=True)
    assert all(u["line"] != reads[0].line for u in lint.unexplained)


def _merge_heads(t):
    return t.transpose(1, 2).contiguous()  # one line, run by two modules


class _Attn(nn.Module):
    def __init__(self, pretransposed: bool) -> None:
        super().__init__()
        self.pretransposed = pretransposed

    def forward(self, x):
        # (B, H, L, D): already (B, L, H, D) in memory for one module (then no copy), fresh for the other
        t = x.transpose(1, 2) if self.pretransposed else x * 1
        return _merge_heads(t)


class _TwoLayers(nn.Module):
    """Regression (T5, found by tests/test_real_architectures.py): a library function run by several
    modules. FXL108 (no copy, for the cross-attention layer) was refuted by another layer's copy on
    the same line; the audit now tells the modules that ran a line apart."""

    def __init__(self) -> None:
        super().__init__()
        self.copying = _Attn(pretransposed=False)
        self.free = _Attn(pretransposed=True)

    def forward(self, a, b):
        return self.copying(a), self.free(b)


def test_a_line_shared_by_two_modules_is_judged_per_module():
    a, b = torch.randn(2, 4, 6, 8), torch.randn(2, 6, 4, 8)
    report = fxlint.lint(_TwoLayers(), (a, b), confirm=True)
    line = _line("# one line, run by two modules")
    found = {(f.code, f.module_path): f.status for f in report.findings if f.line == line}
    assert found == {("FXL101", "copying"): "confirmed", ("FXL108", "free"): "confirmed"}, found


def test_findings_that_share_a_copy_are_all_confirmed():
    """Two chained round trips share their middle conversion: each FXL103 finding on a line
    describes it from its own side, and the runtime backs every one (found by the fuzzer)."""

    def f(x0):
        v1 = x0.to(torch.float16).to(torch.float32)  # round trip one
        v2 = v1.to(torch.float16).to(torch.float32)  # round trip two
        return v2 * 1

    report = fxlint.lint(f, (torch.randn(1),), confirm=True)
    round_trips = report.by_code("FXL103")
    assert len(round_trips) >= 2
    assert all(x.status == "confirmed" for x in round_trips), [(x.line, x.bytes, x.status) for x in round_trips]
    assert report.unexplained == []


class _Block(nn.Module):
    """torchvision's EncoderBlock: batch-first attention, residual, layer norm."""

    def __init__(self) -> None:
        super().__init__()
        self.attn, self.ln = nn.MultiheadAttention(64, 2, batch_first=True), nn.LayerNorm(64)

    def forward(self, x):
        y, _ = self.attn(x, x, x, need_weights=False)
        return self.ln(y + x)


@pytest.mark.parametrize("grad", [False, True], ids=["inference-fast-path", "grad-slow-path"])
def test_the_audit_does_not_change_which_attention_path_runs(grad):
    """The audit's torch-function mode must not turn off nn.MultiheadAttention's fast path: the copies
    recorded are those of the program that runs without fxlint (fused kernel in inference; in training
    the slow path's transposed output makes the layer norm copy)."""
    block, x = _Block().eval(), torch.randn(2, 17, 64)
    before = torch.overrides.has_torch_function
    with torch.set_grad_enabled(grad):
        report = fxlint.audit(block, (x,))
    chains = {c.chain[0] for c in report.copies}
    if grad:
        assert "aten::_native_multi_head_attention" not in chains and "aten::layer_norm" in chains
    else:
        assert "aten::_native_multi_head_attention" in chains and "aten::layer_norm" not in chains
    assert torch.overrides.has_torch_function is before  # the hook is gone again


# ------------------------------------------------------------------ reductions are not copies


class MessagePassing(nn.Module):
    """A graph layer's aggregation: scatter-add of messages into their target nodes (reductions),
    next to a real copy of the messages' transpose."""

    def forward(self, x, edge, mask_idx):
        msg = x[edge[0]]  # gather the source nodes
        out = torch.zeros_like(x).index_add_(0, edge[1], msg)  # aggregate with index_add_
        out = out.scatter_add_(0, edge[1][:, None].expand_as(msg), msg)  # aggregate with scatter_add_
        out.index_put_((mask_idx,), msg[: mask_idx.numel()], accumulate=True)  # aggregate with index_put_
        out = out + x.index_add(0, edge[1], msg)  # out-of-place index_add
        return out + msg.t().contiguous().t()[: x.shape[0]]  # a real copy next to them


def test_accumulating_scatters_are_reductions_not_copies_and_a_real_copy_still_counts():
    x = torch.randn(16, 8, requires_grad=True)
    edge = torch.randint(0, 16, (2, 40))
    mask_idx = torch.randint(0, 16, (10,))
    for train in (False, True):
        report = fxlint.audit(MessagePassing(), (x, edge, mask_idx), train=train)
        for marker in ("# aggregate with index_add_", "# aggregate with scatter_add_",
                       "# aggregate with index_put_"):
            got = report.at(HERE, _line(marker), phase="forward")
            assert got == [], (marker, train, [(c.phase, c.chain, c.bytes) for c in got])
            # their backward gathers the gradient of the messages (a gather, not the reduction)
            back = report.at(HERE, _line(marker), phase="backward")
            assert not [c.chain for c in back if c.kernel in REDUCTION_KERNELS or c.kind == "scatter"]
            assert not train or "gather" in [c.kind for c in back]
            # ... the reduction's own gradient, as a sum's is a broadcast: every scatter pays it in training
            # (not index_put_'s: its backward node, IndexPutBackward0, is the same for a writing index_put)
            if "index_put_" not in marker:
                assert all(not c.avoidable and c.reason == UNAVOIDABLE["scatter-grad"] for c in back
                           if c.kind == "gather")
        # the gather's backward writes the gathered gradient back (an accumulating scatter in IndexBackward0 /
        # IndexSelectBackward0): the gradient of a copy is a copy, as slice_backward's is; nothing else scatters
        scatters = [c for c in report.copies if c.kind == "scatter" or c.kernel in REDUCTION_KERNELS]
        assert all(c.phase == "backward" and (c.grad_fn or "").startswith(("IndexBackward", "IndexSelectBackward"))
                   for c in scatters), [(c.phase, c.grad_fn, c.chain) for c in scatters]
        assert bool(scatters) == train
        # the out-of-place index_add first copies x into its output: a copy every such call pays
        init = report.at(HERE, _line("# out-of-place index_add"), phase="forward")
        assert [(c.bytes, c.avoidable) for c in init] == [(16 * 8 * 4, False)]
        assert init[0].reason == UNAVOIDABLE["reduction-init"]
        real = report.at(HERE, _line("# a real copy next to them"), phase="forward")
        assert [c.bytes for c in real] == [40 * 8 * 4] and real[0].avoidable
        s = report.summary()
        assert s["forward_bytes"] == sum(c.bytes for c in report.copies if c.phase == "forward")
        # the gather's own output is a copy; the summary counts it and the real copy, not the reductions
        gather = report.at(HERE, _line("# gather the source nodes"), phase="forward")
        assert [c.kind for c in gather] == ["gather"]
        assert s["avoidable_bytes_per_call"] == sum(c.bytes for c in (*gather, *real)) + sum(
            c.bytes for c in report.copies if c.avoidable and c.phase == "backward")


class SegmentReduce(nn.Module):
    def __init__(self, reduce: str) -> None:
        super().__init__()
        self.reduce = reduce

    def forward(self, x, idx):
        index = idx[:, None].expand(-1, x.shape[1])
        out = x.new_zeros(8, x.shape[1]).scatter_reduce_(0, index, x, self.reduce, include_self=False)  # reduce
        return out


@pytest.mark.parametrize("reduce", ["sum", "amax", "mean"])
def test_the_destination_autograd_saves_for_an_in_place_reduction_is_unavoidable_only_where_backward_reads_it(
        reduce):
    x = torch.randn(30, 4, requires_grad=True)
    idx = torch.randint(0, 8, (30,))
    report = fxlint.audit(SegmentReduce(reduce), (x, idx), train=True)
    saved = [c for c in report.at(HERE, _line("# reduce"), phase="forward") if "aten::clone" in c.chain]
    # autograd clones the (8, 4) destination before the in-place write in every case (profiled) ...
    assert [c.bytes for c in saved] == [8 * 4 * 4]
    # ... but only amax/amin/mean/prod read it back: a sum can be scatter_add_, which saves nothing
    if reduce == "sum":
        assert saved[0].avoidable and saved[0].reason is None
    else:
        assert not saved[0].avoidable and saved[0].reason == UNAVOIDABLE["reduction-saved"]
    # in inference nothing is saved, so nothing is cloned; mean's own one-element count cast is the op's
    infer = fxlint.audit(SegmentReduce(reduce), (x.detach(), idx)).at(HERE, _line("# reduce"), phase="forward")
    assert [c.chain for c in infer if "aten::clone" in c.chain or c.avoidable] == []
    assert all(c.bytes == 4 and c.reason == UNAVOIDABLE["scalar"] for c in infer)


def test_a_plain_scatter_still_writes_its_values():
    class Write(nn.Module):
        def forward(self, x, idx, v):
            x = x.clone()
            x.index_put_((idx,), v)  # a plain index_put_
            return x

    report = fxlint.audit(Write(), (torch.randn(16, 8), torch.arange(4), torch.randn(4, 8)))
    got = report.at(HERE, _line("# a plain index_put_"))
    assert [(c.kind, c.bytes) for c in got] == [("scatter", 4 * 8 * 4)]


def test_instance_norm_repeating_its_parameters_is_the_op_s_own_not_a_copy_to_fix():
    """ATen's instance_norm repeats weight and bias (and running stats) once per sample to run batch_norm on a
    (1, B x C, ...) view: the audit sees the repeats and files them unavoidable; a real copy next to it stays."""
    import torch.nn as nn

    from fxlint.runtime.profiler import UNAVOIDABLE

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = nn.InstanceNorm3d(8, affine=True)

        def forward(self, x):
            return self.norm(x).transpose(1, 2).contiguous()

    with torch.no_grad():
        audit = fxlint.audit(M().eval(), torch.randn(2, 8, 4, 4, 4))
    repeats = [c for c in audit.copies if c.top_op == "aten::instance_norm"]
    assert len(repeats) == 2 and all(not c.avoidable and c.reason == UNAVOIDABLE["instance-norm-params"]
                                     for c in repeats)
    assert [c.bytes for c in audit.copies if c.avoidable] == [2 * 8 * 64 * 4]


def test_masked_fill_gradient_is_the_op_s_own_and_its_forward_clone_stays_avoidable():
    """``masked_fill``'s backward writes the output's gradient with the masked elements zeroed as clone +
    ``masked_fill_`` (in place or not): unavoidable, ``masked-fill-grad``. Its forward clone of the input stays a
    copy to fix (the in-place twin has none); ``torch.where`` makes neither copy event."""
    mask = torch.ones(16, 16, dtype=torch.bool).triu(1)

    def scores(q, k, inplace=False, where=False):
        s = q @ k.transpose(-1, -2)
        if where:
            return torch.where(mask, -1e9, s).softmax(-1)
        return (s.masked_fill_(mask, -1e9) if inplace else s.masked_fill(mask, -1e9)).softmax(-1)

    q, k = torch.randn(2, 16, 8, requires_grad=True), torch.randn(2, 16, 8, requires_grad=True)
    size = 2 * 16 * 16 * 4
    for inplace, forward in ((False, [size]), (True, [])):
        audit = fxlint.audit(lambda q, k, inplace=inplace: scores(q, k, inplace), (q, k), train=True)
        fills = [c for c in audit.copies if c.top_op == "aten::masked_fill"]
        assert [c.bytes for c in fills if c.phase == "forward" and c.avoidable] == forward
        [grad] = [c for c in fills if c.phase == "backward"]
        assert grad.bytes == size and not grad.avoidable and grad.reason == UNAVOIDABLE["masked-fill-grad"]
    audit = fxlint.audit(lambda q, k: scores(q, k, where=True), (q, k), train=True)
    assert not [c for c in audit.copies if c.bytes >= size]


def test_sort_copies_its_input_into_its_output_as_its_own_result():
    """``sort`` writes its input into the values it returns (and the positions into the indices), then sorts them in
    place: the copies are the result."""
    x = torch.randn(64)
    audit = fxlint.audit(lambda x: torch.sort(x * 2).values + 1, (x,))
    got = [c for c in audit.copies if c.top_op == "aten::sort"]
    assert sorted(c.bytes for c in got) == [64 * 4, 64 * 8]  # the float values, the int64 indices
    assert all(not c.avoidable and c.reason == UNAVOIDABLE["sort-output"] for c in got)


def test_a_gather_from_a_trained_table_is_a_lookup_in_training_only():
    """``self.table[self.index]`` (a learned relative-position bias, Whisper's positional embedding): in a training step
    the table changes every step and the gather (and its gradient) is the lookup itself, as ``F.embedding``'s is; in
    inference the table is fixed and the gather is FXL404's to compute once. A gather from a buffer stays a copy."""

    class Bias(nn.Module):
        def __init__(self):
            super().__init__()
            self.table = nn.Parameter(torch.randn(15, 4))
            self.register_buffer("index", torch.randint(0, 15, (64,)))
            self.register_buffer("fixed", torch.randn(15, 4))

        def forward(self, x):
            return x + self.table[self.index] + self.fixed[self.index]  # two gathers

    x = torch.randn(64, 4, requires_grad=True)
    train = fxlint.audit(Bias().train(), (x,), train=True)
    got = sorted((c.phase, c.avoidable, c.reason) for c in train.copies if c.line == _line("# two gathers"))
    lookup = UNAVOIDABLE["table-lookup"]
    assert got == [("backward", False, lookup), ("forward", False, lookup), ("forward", True, None)]
    with torch.no_grad():
        infer = fxlint.audit(Bias().eval(), (x,))
    assert [c.avoidable for c in infer.copies if c.line == _line("# two gathers")] == [True, True]


def test_the_gradient_of_a_lone_piece_is_the_op_s_own_and_of_pieces_taken_apart_is_a_copy():
    """A piece taken alone (a crop, a class token): its backward zero-fills the whole tensor's gradient and copies the
    piece's in, and no spelling of one piece avoids it (``lone-piece-grad``). Two pieces of one tensor taken one
    subscript each (FXL113: ``split`` makes one backward write) stay copies to fix."""

    class Pieces(nn.Module):
        def forward(self, x):
            h = x * 2
            crop = h[..., :-2]  # a lone crop
            g = x * 3
            a = g[..., :3]  # one piece of g
            b = g[..., 3:]  # the other piece
            t = x * 4
            w = (x * 5).unsqueeze(1)
            u = x * 6
            kept = u[:, 2:]  # the only piece of u with a gradient
            u[:, :2].detach()  # another subscript of u, that no backward differentiates
            out = crop.sum() + (a * 2).sum() + (b * 3).sum() + t[:, 0].sum()  # a lone class token
            return out + w[:, 0].sum() + kept.sum()  # the whole of w: squeeze(1) takes it with a free backward

    audit = fxlint.audit(Pieces(), (torch.randn(4, 8, requires_grad=True),), train=True)

    def back(marker):
        return [(c.avoidable, c.reason) for c in audit.copies if c.phase == "backward" and c.line == _line(marker)
                and c.reason != UNAVOIDABLE["scalar"]]

    lone = (False, UNAVOIDABLE["lone-piece-grad"])
    assert back("# a lone crop") == [lone] and back("# a lone class token") == [lone]
    assert back("# one piece of g") == [(True, None)] and back("# the other piece") == [(True, None)]
    assert back("# the whole of w") == [(True, None)]
    assert back("# the only piece of u with a gradient") == [lone]


def test_a_resumed_frame_s_relative_module_path_matches_the_audit_s():
    """After a graph break Dynamo resumes inside a submodule, and the finding's module path is relative to it
    (``conv`` of ``GPSConv``); the audit's is the model's (``convs.0.conv``): the eager copy is still its module's."""
    from fxlint.runtime.confirm import _same_call

    assert _same_call("conv", "convs.0.conv") and _same_call(None, "convs.0.conv") and _same_call("a.b", "a.b")
    assert not _same_call("conv", "convs.0.lin") and not _same_call("conv", None) and not _same_call("v", "conv")


class _ViewWrite(nn.Module):
    """An in-place write into a view of a tensor that needs a gradient: once (``add_``), or written back onto itself
    (``+=``: Python's ``__iadd__`` then ``__setitem__``)."""

    def __init__(self, form):
        super().__init__()
        self.form = form

    def forward(self, a, s):
        x = a * 1.0
        if self.form == "add_":
            x[:, :, 1:, :].add_(s[:, :, 1:, :])  # the write
        else:
            x[:, :, 1:, :] += s[:, :, 1:, :]  # the write
        return x * 2


@pytest.mark.parametrize("form", ["add_", "+="])
def test_an_in_place_write_into_a_view_is_filed_at_its_line_and_only_the_self_assignment_is_avoidable(form):
    """Autograd numbers CopySlices after the in-place op: the audit files its copies at the write's line; the write's
    own (the base's gradient rebuilt around the piece) are unavoidable, and what `x[i] += y` adds (a second
    CopySlices and the view's replay: the base once, the region three times) is avoidable, FXL110's claim."""
    import inspect

    a, s = torch.randn(2, 1, 17, 8, requires_grad=True), torch.randn(2, 1, 17, 8, requires_grad=True)
    src, start = inspect.getsourcelines(_ViewWrite.forward)
    marker = ".add_(" if form == "add_" else "+="
    line = start + next(i for i, t in enumerate(src) if "# the write" in t and marker in t)
    audit = fxlint.audit(_ViewWrite(form), (a, s), train=True)
    rebuilt = [c for c in audit.copies if c.phase == "backward" and (c.grad_fn or "").startswith(
        ("torch::autograd::CopySlices", "AsStridedBackward"))]
    assert rebuilt and all((c.file, c.line) == (__file__, line) for c in rebuilt)
    own = [c for c in rebuilt if not c.avoidable]
    assert own and all(c.reason == UNAVOIDABLE["inplace-view-grad"] for c in own)
    extra = sum(c.bytes for c in rebuilt if c.avoidable)
    base, region = a.numel() * 4, a[:, :, 1:].numel() * 4
    assert extra == (0 if form == "add_" else base + 3 * region)
    if form == "+=":
        rep = fxlint.lint(_ViewWrite(form), (a, s), train=True, select="FXL110", confirm=True, config=False)
        [f] = rep.findings
        assert f.backward_bytes == extra
        from fxlint.runtime.confirm import _backward_hits

        assert sum(c.bytes for c in _backward_hits(f, audit, set())) == f.backward_bytes


def test_copies_inside_sparse_ops_are_the_sparse_structure():
    """A sparse product filling its result and a CSR -> COO conversion copy inside ATen (profiled:
    ``addmm > resize_as_sparse_ > copy_``, ``_convert_indices_from_csr_to_coo > copy_``): no spelling avoids them.
    A dense copy stays avoidable, on its own line and as a dense operand's layout copy under a sparse product."""
    import warnings

    def square(adj, x):
        prod = (adj @ adj).to_sparse_coo()  # sparse product, then COO
        dense = (adj @ x.t()).sum()  # the dense operand made contiguous under the sparse addmm
        return prod.values().sum() + x.t().contiguous().sum() + dense  # a dense copy

    dense = (torch.rand(30, 30) > 0.8).float()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        adj = dense.to_sparse_csr()
        report = fxlint.audit(square, (adj, torch.randn(16, 30)))
    here = [c for c in report.copies if c.file == __file__]
    sparse = [c for c in here if c.reason == UNAVOIDABLE["sparse-structure"]]
    assert sparse and all(not c.avoidable for c in sparse)
    dense_lines = {c.line for c in here if c.avoidable and c.bytes == 16 * 30 * 4}
    assert len(dense_lines) == 2  # the `.contiguous()` and the sparse product's dense operand
