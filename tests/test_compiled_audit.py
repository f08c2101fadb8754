"""The runtime oracle for the compiled program (fxlint.runtime.compiled_audit) and the verdicts held to it
(fxlint.runtime.compiled_confirm).

The oracle reads what Inductor writes (its output code, its provenance) and what the profiler records, never
fxlint's reader of the lowering: the expected bytes here are derived from the tensors' shapes (a graph output
made by a layout change, a cat, a pad, a dtype conversion or a gather of inputs must be written by a kernel
that only moves data), and fxlint's verdicts are then held to the oracle.
"""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import fxlint
from fxlint.findings import Finding, Severity
from fxlint.runtime import output_code as oc
from fxlint.runtime.compiled_audit import _GATHER_REASON, CompiledAudit, CompiledCopy
from fxlint.runtime.compiled_confirm import CONFIRMED, NOT_KNOWN, NOT_RUN, REFUTED, check_verdicts

# --------------------------------------------------------------------------- the C++ reader, no compile

_COPY = """
{
    for(int64_t x0=static_cast<int64_t>(0L); x0<static_cast<int64_t>(16L); x0+=static_cast<int64_t>(16L))
    {
        auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + static_cast<int64_t>(x0), static_cast<int64_t>(16));
        tmp0.store(out_ptr0 + static_cast<int64_t>(x0));
        auto tmp1 = in_ptr0[static_cast<int64_t>(16L*x0)];
        auto tmp2 = static_cast<float>(2.0);
        auto tmp3 = float(tmp1 * tmp2);
        out_ptr1[static_cast<int64_t>(x0)] = tmp3;
        auto tmp4 = static_cast<float>(0.0);
        out_ptr2[static_cast<int64_t>(x0)] = tmp4;
        auto tmp5 = c10::convert<double>(tmp1);
        out_ptr3[static_cast<int64_t>(x0)] = tmp5;
    }
}
"""

_TILE = """
{
    alignas(std::max(std::size_t(16), alignof(float))) float tmp1[16*16];
    for (long x1_inner = 0; x1_inner < static_cast<int64_t>(3L); x1_inner++)
    {
        auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr1 + static_cast<int64_t>(x1_inner), static_cast<int64_t>(16));
        tmp0.store(tmp1 + static_cast<int64_t>(16L*x1_inner));
    }
    transpose_mxn<float,static_cast<int64_t>(3L),static_cast<int64_t>(16),false>(tmp1, static_cast<int64_t>(16), out_ptr0 + static_cast<int64_t>(x1), static_cast<int64_t>(3L));
}
"""

_PAD_AND_WHERE = """
{
    auto tmp0 = x0;
    auto tmp1 = c10::convert<int64_t>(tmp0);
    auto tmp2 = static_cast<int64_t>(4);
    auto tmp3 = tmp1 < tmp2;
    auto tmp4 = [&]
    {
        auto tmp5 = in_ptr0[static_cast<int64_t>(x0)];
        return tmp5;
    }
    ;
    auto tmp6 = tmp3 ? tmp4() : static_cast<decltype(tmp4())>(0.0);
    out_ptr0[static_cast<int64_t>(x0)] = tmp6;
    auto tmp7 = in_ptr1[static_cast<int64_t>(x0)];
    auto tmp8 = static_cast<float>(0.0);
    auto tmp9 = tmp7 > tmp8;
    auto tmp10 = tmp9 ? tmp7 : tmp8;
    out_ptr1[static_cast<int64_t>(x0)] = tmp10;
    auto tmp11 = in_ptr2[static_cast<int64_t>(x0)];
    auto tmp12 = tmp11 + tmp2;
    auto tmp13 = in_ptr0[static_cast<int64_t>(tmp12 + 16L*x0)];
    out_ptr2[static_cast<int64_t>(x0)] = tmp13;
}
"""

_REDUCTION = """
{
    float tmp_acc0 = 0;
    auto tmp0 = in_ptr0[static_cast<int64_t>(x0)];
    tmp_acc0 = tmp_acc0 + tmp0;
    out_ptr0[static_cast<int64_t>(x0)] = tmp_acc0;
    auto tmp1 = some_future_intrinsic<float>(in_ptr0, x0);
    out_ptr1[static_cast<int64_t>(x0)] = tmp1;
}
"""


def test_the_kernel_reader_tells_data_moved_from_data_computed():
    assert oc.classify_kernel(_COPY) == {"out_ptr0": oc.DATA, "out_ptr1": oc.COMPUTED, "out_ptr2": oc.CONST,
                                         "out_ptr3": oc.DATA}  # a load; arithmetic; a fill; a dtype conversion
    assert oc.classify_kernel(_TILE) == {"out_ptr0": oc.DATA}  # a transposed tile through a local array
    # a pad (a masked load or zero, on an index condition): data; a relu written as a select on the value:
    # computed; a gather whose index is loaded and adjusted: the index is not the value, data
    assert oc.classify_kernel(_PAD_AND_WHERE) == {"out_ptr0": oc.DATA, "out_ptr1": oc.COMPUTED,
                                                  "out_ptr2": oc.DATA}
    # a reduction is computed; a call the reader does not know is computed only when it can tell
    got = oc.classify_kernel(_REDUCTION)
    assert got["out_ptr0"] == oc.COMPUTED and got["out_ptr1"] in (oc.COMPUTED, oc.UNKNOWN)


_WRAPPER = '''
cpp_fused_clone_0 = async_compile.cpp_pybinding(['const float*', 'float*'], r\'\'\'
extern "C"  void  kernel(const float* in_ptr0,
                       float* out_ptr0)
{
    torch::aot_inductor::RAIIAtenRecordFunctionHandle record_graph_0_cpp_fused_clone_0_("graph_0_cpp_fused_clone_0", nullptr);
    auto tmp0 = in_ptr0[static_cast<int64_t>(x0)];
    out_ptr0[static_cast<int64_t>(x0)] = tmp0;
}
\'\'\')

class Runner:
    def call(self, args):
        arg0_1, = args
        args.clear()
        assert_size_stride(arg0_1, (4, 8), (8, 1), 'input')
        buf0 = empty_strided_cpu((8, 4), (4, 1), torch.float32)
        # [Provenance debug handles] cpp_fused_clone_0:1
        cpp_fused_clone_0(arg0_1, buf0)
        buf1 = empty_strided_cpu((32, 32), (32, 1), torch.float32)
        # [Provenance debug handles] extern_kernels.mm:2
        extern_kernels.mm(reinterpret_tensor(buf0, (32, 1), (1, 1), 0), arg0_1, out=buf1)
        buf2 = buf0; del buf0  # reuse
        # [Provenance debug handles] cpp_fused_clone_0:3
        cpp_fused_clone_0(arg0_1, buf2)
        buf3 = reinterpret_tensor(buf1, (2, 8), (8, 1), 0); del buf1  # reuse
        # [Provenance debug handles] cpp_fused_clone_0:4
        cpp_fused_clone_0(arg0_1, buf3)
        return (buf2, buf3, )
'''


