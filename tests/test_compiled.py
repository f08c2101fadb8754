"""Verdicts for the program torch.compile really runs (fxlint.compiled): which eager copies Inductor keeps.

The runtime is the oracle: the compiled program is profiled (``cpp.enable_kernel_profile``) and the
buffers allocated right before each generated kernel whose name (Inductor names a kernel after the
ops lowered into it) is made of copy ops alone are the bytes that survive.
"""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest
import torch
import torch.nn as nn

import fxlint
from fxlint.compiled import FUSED, SURVIVES, UNKNOWN, CompiledBuffer, Lowering, Sites, apply_verdicts
from fxlint.compiled.lowering import COPY_OPS
from fxlint.findings import Finding, Severity


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


OPERAND = 4 * 6 * 32 * 16 * 4  # the permuted matmul operand, float32


# --------------------------------------------------------------------------- the verdicts, no compile


def _finding(node: str, code: str = "FXL102", nbytes: int | None = 1024, **kw) -> Finding:
    return Finding(code=code, name="x", severity=Severity.WARNING, message="copies.", node=node, bytes=nbytes,
                   graph="graph 0", **kw)


def _lowering(*buffers: CompiledBuffer, lowered=("a", "b", "c", "mm"), extern=()) -> Lowering:
    return Lowering(buffers=list(buffers), lowered=set(lowered), extern_sources=set(extern), schedulers=1)


def _buf(name, copy, nbytes, sources, ops=("clone",), producer=None):
    return CompiledBuffer(name, "generated", copy, nbytes, sources=tuple(sources), ops=tuple(ops),
                          producer=producer or (sources[-1] if sources else None))


def test_a_copy_buffer_is_credited_to_the_finding_on_its_producer():
    copy = _buf("buf0", True, 4096, ("a", "b"), ("clone", "permute"))  # b realised it, from a's view
    out = apply_verdicts([_finding("a"), _finding("b")], _lowering(copy))
    assert [(f.compiled, f.compiled_bytes) for f in out] == [(FUSED, 0), (SURVIVES, 4096)]
    # a producer without a finding explains its own copy: nobody else is credited with it
    later = _buf("buf1", True, 8192, ("a", "c"), producer="c")
    assert [f.compiled for f in apply_verdicts([_finding("a")], _lowering(later))] == [FUSED]


def test_a_piece_the_backward_writes_into_a_concatenation_is_the_concatenations_not_its_producers():
    """unbind's backward stacks its pieces' gradients: a piece copied into the stack is credited by the unbind
    (the stack's node), never by the matmul whose backward computed it, even in the matmul's layout."""
    from dataclasses import replace

    piece = replace(_buf("buf0", True, 4096, ("unbind", "mm"), producer="mm"), phase="backward", into="cat",
                    into_node="unbind")
    def lowering(*lowered):
        low = _lowering(piece, lowered=lowered)
        low.backward = True
        return low

    out = apply_verdicts([_finding("mm", "FXL201", backward_bytes=4096)], lowering("mm"))
    assert out[0].compiled_backward_bytes == 0
    out = apply_verdicts([_finding("unbind", "FXL114", nbytes=None, backward_bytes=4096)], lowering("unbind"))
    assert (out[0].compiled, out[0].compiled_backward_bytes) == (SURVIVES, 4096)
    # in the forward the piece stays its producer's (a user's copy fused into the cat's store)
    forward = replace(piece, phase="forward")
    out = apply_verdicts([_finding("mm", "FXL201")], _lowering(forward, lowered=("mm",)))
    assert (out[0].compiled, out[0].compiled_bytes) == (SURVIVES, 4096)