def test_the_wrapper_reader_follows_reused_buffers_and_provenance_handles():
    code = oc.parse(_WRAPPER)
    assert code.kernels["cpp_fused_clone_0"].event == "graph_0_cpp_fused_clone_0"
    assert [(c.kind, c.name, c.handle) for c in code.calls] == [
        ("generated", "cpp_fused_clone_0", "cpp_fused_clone_0:1"), ("extern", "extern_kernels.mm", "extern_kernels.mm:2"),
        ("generated", "cpp_fused_clone_0", "cpp_fused_clone_0:3"), ("generated", "cpp_fused_clone_0", "cpp_fused_clone_0:4")]
    # a reused buffer is written at its own size (and strides): buf2 is buf0's 32 floats, buf3 a 16-float view of
    # buf1
    assert [c.writes for c in code.calls if c.kind == "generated"] == [
        [("buf0", 128, oc.DATA, (8, 4), None, (4, 1), ("arg0_1",), (32,))],
        [("buf2", 128, oc.DATA, (8, 4), None, (4, 1), ("arg0_1",), (32,))],
        [("buf3", 64, oc.DATA, (2, 8), None, (8, 1), ("arg0_1",), (32,))]]  # what each copy loads, its elements
    with pytest.raises(ValueError):
        oc.parse("x = 1\n")


# --------------------------------------------------------------------------- the verdicts held, no compile


def _f(line, verdict, nbytes, code="FXL201"):
    return Finding(code=code, name="x", severity=Severity.WARNING, message="m", file="m.py", line=line, bytes=64,
                   compiled=verdict, compiled_bytes=nbytes)


def _copy(line, nbytes, phase="forward", avoidable=True):
    return CompiledCopy(kernel="cpp_fused_clone_0", how="kernel", bytes=nbytes, writes=1, phase=phase, graph=phase,
                        file="m.py" if line else None, line=line, avoidable=avoidable)


def test_verdicts_are_confirmed_refuted_not_run_or_not_known_line_by_line():
    audit = CompiledAudit(copies=[_copy(1, 100), _copy(1, 100), _copy(2, 50), _copy(3, 70), _copy(5, 30, "backward"),
                                  _copy(None, 9), _copy(6, 500, avoidable=False)],
                          lines_run={("m.py", n) for n in (1, 2, 3, 4, 5, 6)})
    findings = [_f(1, "survives", 100), _f(1, "survives", 100),  # q and k of one matmul: two copies, both taken
                _f(2, "survives", 80), _f(7, "survives", 10), _f(None, "survives", 10),
                _f(3, "fused", 0), _f(4, "fused", 0), _f(5, "unknown", None)]
    check = check_verdicts(findings, audit)
    got = [(c.line, c.verdict, c.status) for c in check.checks]
    assert got == [(1, "survives", CONFIRMED), (1, "survives", CONFIRMED), (2, "survives", REFUTED),
                   (7, "survives", NOT_RUN), (None, "survives", NOT_KNOWN), (3, "fused", REFUTED), (4, "fused", CONFIRMED)]
    assert check.precision == 2 / 3
    # coverage: avoidable bytes (the unavoidable 500 left out) on finding lines (1, 2, 3 and 5's backward copy)
    assert (check.total_bytes, check.covered_bytes, check.no_line_bytes) == (359, 350, 9)
    assert check.misses == []
    lone = check_verdicts([_f(2, "survives", 50)], audit)
    assert [m["line"] for m in lone.misses] == [1, 3, 5] and lone.misses[0]["bytes"] == 200
    unknown = check_verdicts(findings, CompiledAudit(known=False, why_unknown="no output code"))
    assert {c.status for c in unknown.checks} == {NOT_KNOWN} and unknown.summary()["why_unknown"] == "no output code"


def test_a_copy_the_oracle_narrowed_to_a_few_lines_backs_a_survives_finding_on_one_but_covers_none():
    from dataclasses import replace

    fused_from_two = replace(_copy(None, 64), lines=("m.py:1", "m.py:2"))
    audit = CompiledAudit(copies=[fused_from_two], lines_run={("m.py", 1), ("m.py", 2)})
    check = check_verdicts([_f(2, "survives", 64), _f(1, "survives", 64)], audit)
    # taken once: the second finding that could use it has nothing left
    assert [(c.line, c.status) for c in check.checks] == [(2, CONFIRMED), (1, REFUTED)]
    assert (check.total_bytes, check.covered_bytes, check.no_line_bytes) == (64, 0, 64)
    assert [c.status for c in check_verdicts([_f(2, "fused", 0)], audit).checks] == [CONFIRMED]


def test_a_fused_copy_of_the_backward_alone_is_held_to_the_backward_copies_of_its_line():
    """FXL121-style: no forward claim, so the forward copies of its line (another op's) neither refute nor back it;
    a backward copy left on the line refutes it."""
    from dataclasses import replace

    audit = CompiledAudit(copies=[_copy(1, 100), _copy(2, 30, "backward")], lines_run={("m.py", 1), ("m.py", 2)})
    on_forward_line = replace(_f(1, "fused", None), compiled_backward_bytes=0)
    on_backward_line = replace(_f(2, "fused", None), compiled_backward_bytes=0)
    check = check_verdicts([on_forward_line, on_backward_line], audit)
    assert [(c.line, c.phase, c.status, c.measured) for c in check.checks] == [
        (1, "backward", CONFIRMED, 0), (2, "backward", REFUTED, 30)]


def test_a_claim_on_the_compiled_backward_is_held_to_the_backward_copies_of_its_line_apart():
    from dataclasses import replace

    audit = CompiledAudit(copies=[_copy(1, 100), _copy(1, 40, "backward"), _copy(2, 30, "backward"),
                                  _copy(3, 8, "backward")],
                          lines_run={("m.py", n) for n in (1, 2, 3)})
    both = replace(_f(1, "survives", 100), compiled_backward_bytes=40)  # forward 100 and backward 40, on line 1
    only_back = replace(_f(2, "survives", None), compiled_backward_bytes=30)  # a copy of the backward graph only
    wrong_back = replace(_f(3, "survives", None), compiled_backward_bytes=16)  # 8 measured there
    # a forward claim is never backed by a backward copy of the same size, nor the other way round
    crossed = replace(_f(1, "survives", 40), compiled_backward_bytes=100)
    check = check_verdicts([both, only_back, wrong_back], audit)
    got = [(c.line, c.phase, c.claimed, c.status) for c in check.checks]
    assert got == [(1, "forward", 100, CONFIRMED), (1, "backward", 40, CONFIRMED), (2, "backward", 30, CONFIRMED),
                   (3, "backward", 16, REFUTED)]
    assert check.precision == 3 / 4
    assert [(c.phase, c.status) for c in check_verdicts([crossed], audit).checks] == [("forward", REFUTED),
                                                                                     ("backward", REFUTED)]
    # no claim on either graph: not known, once
    nothing = replace(_f(1, "survives", None), compiled_backward_bytes=0)
    assert [(c.phase, c.status) for c in check_verdicts([nothing], audit).checks] == [("forward", NOT_KNOWN)]


# --------------------------------------------------------------------------- Inductor

class Example(nn.Module):
    """The issue's example: eager copies 50.4 kB in three places, Inductor one 49.2 kB operand."""

    def forward(self, a, b, x):
        y = torch.matmul(a.permute(0, 2, 1, 3), b)  # survives: a copy kernel, then extern bmm
        z = x.t().reshape(-1) * 2  # fused into the elementwise kernel
        w = x[:, [0, 2, 4, 6]] + 1  # fused too
        return y, z, w


def _args():
    torch.manual_seed(0)
    return torch.randn(4, 32, 6, 16), torch.randn(4, 6, 16, 32), torch.randn(16, 16)


def _line(fn, text):
    import inspect

    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, ln in enumerate(lines) if text in ln)


@pytest.mark.inductor
def test_the_oracle_and_the_verdicts_on_the_issues_example(capsys):
    a, b, x = _args()
    with torch.no_grad():
        audit = fxlint.audit(Example(), (a, b, x), compiled=True)
    assert audit.known, audit.why_unknown
    operand = a.numel() * a.element_size()  # the permuted operand bmm needs in order
    line = _line(Example.forward, "torch.matmul")
    assert [(c.line, c.bytes, c.how) for c in audit.copies if c.avoidable] == [(line, operand, "kernel")]
    assert audit.notes == [] and audit.unknown == []
    assert "per forward call" in str(audit)

    with torch.no_grad():
        report = fxlint.lint(Example(), (a, b, x), config=False, compiled=True, confirm=True)
    s = report.extras["compiled_check"]["summary"]
    assert s["survives"]["confirmed"] == 1 and s["fused"]["confirmed"] == 2
    assert s["survives"]["refuted"] == s["fused"]["refuted"] == 0
    assert s["coverage"] == 1.0 and s["missed_bytes"] == 0
    assert "survives verdicts 1 confirmed, 0 refuted" in str(report)


class Sweep(nn.Module):
    """Copies a compiled program cannot avoid, several shapes and layouts per line (one compile): each
    output is made by moving its inputs' data only, so a kernel writes every byte of it."""

    def forward(self, xs, ys, zs):
        outs = []
        for x in xs:
            outs.append(x.transpose(-1, -2).contiguous())  # permute
        for x, y in zip(xs, ys):
            outs.append(torch.cat([x, y], dim=-1))  # cat
        for x in xs:
            outs.append(F.pad(x, (1, 2)))  # pad
        for z in zs:
            outs.append(z.to(torch.float64))  # dtype conversion
        for z in zs:
            outs.append(z * 3)  # computation: no copy
        return outs


def _sweep_inputs():
    torch.manual_seed(0)
    shapes = [(3, 5, 7), (2, 16, 8), (4, 1, 33)]
    xs = [torch.randn(s) for s in shapes]
    ys = [torch.randn(*s[:-1], 4) for s in shapes]
    zs = [torch.randn(s).permute(2, 0, 1) for s in shapes]  # non-contiguous inputs
    return xs, ys, zs


@pytest.mark.inductor
def test_a_sweep_of_shapes_and_layouts_the_oracle_measures_and_the_verdicts_it_confirms():
    xs, ys, zs = _sweep_inputs()
    with torch.no_grad():
        audit = fxlint.audit(Sweep(), (xs, ys, zs), compiled=True)
    assert audit.known, audit.why_unknown
    f = Sweep.forward
    want = {
        # a transpose of a size-1 dim is already contiguous: .contiguous() returns it, nothing is copied
        _line(f, "# permute"): sum(x.numel() * 4 for x in xs if not x.transpose(-1, -2).is_contiguous()),
        _line(f, "# cat"): sum((x.numel() + y.numel()) * 4 for x, y in zip(xs, ys)),
        _line(f, "# pad"): sum(F.pad(x, (1, 2)).numel() * 4 for x in xs),
        _line(f, "# dtype"): sum(z.numel() * 8 for z in zs),
    }
    got: dict[int | None, int] = {}
    for c in audit.copies:
        got[c.line] = got.get(c.line, 0) + c.bytes
    assert got == want, (got, want, audit.notes, [(c.kernel, c.buffer, c.lines) for c in audit.copies])
    with torch.no_grad():
        report = fxlint.lint(Sweep(), (xs, ys, zs), config=False, compiled=True)
    check = check_verdicts(report.findings, audit, report.suppressed)
    assert check.count("survives", REFUTED) == 0, [c for c in check.checks if c.status == REFUTED]