def test_a_finding_of_the_backward_alone_takes_its_own_ops_copy_not_a_layout_for_another_ops_kernel():
    from dataclasses import replace

    def backward(buf, **kw):
        return replace(buf, phase="backward", **kw)

    alone = _finding("pool", "FXL123", nbytes=None, backward_bytes=256)
    # laid out for the convolution's backward (an ATen kernel of another node): not the pool's restride copy
    for_conv = backward(_buf("buf0", True, 9216, ("pool",), producer="pool"), consumers=("convolution_backward",),
                        consumer_nodes=("conv",))
    low = _lowering(for_conv, lowered=("pool", "conv"))
    low.backward, low.lowered_backward = True, {"pool", "conv"}
    assert apply_verdicts([alone], low)[0].compiled_backward_bytes == 0
    # ... unless it is the copy the finding predicts, of its size (FXL114's permuted gradient made contiguous for
    # the projection's matmul)
    predicted = _finding("pool", "FXL114", nbytes=None, backward_bytes=9216)
    assert apply_verdicts([predicted], low)[0].compiled_backward_bytes == 9216
    # ... per run of a graph that runs several times per call (its buffers count every run)
    twice = _lowering(for_conv, lowered=("pool", "conv")).repeated(2)
    twice.backward, twice.lowered_backward = True, {"pool", "conv"}
    assert apply_verdicts([predicted], twice)[0].compiled_backward_bytes == 2 * 9216
    # ... and never a forward value saved for the backward (q laid out for the attention's backward kernel)
    saved = replace(for_conv, saved=("q",))
    low_saved = _lowering(saved, lowered=("pool", "conv"))
    low_saved.backward, low_saved.lowered_backward = True, {"pool", "conv"}
    assert apply_verdicts([predicted], low_saved)[0].compiled_backward_bytes == 0
    # read by no ATen kernel, its producer the flatten after the pool (no finding): the pool's finding predicts it
    restride = backward(_buf("buf1", True, 256, ("pool", "flatten"), producer="flatten"))
    low = _lowering(restride, lowered=("pool", "flatten"))
    low.backward, low.lowered_backward = True, {"pool", "flatten"}
    assert apply_verdicts([alone], low)[0].compiled_backward_bytes == 256
    # a piece written into a concatenation is the concatenation's, even with such a finding among its sources
    piece = backward(_buf("buf3", True, 256, ("pool", "flatten"), producer="flatten"), into="cat",
                     into_node="unbind")
    low = _lowering(piece, lowered=("pool", "flatten", "unbind"))
    low.backward, low.lowered_backward = True, {"pool", "flatten", "unbind"}
    assert apply_verdicts([alone], low)[0].compiled_backward_bytes == 0
    # two such findings among its sources: neither is credited
    other = _finding("flatten2", "FXL122", nbytes=None, backward_bytes=256)
    two = backward(_buf("buf2", True, 256, ("pool", "flatten2", "flatten"), producer="flatten"))
    low = _lowering(two, lowered=("pool", "flatten", "flatten2"))
    low.backward, low.lowered_backward = True, {"pool", "flatten", "flatten2"}
    assert [f.compiled_backward_bytes for f in apply_verdicts([alone, other], low)] == [0, 0]


def test_a_gathers_scattering_backward_is_not_called_copy_free():
    """An indexing's backward is an `index_put` with accumulate (a store with mode atomic_add): no copy, but traffic
    of its own that a rewrite (a gather made a slice) removes, so the backward claim is not known rather than 0."""
    gather = _finding("idx", "FXL401")
    low = _lowering(lowered=("idx",))
    low.backward, low.lowered_backward = True, {"idx"}
    assert apply_verdicts([gather], low)[0].compiled_backward_bytes == 0
    low.accumulating_backward = {"idx"}
    out = apply_verdicts([gather], low)[0]
    assert (out.compiled, out.compiled_backward_bytes) == (FUSED, None)


def test_a_loops_instances_are_summed_and_two_operands_of_one_node_told_apart():
    low = _lowering(_buf("buf0", True, 100, ("a", "mm")), _buf("buf1", True, 100, ("b", "mm")),
                    _buf("buf2", True, 100, ("c",)), lowered=("a", "b", "c", "mm"))
    loop = _finding("c", nodes=("c", "c2"), repeats=2)
    low.lowered.add("c2")
    low.buffers.append(_buf("buf3", True, 100, ("c2",)))
    assert [(f.compiled, f.compiled_bytes) for f in apply_verdicts([loop], low)] == [(SURVIVES, 200)]

    class Operand:  # what Sites.operand reads: the violation's operand, the view's node args
        def __init__(self, operand):
            self.operand = operand

    def node(name, args=None):
        return SimpleNamespace(name=name, args=args or {}, location=None)

    view = SimpleNamespace(by_name={"mm": node("mm", {"x": node("a"), "y": node("b")})})

    left = _finding("mm", "FXL201", violation=Operand("x"), dedup="mm:x")
    right = _finding("mm", "FXL201", violation=Operand("y"), dedup="mm:y")
    assert [f.compiled for f in apply_verdicts([left, right], low)] == [UNKNOWN, UNKNOWN]  # no view: ambiguous
    out = apply_verdicts([left, right], low, sites=Sites(view))
    assert [(f.compiled, f.compiled_bytes) for f in out] == [(SURVIVES, 100), (SURVIVES, 100)]


def test_fused_unknown_and_not_a_copy():
    compute = _buf("buf1", False, 64, ("c",), ("add", "clone"))
    low = _lowering(compute, extern=("mm",))
    gradient = Finding(code="FXL301", name="x", severity=Severity.WARNING, message="m", node="c")
    out = apply_verdicts([_finding("c"), _finding("mm", "FXL201"), _finding("gone"), _finding(None), gradient],
                         low, demote=True)
    assert [f.compiled for f in out] == [FUSED, UNKNOWN, UNKNOWN, UNKNOWN, None]
    assert out[0].severity is Severity.INFO and "the compiled program does not" in out[0].message
    assert out[1].severity is Severity.WARNING  # an ATen kernel may still copy inside: not demoted
    assert out[4] is gradient


def test_an_unreadable_lowering_leaves_every_copy_finding_unknown():
    copy = _buf("buf0", True, 4096, ("a",))
    for low in (Lowering(error="boom"), Lowering(buffers=[copy], schedulers=1), Lowering(lowered={"a"})):
        assert [f.compiled for f in apply_verdicts([_finding("a")], low)] == [UNKNOWN]


def test_the_text_report_shows_verdicts_and_the_compiled_programs_own_copies():
    from fxlint.findings import Report

    copy = _buf("buf0", True, 4096, ("a",))
    own = [_buf("buf1", True, 2048, ("z",), producer="z"), _buf("buf2", True, 512, (), producer=None)]
    low = _lowering(copy, *own, lowered=("a", "b", "z"))
    findings = apply_verdicts([_finding("a"), _finding("b")], low)
    from fxlint.compiled.verdicts import describe

    report = Report(findings=findings, graphs=1, extras={"compiled": {"graph 0": describe(findings, low)}})
    text = str(report)
    assert "under Inductor: 1 survives (4.1 kB per call), 1 fused, 0 unknown" in text
    assert "under Inductor: survives, 4.1 kB per call" in text and "under Inductor: fused (no copy of its own)" in text
    assert "Copies the compiled program makes that no finding explains" in text
    assert "<graph>:z" in text and "<inductor>:buf2" in text and "no provenance" in text
    assert "under Inductor" not in str(Report(findings=[_finding("a")], graphs=1))  # not asked: eager only


def test_the_backends_judge_marks_findings_unknown_when_it_cannot_judge(monkeypatch):
    from fxlint.backend import _Watch
    from fxlint.compiled import program
    from fxlint.findings import Report

    report = Report(findings=[_finding("a")])
    _Watch(True).judge("graph 0", report, None)  # the compile was never watched (another torch)
    assert [f.compiled for f in report] == [UNKNOWN]
    assert report.extras["compiled"]["graph 0"]["why_unknown"] == "not compiled"

    def boom(*a, **k):
        raise RuntimeError("injected")

    monkeypatch.setattr(program, "apply_verdicts", boom)
    report = Report(findings=[_finding("a")])
    _Watch(True).judge("graph 0", report, None)
    assert [f.compiled for f in report] == [UNKNOWN]
    assert "injected" in report.extras["compiled"]["graph 0"]["why_unknown"]
    report = Report(findings=[_finding("a")])
    _Watch(False).judge("graph 0", report, None)  # an eager inner backend: nothing changes
    assert [f.compiled for f in report] == [None] and "compiled" not in report.extras


def test_the_backend_option_is_checked():
    from fxlint.backend import BackendOptions
    from fxlint.errors import ConfigError

    assert BackendOptions.parse({"compiled": False}).compiled is False
    assert BackendOptions.parse({}).compiled is True
    with pytest.raises(ConfigError, match="compiled"):
        BackendOptions.parse({"compiled": "yes"})


def test_eager_inner_backends_give_no_verdicts():
    for inner in ("eager", "aot_eager"):
        torch._dynamo.reset()
        with fxlint.collect() as session:
            torch.compile(Example(), backend="fxlint", options={"inner": inner, "config": False})(*_args())
        assert len(session.findings) == 3
        assert {f.compiled for f in session.findings} == {None}
        assert "compiled" not in session.report().summary()
        assert {f.severity for f in session.findings} != {Severity.INFO}