@pytest.mark.inductor
def test_training_the_backward_graph_is_compiled_and_measured_and_the_cli(tmp_path, capsys, write_module):
    a, b, x = _args()
    a.requires_grad_(True)
    audit = fxlint.audit(Example(), (a, b, x), train=True, compiled=True)
    assert audit.known, audit.why_unknown
    phases = {g["phase"]: g["runs_per_call"] for g in audit.graphs}
    assert phases == {"forward": 1, "backward": 1}
    line = _line(Example.forward, "torch.matmul")
    assert sum(c.bytes for c in audit.copies if c.phase == "forward" and c.line == line) == a.numel() * 4

    from fxlint.cli.app import main

    path = write_module("""
        import torch

        class Sep(torch.nn.Module):
            def forward(self, x):
                return x.t().contiguous() * 1, x.t().contiguous()
        """, name="compiled_audit_model.py")
    assert main(["audit", f"{path}:Sep", "-i", "randn(8,8)", "--compiled", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["summary"]["known"] and out["summary"]["bytes_per_call"] == 8 * 8 * 4  # the returned copy only


def test_the_cli_refuses_a_missing_target(capsys):
    from fxlint.cli.app import main

    assert main(["audit", "--compiled"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("fxlint: error:")


@pytest.mark.inductor
def test_what_the_oracle_cannot_read_is_not_known_never_a_guess(monkeypatch):
    import contextlib

    from fxlint.runtime import compiled_audit

    @contextlib.contextmanager
    def nothing():
        yield compiled_audit._Artifacts()  # never attached: Inductor's artifacts are not seen

    monkeypatch.setattr(compiled_audit, "_collecting", nothing)
    with torch.no_grad():
        audit = fxlint.audit(nn.Linear(4, 4), (torch.randn(2, 4),), compiled=True)
    assert not audit.known and "no output code" in audit.why_unknown
    assert audit.copies == [] and "could not be measured" in str(audit)


@pytest.mark.inductor  # lint(compiled=True) compiles for its verdicts
def test_a_torch_without_the_settings_the_oracle_reads_is_not_known(monkeypatch):
    import contextlib

    from fxlint.runtime import compiled_audit

    @contextlib.contextmanager
    def missing():
        raise AttributeError("torch._inductor.config has no attribute 'trace.provenance_tracking_level'")
        yield

    monkeypatch.setattr(compiled_audit, "_inductor_settings", missing)
    audit = fxlint.audit(nn.Linear(4, 4), (torch.randn(2, 4),), compiled=True)
    assert not audit.known and "this torch lacks what the oracle reads" in audit.why_unknown
    assert audit.copies == []
    report = fxlint.lint(nn.Linear(4, 4), (torch.randn(2, 4),), config=False, compiled=True, confirm=True)
    assert report.extras["compiled_check"]["summary"]["known"] is False  # said, not guessed


class _CatBeside(nn.Module):
    """A cat whose first piece is also returned (kept in a buffer of its own) and whose output is computed on in
    the same kernel; the second piece is an input of the graph, copied into the cat."""

    def forward(self, a, b):
        x = torch.sin(a)
        y = torch.cat([x, b], dim=1)  # CAT LINE
        return y * 3, x + 1


@pytest.mark.inductor
def test_a_cat_piece_copy_is_on_the_cat_line_and_a_piece_stored_from_its_register_is_not_a_copy():
    from tests.conftest import line_of

    a, b = torch.randn(2, 8, 16, 16), torch.randn(2, 8, 16, 16)
    model = _CatBeside().eval()
    cat_line = line_of(__file__, "# CAT LINE")
    with torch.no_grad():
        report = fxlint.lint(model, (a, b), compiled=True)
        audit = fxlint.audit(model, (a, b), compiled=True)
    # the oracle puts the piece written into the cat's slice on the cat's line, not on `y * 3`'s, which the
    # kernel also computes from values of the piece's size
    on_cat = [c for c in audit.copies if c.line == cat_line]
    assert on_cat and sum(c.bytes for c in on_cat) == b.nbytes
    assert not [c for c in audit.copies if c.line == cat_line + 1]
    # fxlint: `b` (an input of the graph) is copied into the cat; `x`, stored for `x + 1` and into the cat's
    # slice from the same register, is the cat's own write (eager's cat writes it too), not a copy
    [f] = report.by_code("FXL703")
    assert f.line == cat_line and f.compiled_bytes == b.nbytes and "`b`" in f.message
    check = check_verdicts(report.findings, audit)
    assert [c.status for c in check.checks if c.code == "FXL703"] == [CONFIRMED]


class _WrittenOutAttention(nn.Module):
    def __init__(self, c: int = 64, heads: int = 2):
        super().__init__()
        self.q, self.kv, self.heads, self.scale = nn.Linear(c, c), nn.Linear(c, 2 * c), heads, (c // heads) ** -0.5

    def forward(self, x):
        b, n, c = x.shape
        q = self.q(x).reshape(b, n, self.heads, c // self.heads).permute(0, 2, 1, 3)  # Q LINE
        kv = self.kv(x).reshape(b, -1, 2, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)  # KV LINE
        k, v = kv[0], kv[1]
        attn = ((q @ k.transpose(-2, -1)) * self.scale).softmax(dim=-1)
        return attn @ v


@pytest.mark.inductor
def test_the_operands_of_an_attention_inductor_replaced_are_copied_at_the_lines_that_make_them():
    from tests.conftest import line_of

    model, x = _WrittenOutAttention().eval(), torch.randn(2, 64, 64)
    with torch.no_grad():
        report = fxlint.lint(model, (x,), compiled=True)
        audit = fxlint.audit(model, (x,), compiled=True)
    got = sorted((f.line, f.compiled_bytes) for f in report.by_code("FXL701"))
    q_bytes = 2 * 2 * 64 * 32 * 4
    assert got == [(line_of(__file__, "# Q LINE"), q_bytes), (line_of(__file__, "# KV LINE"), 2 * q_bytes)]
    # the oracle reads one kernel lowered from the q, kv and k, v lines: each copy could be on any of them, and
    # backs the finding on its line
    check = check_verdicts(report.findings, audit)
    assert [c.status for c in check.checks if c.code == "FXL701"] == [CONFIRMED, CONFIRMED]


class _PaddedPieceCat(nn.Module):
    """MONAI's UpCat: the upsampled piece padded (replicate) on one line and concatenated with the skip on the
    next; Inductor computes the pad straight into the cat's slice, in one kernel lowered from both lines."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(16, 8, 3, padding=1)

    def forward(self, x_e, x_0):
        x_0 = F.pad(x_0, (0, 1, 0, 1), "replicate")  # PAD LINE
        return self.conv(torch.cat([x_e, x_0], dim=1))  # PADDED CAT LINE


@pytest.mark.inductor
def test_a_cat_piece_computed_in_a_kernel_fused_from_several_lines_is_the_cat_lines_copy():
    from tests.conftest import line_of

    x_e, x_0 = torch.randn(2, 8, 16, 16), torch.randn(2, 8, 15, 15)
    model = _PaddedPieceCat().eval()
    cat_line = line_of(__file__, "# PADDED CAT LINE")
    with torch.no_grad():
        report = fxlint.lint(model, (x_e, x_0), compiled=True)
        audit = fxlint.audit(model, (x_e, x_0), compiled=True)
    piece = x_e.nbytes  # the padded x_0 has the skip's size
    # the oracle: both pieces' writes into the cat's slices on the cat's line, none on the pad's
    assert sorted(c.bytes for c in audit.copies if c.line == cat_line and c.kernel.startswith("cpp_fused_cat")
                  and c.bytes == piece) == [piece, piece]
    assert not [c for c in audit.copies if c.line == line_of(__file__, "# PAD LINE")]
    # fxlint: both pieces copied into the cat, at the cat's line (not the padded piece at the pad's line, the
    # node whose lowering realised the buffer)
    assert sorted((f.line, f.compiled_bytes) for f in report.by_code("FXL703")) == [(cat_line, piece)] * 2
    check = check_verdicts(report.findings, audit)
    assert [c.status for c in check.checks if c.code == "FXL703"] == [CONFIRMED, CONFIRMED]


class _ContiguousQKV(nn.Module):
    """Hiera's global attention: q, k, v made contiguous by the user before a `F.scaled_dot_product_attention`
    the user calls (which takes them as they are, their last dim contiguous); ``contiguous=False``: without."""

    def __init__(self, c: int = 64, heads: int = 2, contiguous: bool = True):
        super().__init__()
        self.qkv, self.heads, self.contiguous = nn.Linear(c, 3 * c), heads, contiguous

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        if self.contiguous:
            q, k, v = q.contiguous(), k.contiguous(), v.contiguous()  # CONTIGUOUS QKV LINE
        return F.scaled_dot_product_attention(q, k, v)  # USER SDPA LINE


@pytest.mark.inductor
def test_a_copy_the_user_wrote_before_a_kernel_that_takes_it_in_that_layout_survives_as_the_users():
    from tests.conftest import line_of

    x = torch.randn(2, 64, 64)
    line = line_of(__file__, "# CONTIGUOUS QKV LINE")
    with torch.no_grad():
        report = fxlint.lint(_ContiguousQKV().eval(), (x,), compiled=True)
        audit = fxlint.audit(_ContiguousQKV().eval(), (x,), compiled=True)
    q_bytes = 2 * 2 * 64 * 32 * 4
    # the oracle: q, k and v copied on the line of the user's `.contiguous()`, nothing on the SDPA's
    assert sorted(c.bytes for c in audit.copies if c.line == line and c.how == "kernel") == [q_bytes] * 3
    assert not [c for c in audit.copies if c.line == line_of(__file__, "# USER SDPA LINE")]
    # fxlint: the user's copy survives (the buffer has the layout `.contiguous()` gives); it is not a copy
    # Inductor makes for the kernel (FXL701 at the SDPA's line), with the user's said to be fused
    [f] = [f for f in report.by_code("FXL101") if f.line == line]
    assert f.compiled == "survives" and f.compiled_bytes == 3 * q_bytes
    assert report.by_code("FXL701") == []
    check = check_verdicts(report.findings, audit)
    assert {(c.code, c.status) for c in check.checks} == {("FXL101", CONFIRMED)}


@pytest.mark.inductor
def test_without_the_users_copy_the_kernel_takes_q_k_v_as_they_are_and_nothing_is_copied():
    x = torch.randn(2, 64, 64)
    model = _ContiguousQKV(contiguous=False).eval()
    with torch.no_grad():
        report = fxlint.lint(model, (x,), compiled=True)
        audit = fxlint.audit(model, (x,), compiled=True)
    assert [c for c in audit.copies if c.how == "kernel"] == []
    assert report.by_code("FXL101") == report.by_code("FXL701") == []


class _GatheredBias(nn.Module):
    """BEiT's relative-position bias: gathered from a table, permuted, made contiguous by the user, then given a
    leading dim of 1 on the next line and handed to `F.scaled_dot_product_attention` as its mask."""

    def __init__(self, c: int = 64, heads: int = 2, n: int = 16):
        super().__init__()
        self.qkv, self.heads, self.n = nn.Linear(c, 3 * c), heads, n
        self.table = nn.Parameter(torch.randn(2 * n - 1, heads))
        i = torch.arange(n)
        self.register_buffer("index", (i[:, None] - i[None, :] + n - 1).reshape(-1))

    def bias(self):
        b = self.table[self.index].view(self.n, self.n, -1)
        b = b.permute(2, 0, 1).contiguous()  # CONTIGUOUS BIAS LINE
        return b.unsqueeze(0)  # UNSQUEEZE LINE

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=self.bias())


@pytest.mark.inductor
def test_a_users_copy_stored_through_an_unsqueeze_is_on_the_copys_line_for_both():
    from tests.conftest import line_of

    x, model = torch.randn(2, 16, 64), _GatheredBias().eval()
    line = line_of(__file__, "# CONTIGUOUS BIAS LINE")
    with torch.no_grad():
        report = fxlint.lint(model, (x,), compiled=True)
        audit = fxlint.audit(model, (x,), compiled=True)
    bias = 2 * 16 * 16 * 4
    # the oracle: the kernel (gather, permute, contiguous, unsqueeze: several lines) writes the bias once; the
    # node that moved the data is the `.contiguous()`, not the `unsqueeze` (a view of the buffer's exact size)
    assert [(c.line, c.bytes) for c in audit.copies if c.how == "kernel"] == [(line, bias)]
    # fxlint: the same buffer is the user's `.contiguous()` (its layout but for the dim of 1), which survives
    [f] = report.by_code("FXL101")
    assert (f.line, f.compiled, f.compiled_bytes) == (line, "survives", bias)
    assert report.by_code("FXL701") == []
    check = check_verdicts(report.findings, audit)
    assert [c.status for c in check.checks if c.verdict == "survives"] == [CONFIRMED]
    assert REFUTED not in {c.status for c in check.checks}


class _CacheLayer(nn.Module):
    """GPT-2's attention with a KV cache's first update: k and v concatenated onto empty tensors (a cat Inductor
    lowers to a copy of its one piece), kept in the cache the model returns and read by the SDPA it calls."""

    def __init__(self, c: int = 64, heads: int = 2):
        super().__init__()
        self.c_attn, self.heads, self.c = nn.Linear(c, 3 * c), heads, c

    def forward(self, x, cache):
        b, n, c = x.shape
        q, k, v = (t.view(b, n, self.heads, -1).transpose(1, 2) for t in self.c_attn(x).split(self.c, dim=2))
        keys = torch.cat([torch.tensor([], dtype=x.dtype), k], dim=-2)  # KEYS CAT LINE
        values = torch.cat([torch.tensor([], dtype=x.dtype), v], dim=-2)  # VALUES CAT LINE
        cache.append((keys, values))
        i = torch.arange(n)
        mask = (i[None, :] <= i[:, None]).expand(b, 1, n, n)  # computed in the kernel that copies k and v
        out = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask)  # CACHE SDPA LINE
        return out.transpose(1, 2).reshape(b, n, c)


class _CachedAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = _CacheLayer(), _CacheLayer()

    def forward(self, x):
        cache: list = []
        return self.b(self.a(x, cache), cache), cache


@pytest.mark.inductor
def test_a_cat_onto_an_empty_cache_is_the_cats_copy_of_its_one_piece_at_the_cats_line():
    from tests.conftest import line_of

    x = torch.randn(2, 16, 64)
    keys, values = line_of(__file__, "# KEYS CAT LINE"), line_of(__file__, "# VALUES CAT LINE")
    with torch.no_grad():
        report = fxlint.lint(_CachedAttention().eval(), (x,), compiled=True)
        audit = fxlint.audit(_CachedAttention().eval(), (x,), compiled=True)
    piece = 2 * 2 * 16 * 32 * 4
    # the oracle: a copy of k and one of v per layer, in kernels lowered from the split, view, transpose, cat,
    # mask and SDPA lines; it cannot tell k's from v's (same size and layout), so each may be on either cat line;
    # the SDPA reads them next, but they are the cache the graph returns, not copies made for it
    kernel = [c for c in audit.copies if c.how == "kernel"]
    assert [c.bytes for c in kernel] == [piece] * 4
    assert all(c.file is None and {f"{__file__}:{keys}", f"{__file__}:{values}"} <= set(c.lines) for c in kernel)
    # fxlint: the cat's copy of its one piece (FXL703 at each cat's line), not a copy laid out for the SDPA
    assert report.by_code("FXL701") == []
    got = sorted((f.line, f.compiled_bytes) for f in report.by_code("FXL703"))
    assert got == [(keys, piece), (keys, piece), (values, piece), (values, piece)]
    assert all("the other inputs are empty" in f.message for f in report.by_code("FXL703"))
    check = check_verdicts(report.findings, audit)
    assert [c.status for c in check.checks if c.verdict == "survives"] == [CONFIRMED] * 4


class _SdpaRealisedLayer(nn.Module):
    """As ``_CacheLayer`` without keeping the cache: the cat's one piece is realised for the SDPA that reads it
    (a fallback of several outputs, lowered without an origin node: its stack traces are those of every op
    lowered into its inputs too)."""

    def __init__(self, c: int = 64, heads: int = 2):
        super().__init__()
        self.c_attn, self.heads, self.c = nn.Linear(c, 3 * c), heads, c

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = (t.view(b, n, self.heads, -1).transpose(1, 2) for t in self.c_attn(x).split(self.c, dim=2))
        keys = torch.cat([torch.tensor([], dtype=x.dtype), k], dim=-2)
        values = torch.cat([torch.tensor([], dtype=x.dtype), v], dim=-2)
        return F.scaled_dot_product_attention(q, keys, values).transpose(1, 2).reshape(b, n, c)  # FALLBACK LINE


@pytest.mark.inductor
def test_a_copy_realised_for_a_fallback_is_on_the_fallbacks_own_line_not_on_an_operands():
    from tests.conftest import line_of

    x, model = torch.randn(2, 16, 64), nn.Sequential(_SdpaRealisedLayer(), _SdpaRealisedLayer()).eval()
    line = line_of(__file__, "# FALLBACK LINE")
    with torch.no_grad():
        report = fxlint.lint(model, (x,), compiled=True)
        audit = fxlint.audit(model, (x,), compiled=True)
    piece = 2 * 2 * 16 * 32 * 4
    # the oracle: each layer's kernel (split, view, transpose, cat and the SDPA's lines) writes k and v for the
    # SDPA: on the SDPA's line, not on the q/k/v line its fallback's stack traces also name
    assert [(c.line, c.bytes) for c in audit.copies if c.how == "kernel"] == [(line, piece)] * 4
    assert sorted((f.line, f.compiled_bytes) for f in report.by_code("FXL701")) == [(line, 2 * piece)] * 2
    check = check_verdicts(report.findings, audit)
    assert [c.status for c in check.checks if c.verdict == "survives"] == [CONFIRMED] * 2


def test_the_post_grad_reader_names_the_nodes_a_node_reads_not_the_op_it_calls():
    from fxlint.runtime.compiled_audit import _post_grad_nodes

    text = """
        # File: /m.py:11 in forward, code: keys = torch.cat([e, k], dim=-2)
        clone: "f32[2, 2, 16, 32][1024, 32, 64, 1]cpu" = torch.ops.aten.clone.default(permute_2)

        # File: /m.py:12 in forward, code: values = torch.cat([e, v], dim=-2)
        clone_1: "f32[2, 2, 16, 32][1024, 32, 64, 1]cpu" = torch.ops.aten.clone.default(permute_3)

        # File: /m.py:13 in forward, code: return F.scaled_dot_product_attention(q, keys, values)
        _scaled_dot_product_flash_attention_for_cpu = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default(permute_1, clone, clone_1)
        getitem: "f32[2, 2, 16, 32][1024, 32, 64, 1]cpu" = _scaled_dot_product_flash_attention_for_cpu[0]
        return (getitem,)
"""  # noqa: E501
    nodes = _post_grad_nodes(text)
    sdpa = "_scaled_dot_product_flash_attention_for_cpu"
    # `clone_1 = torch.ops.aten.clone.default(...)` does not read `clone`; the fallback printed without a type
    # (several outputs) reads both
    assert nodes["clone"].users == {sdpa} and nodes["clone_1"].users == {sdpa}
    assert nodes[sdpa].op == "aten._scaled_dot_product_flash_attention_for_cpu.default"
    assert nodes[sdpa].where == ("/m.py", 13) and nodes[sdpa].users == {"getitem"}


def _with_loops(x, loops):
    torch._dynamo.graph_break()  # each caller runs the same graph after the break (PyG's add_self_loops)
    return torch.cat([x, loops], dim=0)  # REUSED GRAPH CAT LINE


class _TwoCallers(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(16, 16), nn.Linear(16, 16)

    def forward(self, x, loops):
        return _with_loops(self.b(_with_loops(self.a(x), loops)[: x.shape[0]]), loops)


@pytest.mark.inductor
def test_the_bytes_of_a_graph_that_runs_twice_per_call_count_both_runs():
    from tests.conftest import line_of

    x, loops = torch.randn(8, 16), torch.randn(4, 16)
    line = line_of(__file__, "# REUSED GRAPH CAT LINE")
    with torch.no_grad():
        report = fxlint.lint(_TwoCallers().eval(), (x, loops), compiled=True)
        audit = fxlint.audit(_TwoCallers().eval(), (x, loops), compiled=True)
    # the oracle: the cat's graph runs once per caller, and each run copies both pieces
    assert sorted(c.bytes for c in audit.copies if c.line == line) == [2 * loops.nbytes, 2 * x.nbytes]
    # fxlint: the graph is linted once; its copies count both runs
    assert sorted(f.compiled_bytes for f in report.by_code("FXL703")) == [2 * loops.nbytes, 2 * x.nbytes]
    check = check_verdicts(report.findings, audit)
    assert [c.status for c in check.checks if c.code == "FXL703"] == [CONFIRMED, CONFIRMED]


class _ConvPair(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 8, 3, padding=1)

    def forward(self, x):
        y = self.c1(x)  # FIRST CONV LINE
        return self.c2(y.relu())  # SECOND CONV LINE


@pytest.mark.inductor
def test_in_a_training_graph_an_input_laid_out_for_a_convolution_is_on_the_convolutions_line():
    """A training graph's convolution is lowered without an origin node: the kernel that lays its weight and
    input out as channels_last has no user line of its own. The oracle puts it on the line of the extern
    kernel that reads it next (where eager makes the same conversion), so FXL702's verdict is held to it, and
    the backward's claims are held to the backward's copies."""
    from tests.conftest import line_of

    torch.manual_seed(0)
    model, x = _ConvPair().train(), torch.randn(2, 3, 16, 16)
    first, second = line_of(__file__, "# FIRST CONV LINE"), line_of(__file__, "# SECOND CONV LINE")
    audit = fxlint.audit(model, (x,), train=True, compiled=True)
    assert audit.known, audit.why_unknown
    laid_out = sorted((c.line, c.bytes) for c in audit.copies if c.phase == "forward" and c.kernel == "cpp_fused_0")
    w1, w2 = model.c1.weight.nbytes, model.c2.weight.nbytes
    assert laid_out == sorted([(first, w1), (first, x.nbytes), (second, w2)])
    assert not [c for c in audit.copies if c.file is None]
    report = fxlint.lint(model, (x,), train=True, compiled=True)
    check = check_verdicts(report.findings, audit)
    got = {(c.code, c.line, c.phase, c.claimed, c.status) for c in check.checks}
    assert {("FXL702", first, "forward", w1, CONFIRMED), ("FXL702", first, "forward", x.nbytes, CONFIRMED),
            ("FXL702", second, "forward", w2, CONFIRMED)} <= got
    assert [c.status for c in check.checks if c.phase == "backward"] == [CONFIRMED]  # FXL701: a gradient laid out
    assert check.covered_bytes == check.total_bytes


class _Shuffled(nn.Module):
    """ShuffleNet's kind of block: a max-pooled stem read by two branches, their cat shuffled, then a conv."""

    def __init__(self):
        super().__init__()
        self.stem, self.pool = nn.Conv2d(3, 8, 3, padding=1), nn.MaxPool2d(3, 2, 1)
        self.b1, self.b2 = nn.Conv2d(8, 8, 1), nn.Conv2d(8, 8, 1)
        self.head, self.fc = nn.Conv2d(16, 16, 1), nn.Linear(16, 4)

    def forward(self, x):
        x = self.pool(self.stem(x))  # POOL LINE
        out = torch.cat((self.b1(x), self.b2(x)), dim=1)
        out = out.view(2, 2, 8, 8, 8).transpose(1, 2).contiguous().view(2, 16, 8, 8)
        return self.fc(self.head(out).mean([2, 3]))  # HEAD LINE


@pytest.mark.inductor
def test_in_training_a_relayout_for_a_conv_and_a_pooled_gradient_summed_over_two_uses_are_on_their_own_lines():
    """Two placements a training graph needs (ShuffleNet's). The shuffled cat laid out channels_last for the
    head's conv has no provenance from the conv: the oracle puts it on the conv's line, as fxlint does (the
    layout is none of its kernel's ops'). The pooled value's gradient is summed over its two uses by a
    backward node that carries the sequence number of the last autograd node run (the final linear's): fxlint
    traces it to no forward op, so the max-pool's backward copies stay on the pool's line."""
    from tests.conftest import line_of

    torch.manual_seed(0)
    model, x = _Shuffled().train(), torch.randn(2, 3, 16, 16)
    pool, head = line_of(__file__, "# POOL LINE"), line_of(__file__, "# HEAD LINE")
    audit = fxlint.audit(model, (x,), train=True, compiled=True)
    assert audit.known, audit.why_unknown
    check = check_verdicts(fxlint.lint(model, (x,), train=True, compiled=True).findings, audit)
    assert check.checks and {c.status for c in check.checks} == {CONFIRMED}
    got = {(c.code, c.line, c.phase) for c in check.checks}
    assert ("FXL701", head, "forward") in got  # the relayout for the head's conv
    assert ("FXL701", pool, "backward") in got  # the pooled gradient laid out for the max-pool's backward
    assert check.covered_bytes == check.total_bytes


class _UpsampledIntoConv(nn.Module):
    def __init__(self):
        super().__init__()
        self.c, self.d = nn.Conv2d(8, 8, 3, padding=1), nn.Conv2d(8, 8, 1)

    def forward(self, x):
        y = F.interpolate(self.d(x)[:, :, 1:], scale_factor=2, mode="nearest")  # UPSAMPLE LINE
        return self.c(y)  # CONV LINE


@pytest.mark.inductor
def test_a_kernel_fused_from_several_ops_gives_each_copy_to_the_op_it_holds_not_to_every_op_it_names():
    """Inductor computes the upsampled slice and lays the next convolution's weight out in one kernel, and
    converts that convolution's output back for the caller in another; both kernels carry the provenance of
    the upsampling, the slice and the convolution. The weight's conversion is FXL702's (it reads only the
    weight: the slice is of another value), the conversion back FXL705's at the convolution's line (it reads
    the convolution's output, which the upsampling feeds: not a copy of the upsampling), and the upsampling's
    own copies are fused; the oracle agrees line by line."""
    from tests.conftest import line_of

    torch.manual_seed(0)
    model, x = _UpsampledIntoConv().eval(), torch.randn(2, 8, 5, 4)
    up, conv = line_of(__file__, "# UPSAMPLE LINE"), line_of(__file__, "# CONV LINE")
    with torch.no_grad():
        audit = fxlint.audit(model, (x,), compiled=True)
        report = fxlint.lint(model, (x,), compiled=True)
    assert audit.known, audit.why_unknown
    got = {(f.code, f.line, f.compiled, f.compiled_bytes) for f in report.findings if f.compiled}
    weight, out = model.c.weight.nbytes, 2 * 8 * 8 * 8 * 4  # the upsampled value's size too: its layout decides
    assert ("FXL702", conv, "survives", weight) in got
    assert ("FXL705", conv, "survives", out) in got
    assert ("FXL206", up, "fused", 0) in got
    assert not [f for f in report.findings if f.code == "FXL701"]
    weight_finding = next(f for f in report.findings if f.code == "FXL702" and f.line == conv)
    assert "c.weight" in weight_finding.message
    # the oracle: the conversion back (the second kernel, which names the upsampling too) on the convolution's line
    # (the last kernel of the program: the second to name the upsampling, in the layout of its value too)
    kernels = [c for c in audit.copies if c.phase == "forward" and c.how == "kernel"]
    last = max(int(c.call.rpartition(":")[2]) for c in kernels)
    back = [c for c in kernels if int(c.call.rpartition(":")[2]) == last]
    assert [(c.line, c.bytes) for c in back] == [(conv, out)]
    check = check_verdicts(report.findings, audit)
    assert check.checks and {c.status for c in check.checks} == {CONFIRMED}
    assert sum(c.bytes for c in audit.copies if c.line == up and c.avoidable) == next(
        c.claimed for c in check.checks if c.code == "FXL702" and c.line == up)  # x laid out: nothing else on it


class _ChannelsNorm(nn.Module):
    """timm's LayerNorm2d between two convolutions: permute to channels last, layer_norm, permute back."""

    def __init__(self):
        super().__init__()
        self.c, self.ln, self.d = nn.Conv2d(3, 40, 4, stride=4), nn.LayerNorm(40), nn.Conv2d(40, 8, 1)

    def forward(self, x):
        x = self.c(x).permute(0, 2, 3, 1)
        x = F.layer_norm(x, (40,), self.ln.weight, self.ln.bias)  # NORM LINE
        return self.d(x.permute(0, 3, 1, 2))


@pytest.mark.inductor
def test_a_value_stored_again_from_the_register_that_computed_it_is_no_copy():
    """In training Inductor stores the layer norm's saved statistics twice in one kernel, the second time in
    the layout the traced graph gave them, from the register it computed them in: one more write and no read,
    which the oracle does not count as a copy. fxlint's lowering agrees (before, FXL203 claimed those 2 kB
    survive, and the oracle refuted it)."""
    from tests.conftest import line_of

    torch.manual_seed(0)
    model, x = _ChannelsNorm().train(), torch.randn(2, 3, 64, 64)
    norm = line_of(__file__, "# NORM LINE")
    audit = fxlint.audit(model, (x,), train=True, compiled=True)
    assert audit.known, audit.why_unknown
    assert not [c for c in audit.copies if c.line == norm and c.phase == "forward"]
    report = fxlint.lint(model, (x,), train=True, compiled=True)
    at_norm = [f for f in report.findings if f.line == norm and f.compiled]
    assert at_norm and all(f.compiled == "fused" and f.compiled_bytes == 0 for f in at_norm)
    check = check_verdicts(report.findings, audit)
    assert check.checks and {c.status for c in check.checks} == {CONFIRMED}


class _SplitHeads(nn.Module):
    """Swin's kind of attention: one projection taken apart into q, k and v by `unbind`."""

    def __init__(self, d=64, h=2):
        super().__init__()
        self.h, self.qkv, self.proj = h, nn.Linear(d, 3 * d), nn.Linear(d, d)

    def forward(self, x):
        b, n, _ = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.h, -1).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)  # UNBIND LINE
        attn = (q * 0.125) @ k.transpose(-2, -1)
        x = attn.softmax(-1) @ v  # AV LINE
        return self.proj(x.transpose(1, 2).reshape(b, n, -1))


@pytest.mark.inductor
def test_in_training_the_gradients_unbind_puts_together_are_its_copies_not_the_matmuls_that_computed_them():
    """The backward of `unbind` stacks q's, k's and v's gradients; Inductor computes q's (scaled) into the
    stack and copies in k's and v's, which the matmuls' backward kernels (bmm) wrote. Those two copies are
    FXL703's at the unbind's line, where the oracle puts them, not the `attn @ v` matmul's: its finding claims
    only the backward copy of its own (the output's gradient laid out for bmm)."""
    from tests.conftest import line_of

    torch.manual_seed(0)
    model, x = _SplitHeads().train(), torch.randn(4, 16, 64)
    unbind, av = line_of(__file__, "# UNBIND LINE"), line_of(__file__, "# AV LINE")
    piece = 4 * 16 * 64 * 4  # one of q, k, v (float32)
    audit = fxlint.audit(model, (x,), train=True, compiled=True)
    assert audit.known, audit.why_unknown
    findings = fxlint.lint(model, (x,), train=True, compiled=True).findings
    check = check_verdicts(findings, audit)
    assert check.checks and {c.status for c in check.checks} == {CONFIRMED}
    assert check.covered_bytes == check.total_bytes
    at_av = [f for f in findings if f.code == "FXL201" and f.line == av]
    assert [f.compiled_backward_bytes for f in at_av] == [piece]
    stacked = [f for f in findings if f.code == "FXL703" and f.line == unbind]
    assert [f.compiled_backward_bytes for f in stacked] == [piece, piece]
    assert {f.violation.why for f in stacked} == {"gradient pieces"}
    assert all("`qkv.unbind(...)`'s gradient is put together" in f.message for f in stacked)
    assert sum(c.bytes for c in audit.at(__file__, unbind, "backward")) == 2 * piece


_COPY_OF_OWN_STORE = """
extern "C" void kernel(float* in_out_ptr0, const float* in_ptr0, float* out_ptr0, float* out_ptr1)
{
    for(int64_t x0=0; x0<64; x0+=1)
    {
        auto tmp0 = in_ptr0[x0];
        auto tmp1 = tmp0 * tmp0;
        in_out_ptr0[x0] = tmp1;
    }
    for(int64_t x0=0; x0<64; x0+=1)
    {
        auto tmp0 = in_out_ptr0[x0];
        out_ptr0[static_cast<int64_t>(8L*(x0 % 8) + x0 / 8)] = tmp0;
        auto tmp1 = at::vec::Vectorized<float>::loadu(in_ptr0 + x0, 8);
        tmp1.store(out_ptr1 + x0, 8);
    }
}
"""


def test_the_reader_follows_which_pointers_a_data_store_loads_from():
    """A DATA store's sources: the kernel's own computed buffer (a relayout of what it stored) or an input."""
    assert oc.classify_kernel(_COPY_OF_OWN_STORE) == {"in_out_ptr0": oc.COMPUTED, "out_ptr0": oc.DATA,
                                                      "out_ptr1": oc.DATA}
    assert oc.kernel_loads(_COPY_OF_OWN_STORE) == {"out_ptr0": frozenset({"in_out_ptr0"}),
                                                   "out_ptr1": frozenset({"in_ptr0"})}
    assert oc.kernel_loads(_TILE) == {"out_ptr0": frozenset({"in_ptr1"})}  # through a local tile
    through_local = """
    {
        auto tmp0 = at::vec::Vectorized<float>::loadu(in_ptr0 + x0, 8);
        tmp0.store(local_buffer0 + x0, 8);
        auto tmp1 = local_buffer0[x0];
        out_ptr0[x0] = tmp1;
    }
    """
    assert oc.kernel_loads(through_local) == {"out_ptr0": frozenset({"in_ptr0"})}  # through a kernel-local buffer


class _NormedBetweenConvs(nn.Module):
    """diffusers' ResnetBlock2D's kind: conv, a per-sample bias added, group norm, SiLU, conv."""

    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(8, 16, 3, padding=1), nn.Conv2d(16, 16, 3, padding=1)
        self.proj, self.norm = nn.Linear(4, 16), nn.GroupNorm(4, 16)

    def forward(self, x, t):
        h = self.conv1(x)  # CONV1 LINE
        h = self.norm(h + self.proj(t)[:, :, None, None])
        return self.conv2(F.silu(h))


@pytest.mark.inductor
def test_a_gradient_the_kernel_computes_then_copies_for_the_convolutions_backward_is_on_the_conv_line():
    """In training Inductor computes the group norm's input gradient into a buffer in the layout it chooses and,
    in the same kernel, copies it to the channels_last layout conv1's backward needs. The post-grad graph's
    strides do not show that layout change (they are channels_last throughout), so the oracle follows the copy's
    loads: a copy of a buffer the kernel itself computed, read next by the convolution's backward, is on the
    conv's line, where FXL701 claims it."""
    from tests.conftest import line_of

    torch.manual_seed(0)
    model, args = _NormedBetweenConvs().train(), (torch.randn(2, 8, 8, 8), torch.randn(2, 4))
    conv1 = line_of(__file__, "# CONV1 LINE")
    audit = fxlint.audit(model, args, train=True, compiled=True)
    assert audit.known, audit.why_unknown
    findings = fxlint.lint(model, args, train=True, compiled=True).findings
    check = check_verdicts(findings, audit)
    assert check.checks and {c.status for c in check.checks} == {CONFIRMED}
    assert ("FXL701", conv1, "backward") in {(c.code, c.line, c.phase) for c in check.checks}
    assert check.no_line_bytes == 0 and check.covered_bytes == check.total_bytes


class _UpsampledIntoCat(nn.Module):
    """smp's U-Net decoder block: the coarser map upsampled (nearest), concatenated with a skip, convolved."""

    def __init__(self):
        super().__init__()
        self.c0, self.skip = nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.Conv2d(3, 8, 1)
        self.c1 = nn.Conv2d(16, 8, 3, padding=1)

    def forward(self, x):
        f = F.interpolate(self.c0(x), size=(16, 16), mode="nearest")
        f = torch.cat([f, self.skip(x)], dim=1)  # SKIP CAT LINE
        return self.c1(f)


@pytest.mark.inductor
def test_in_training_an_accumulating_store_is_no_copy_and_an_aten_backward_is_not_called_fused():
    """The upsampling's backward is an `index_put` with accumulate: Inductor stores it with `mode="atomic_add"`,
    a sum, not a move (fxlint called it a copy of the cat's gradient, FXL703 at the cat's line, which the oracle
    refutes). And the skip convolution's backward runs as an ATen kernel (`convolution_backward`), which copies
    inside as eager's does: FXL209's verdict there is unknown, not fused."""
    from tests.conftest import line_of

    torch.manual_seed(0)
    model, x = _UpsampledIntoCat().train(), torch.randn(2, 3, 16, 16)
    cat = line_of(__file__, "# SKIP CAT LINE")
    audit = fxlint.audit(model, (x,), train=True, compiled=True)
    assert audit.known, audit.why_unknown
    findings = fxlint.lint(model, (x,), train=True, compiled=True).findings
    check = check_verdicts(findings, audit)
    assert check.checks and {c.status for c in check.checks} == {CONFIRMED}
    assert not [f for f in findings if f.code == "FXL703" and f.compiled_backward_bytes]
    assert {f.compiled for f in findings if f.code == "FXL209" and f.line == cat} == {"unknown"}
    # the upsampled piece, computed into the cat by a gather Inductor decomposed the upsampling into, is the
    # upsampling's own output (eager's op writes it too), not a copy; the skip convolution's output is copied
    piece = 2 * 8 * 16 * 16 * 4
    at_cat = sorted((c.bytes, c.avoidable, c.reason) for c in audit.at(__file__, cat, "forward"))
    assert at_cat == [(piece, False, _GATHER_REASON), (piece, True, None)]


class _PooledConv(nn.Module):
    """A classifier head on a channels_last convolution: average-pooled to 1 x 1 (FXL123's restride), flattened."""

    def __init__(self):
        super().__init__()
        self.conv, self.fc = nn.Conv2d(8, 16, 3, padding=1), nn.Linear(16, 4)

    def forward(self, x):
        y = self.conv(x)  # POOLED CONV LINE
        return self.fc(F.adaptive_avg_pool2d(y, 1).flatten(1))  # POOLED HEAD LINE


@pytest.mark.inductor
def test_in_training_the_pools_restride_copy_is_its_own_and_the_gradient_laid_out_for_the_conv_is_the_convs():
    """The compiled backward makes two copies here: the pool's restrided (B, C) gradient, in a kernel whose
    producer is the `flatten` after the pool (FXL123 predicts that copy: it takes it from its source), and the
    pooled gradient spread back over (B, C, H, W) and made channels_last for the convolution's backward, whose
    producer is the pool (FXL123 claimed it before: it is FXL701's, at the convolution's line, as the oracle says)."""
    from tests.conftest import line_of

    torch.manual_seed(0)
    model, x = _PooledConv().train(), torch.randn(4, 8, 6, 6).to(memory_format=torch.channels_last)
    conv, pool = line_of(__file__, "# POOLED CONV LINE"), line_of(__file__, "# POOLED HEAD LINE")
    audit = fxlint.audit(model, (x,), train=True, compiled=True)
    assert audit.known, audit.why_unknown
    findings = fxlint.lint(model, (x,), train=True, compiled=True).findings
    check = check_verdicts(findings, audit)
    assert check.checks and {c.status for c in check.checks} == {CONFIRMED}
    got = {(f.code, f.line, f.compiled_backward_bytes) for f in findings if f.compiled == "survives"}
    assert ("FXL123", pool, 4 * 16 * 4) in got  # the (B, C) gradient, float32
    assert ("FXL701", conv, 4 * 16 * 6 * 6 * 4) in got