def test_not_asked_and_not_dynamo_give_none_or_unknown():
    report = fxlint.lint(Example(), _args(), config=False)
    assert {f.compiled for f in report} == {None}
    gm = torch.fx.symbolic_trace(Example())
    report = fxlint.lint(gm, _args(), config=False, compiled=True)  # nothing is compiled
    assert report.findings and {f.compiled for f in report if f.bytes} == {UNKNOWN}
    assert "not a Dynamo graph" in report.extras["compiled"]["graph 0"]["why_unknown"]


# --------------------------------------------------------------------------- Inductor


def _generated_copies(prof) -> list[tuple[str, int]]:
    """(kernel, bytes allocated right before it) for each generated kernel named after copy ops alone."""
    events = sorted(prof.profiler.kineto_results.events(), key=lambda e: e.start_ns())
    out, pending = [], 0
    for e in events:
        if e.name() == "[memory]":
            pending += max(e.nbytes(), 0)
            continue
        m = re.search(r"cpp_fused_(.+)_\d+$", e.name())
        if m is not None and all(op in COPY_OPS for op in _split_ops(m.group(1))):
            out.append((e.name(), pending))
        if m is not None or e.name().startswith("aten::"):
            pending = 0
    return out


def _split_ops(words: str) -> list[str]:
    """``_unsafe_view_add_clone_index`` -> the op names it is made of (the longest known name first;
    ops are joined by ``_`` and some names start with one)."""
    names = sorted(COPY_OPS | {"add", "mul", "sum", "bmm", "mm", "lift_fresh"}, key=len, reverse=True)
    out, rest = [], words
    while rest:
        hit = next((n for n in names if rest.startswith(n) and (len(rest) == len(n) or rest[len(n)] == "_")), None)
        if hit is None and rest.startswith("_"):
            rest = rest[1:]
            continue
        hit = hit or rest.split("_", 1)[0]
        out.append(hit)
        rest = rest[len(hit):].removeprefix("_")
    return out


def _diff(a: list[str], b: list[str]) -> str:
    import difflib

    return "\n".join(difflib.unified_diff("\n".join(a).splitlines(), "\n".join(b).splitlines(), lineterm="", n=0))


def _strip_comments(code: str) -> str:
    """Output code without its comments, and the process's graph counter in profiled kernel names
    (``graph_1_cpp_fused_...``: which compile of the process it is) made one."""
    lines = [ln for ln in code.splitlines() if not ln.strip().startswith("#")]
    return re.sub(r"graph_\d+_cpp_", "graph_N_cpp_", "\n".join(lines))


@pytest.mark.inductor
def test_backend_verdicts_agree_with_the_profiled_compiled_program_and_the_kernels_are_unchanged():
    from torch._inductor.utils import run_and_get_code

    args = _args()
    torch._dynamo.reset()
    with torch._inductor.config.patch({"fx_graph_cache": False, "cpp.enable_kernel_profile": True}):
        _, plain = run_and_get_code(torch.compile(Example(), backend="inductor"), *args)
    torch._dynamo.reset()
    compiled = torch.compile(Example(), backend="fxlint",
                             options={"config": False, "cpp.enable_kernel_profile": True})
    with fxlint.collect() as session:
        out, linted = run_and_get_code(compiled, *args)
    for got, want in zip(out, Example()(*args)):
        torch.testing.assert_close(got, want)
    # fxlint in front of Inductor (rewrites off) changes no kernel: the same output code, comments aside
    assert [_strip_comments(c) for c in linted] == [_strip_comments(c) for c in plain], _diff(linted, plain)

    by_code = {f.code: f for f in session.findings}
    assert set(by_code) == {"FXL102", "FXL201", "FXL401"}
    assert (by_code["FXL201"].compiled, by_code["FXL201"].compiled_bytes) == (SURVIVES, OPERAND)
    assert by_code["FXL201"].severity is Severity.WARNING
    for code in ("FXL102", "FXL401"):
        assert (by_code[code].compiled, by_code[code].compiled_bytes) == (FUSED, 0)
        assert by_code[code].severity is Severity.INFO
        assert "Eager makes this copy; the compiled program does not" in by_code[code].message
    summary = session.report().summary()
    assert summary["compiled"] == {"survives": 1, "fused": 2, "unknown": 0, "bytes_per_call": OPERAND}
    assert summary["bytes_per_call"] == OPERAND + 1024 + 256  # eager's figure is kept beside it

    # the oracle: profile the compiled program; one generated kernel is a copy, of the operand's bytes
    compiled(*args)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as prof:
        compiled(*args)
    copies = _generated_copies(prof)
    assert copies == [(copies[0][0], OPERAND)] and "clone_permute" in copies[0][0]
    names = [e.name() for e in prof.profiler.kineto_results.events()]
    assert any("mul" in n and "index" in n for n in names if "cpp_fused" in n)  # reshape and gather: fused


@pytest.mark.inductor
def test_the_compile_survives_a_lowering_fxlint_cannot_read(monkeypatch, caplog):
    from fxlint.compiled import lowering

    def boom(*a, **k):
        raise RuntimeError("an Inductor fxlint does not know")

    monkeypatch.setattr(lowering, "_read_scheduler", boom)
    torch._dynamo.reset()
    args = _args()
    with fxlint.collect() as session:
        out = torch.compile(Example(), backend="fxlint", options={"config": False})(*args)
    for got, want in zip(out, Example()(*args)):
        torch.testing.assert_close(got, want)
    assert [f.compiled for f in session.findings] == [UNKNOWN] * 3
    assert {f.severity for f in session.findings} == {Severity.WARNING, Severity.INFO}  # the eager severities
    assert session.report().summary()["compiled"]["unknown"] == 3
    from torch._inductor.scheduler import Scheduler

    assert Scheduler.codegen is lowering._original or lowering._original is None
    assert lowering._original is None  # the hook is gone after the compile


@pytest.mark.inductor
def test_lint_compiled_and_the_cli(capsys, write_module):
    report = fxlint.lint(Example(), _args(), config=False, compiled=True)
    verdicts = {f.code: (f.compiled, f.compiled_bytes) for f in report}
    assert verdicts == {"FXL201": (SURVIVES, OPERAND), "FXL102": (FUSED, 0), "FXL401": (FUSED, 0)}
    assert {f.severity for f in report} == {Severity.WARNING, Severity.INFO}  # lint keeps eager's severities
    assert report.extras["compiled"]["graph 0"]["unexplained"] == []
    text = str(report)
    assert "under Inductor: 1 survives (49.2 kB per call), 2 fused, 0 unknown" in text
    assert "under Inductor: survives, 49.2 kB per call" in text

    from fxlint.cli.app import main

    path = write_module("""
        import torch

        class Sep(torch.nn.Module):
            def forward(self, x):
                return x.t().contiguous(), x[:, [0, 2, 4]] * 2
        """, name="compiled_model.py")
    code = main(["lint", f"{path}:Sep", "-i", "randn(8,8)", "--compiled", "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code in (0, 1)
    got = {f["code"]: (f["compiled"], f["compiled_bytes"]) for f in out["findings"]}
    assert got.get("FXL401") == (FUSED, 0), got  # the gather is fused into the multiply
    assert out["summary"]["compiled"]["fused"] >= 1


@pytest.mark.inductor
def test_a_loops_copies_and_a_matmuls_two_operands_in_the_compiled_program():
    """models/transformer_attention: a refinement loop runs the block three times; q and k of one line
    are two FXL201 findings on one matmul. Each is credited with its own copies, every iteration's."""
    from tests.conftest import ROOT, load_model

    model, inputs = load_model(ROOT / "models" / "transformer_attention.py")
    report = fxlint.lint(model, inputs, config=False, probe=False, compiled=True)
    copies = [f for f in report if f.code in ("FXL101", "FXL201")]
    assert len(copies) == 4
    for f in copies:  # q, k, v and the head merge: each copy survives, in each of the three iterations
        assert (f.compiled, f.compiled_bytes) == (SURVIVES, f.bytes), f
    reshape = report.by_code("FXL102")[0]
    # Inductor's graph holds one flatten of the bias where eager makes three (the graph's CSE merges the
    # identical ops, recording no provenance for the merged ones): not known, rather than guessed
    assert reshape.compiled == UNKNOWN
    assert report.extras["compiled"]["graph 0"]["unexplained"] == []


# --------------------------------------------------------------------------- the backward graph


@pytest.mark.inductor
def test_lint_compiled_reads_the_backward_and_the_copy_is_in_the_backward_program():
    """A training lint compiles the backward with the forward and reads it: FXL114's copy (the reshape's
    backward makes the permuted gradient contiguous) survives in the compiled backward with the bytes
    eager's backward copies, and it is a kernel of the backward program Inductor generates."""
    from tests._inductor_code import parse
    from tests.rule_snapshots import load_fixture

    model, inputs = load_fixture("fxl114").make()
    report = fxlint.lint(model.train(), inputs, config=False, compiled=True, select="FXL114")
    [f] = report.findings
    assert f.compiled == SURVIVES and f.bytes == 0 and f.compiled_backward_bytes == f.backward_bytes > 0
    assert report.summary()["compiled"]["backward_bytes_per_step"] >= f.backward_bytes
    assert "per training step in the backward" in str(report)

    from torch._inductor.utils import run_and_get_code

    torch._dynamo.reset()
    model, inputs = load_fixture("fxl114").make()
    compiled = torch.compile(model.train(), backend="inductor")

    def step():
        out = compiled(*inputs)
        (out if isinstance(out, torch.Tensor) else out[0]).sum().backward()

    with torch._inductor.config.patch(fx_graph_cache=False):
        _, codes = run_and_get_code(step)
    torch._dynamo.reset()
    backward = parse(codes[-1])
    written = [program_buf for c in backward.calls if "clone" in c.kernel for w in c.writes
               for program_buf in [backward.buffers.get(w)] if program_buf is not None]
    assert any(b.nbytes == f.compiled_backward_bytes for b in written), (f.compiled_backward_bytes, written)

    # inference reads no backward
    inference = fxlint.lint(load_fixture("fxl114").make()[0].eval(), inputs, config=False, compiled=True)
    assert all(g.compiled_backward_bytes is None for g in inference)


@pytest.mark.inductor
def test_the_backend_reads_a_training_graphs_backward_and_changes_no_kernel():
    """In a training graph the backend has AOTAutograd compile the backward with the forward: the same
    forward and backward kernels as plain Inductor, and the backward's copies are read."""
    from torch._inductor.utils import run_and_get_code

    from tests.rule_snapshots import load_fixture

    def step(backend):
        torch._dynamo.reset()
        model, inputs = load_fixture("fxl114").make()
        compiled = torch.compile(model.train(), backend=backend, options={"config": False} if backend == "fxlint"
                                 else None)

        def run():
            out = compiled(*inputs)
            (out if isinstance(out, torch.Tensor) else out[0]).sum().backward()

        with torch._inductor.config.patch(fx_graph_cache=False), fxlint.collect() as session:
            _, codes = run_and_get_code(run)
        torch._dynamo.reset()
        return codes, session

    plain, _ = step("inductor")
    linted, session = step("fxlint")
    assert len(plain) == len(linted) == 2  # forward and backward
    assert [_strip_comments(c) for c in linted] == [_strip_comments(c) for c in plain], _diff(linted, plain)
    found = [f for f in session.findings if f.code == "FXL114"]
    assert found and found[0].compiled == SURVIVES and found[0].compiled_backward_bytes == found[0].backward_bytes


@pytest.mark.inductor
def test_the_html_report_shows_eager_bytes_and_the_compiled_verdict_side_by_side(tmp_path):
    from fxlint.cli.app import main

    page = fxlint.report(Example(), _args(), output=None, config=False, rewrites=False, compiled=True)
    assert "<th>Eager bytes/call</th><th>Under Inductor</th>" in page
    assert 'class="compiled" data-sort="49152">survives, 49.2 kB per call' in page
    assert page.count(">fused (no copy of its own)<") == 2  # the reshape and the gather
    assert "under Inductor: survives, 49.2 kB per call" in page  # under the source line too
    plain = fxlint.report(Example(), _args(), output=None, config=False, rewrites=False)
    assert "<th>Under Inductor</th>" not in plain and "<th>Bytes/call</th>" in plain
    # the CLI flag; a bad output path is one error line before anything compiles
    assert main(["report", "tests.test_compiled:Example", "--compiled", "-o", str(tmp_path / "no" / "such" / "dir" / "x.html")]) == 2
