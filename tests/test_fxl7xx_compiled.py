"""FXL701-FXL704: the copies the compiled program makes that no eager finding explains, read from Inductor's
lowering, one rule per kind of copy (``fxlint.compiled.kinds``).

The oracle is the program Inductor generates for the same module (its wrapper code, ``tests/_inductor_code``)
and the profiler on it: every claimed copy is a generated kernel that reads the claimed value and writes a
buffer of the claimed size, and it runs on every call.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

import fxlint
from fxlint.compiled.kinds import CAT, INPUT_LAYOUT, KERNEL_LAYOUT, KINDS, MUTATION, OTHER, OUTPUT_LAYOUT, kind_of
from fxlint.compiled.lowering import CompiledBuffer, Lowering
from fxlint.compiled.program import CompiledGraph, judge
from fxlint.findings import Finding, Severity
from fxlint.registry import default_registry
from tests._inductor_code import channels_last, parse
from tests.rule_snapshots import load_fixture, marked_lines, render_findings

CODES = ("FXL701", "FXL702", "FXL703", "FXL704", "FXL705")


def _buf(name: str = "buf0", **kw) -> CompiledBuffer:
    kw.setdefault("bytes", 1024)
    return CompiledBuffer(name, "generated", True, kw.pop("bytes"), sources=kw.pop("sources", ()),
                          ops=kw.pop("ops", ("clone",)), producer=kw.pop("producer", None), why="load/store", **kw)


KIND_EXAMPLES = {
    MUTATION: _buf(mutates="l_self_buffers_ema_", inputs=("l_self_buffers_ema_",), consumers=("mm",)),
    CAT: _buf(into="cat", producer="u", sources=("u",)),
    INPUT_LAYOUT: _buf(consumers=("convolution",), consumer_nodes=("conv",), inputs=("w",), only_inputs=True,
                       read_nodes=("w",), sources=("conv",)),
    KERNEL_LAYOUT: _buf(consumers=("bmm",), consumer_nodes=("mm",), producer="mm", sources=("p", "mm")),
    OUTPUT_LAYOUT: _buf(producer="conv", sources=("conv",), read_nodes=("conv",), output=True, ops=("convolution",)),
    OTHER: _buf(producer="r", sources=("r",)),
}


# ------------------------------------------------------------------------------------------- no compile


def test_every_copy_has_one_kind_and_each_kind_but_other_one_rule():
    assert {kind_of(b) for b in KIND_EXAMPLES.values()} == set(KINDS)
    for kind, buf in KIND_EXAMPLES.items():
        assert kind_of(buf) == kind, kind
    # a view of an input on its way to the kernel is a value the graph computes, not the input as it comes in
    view = _buf(consumers=("view_as_complex",), consumer_nodes=("c",), inputs=("x",), only_inputs=True,
                sources=("transpose", "c"))
    graph = SimpleNamespace(by_name={"transpose": SimpleNamespace(kind="op", is_view=True, is_maybe_view=False),
                                     "c": SimpleNamespace(kind="op", is_view=False, is_maybe_view=False)})
    assert kind_of(view, graph) == KERNEL_LAYOUT and kind_of(view) == INPUT_LAYOUT

    compiled = [r for r in default_registry().rules() if r.scope == "compiled"]
    assert [r.code for r in compiled] == list(CODES)
    view_ns = _fake_view("conv", "mm", "p", "u", "r", "w", "l_self_buffers_ema_")
    for kind, buf in KIND_EXAMPLES.items():
        subject = CompiledGraph("graph 0", view_ns, Lowering(buffers=[buf], lowered={"p"}, schedulers=1), [buf])
        hits = {r.code: list(r.check(subject, None)) for r in compiled}
        owners = [code for code, found in hits.items() if found]
        assert len(owners) == (0 if kind == OTHER else 1), (kind, owners)
        for code, found in hits.items():
            for h in found:
                assert h.compiled_bytes == 1024 and h.bytes is None  # a compiled copy: eager makes none


def test_an_output_returned_as_a_view_the_user_took_is_reported_at_that_views_line():
    """FXL705 at the op the buffer is lowered from: a training graph saves `q.view(b, -1, h, d).transpose(1, 2)`
    for the backward and returns it in the traced layout; the value returned is that view (the user's line
    where the oracle measures the copy), not the linear's output it reads."""
    rule = next(r for r in default_registry().rules() if r.code == "FXL705")
    view_ns = _fake_view("q", "q_heads")
    view_ns.by_name["q_heads"].op = "transpose"
    for n in view_ns.nodes:
        n.spelling = n.op
    buf = _buf(producer="q_heads", sources=("q", "q_heads"), read_nodes=("q",), output=True, ops=("transpose",))
    subject = CompiledGraph("graph 0", view_ns, Lowering(buffers=[buf], lowered={"q"}, schedulers=1), [buf])
    hits = list(rule.check(subject, None))
    assert [h.node.name for h in hits] == ["q_heads"]
    # a conversion lowered from a node the view does not know: the value it reads, as before
    other = _buf(producer="gone", sources=("q",), read_nodes=("q",), output=True, ops=("convolution",))
    subject = CompiledGraph("graph 0", view_ns, Lowering(buffers=[other], lowered={"q"}, schedulers=1), [other])
    assert [h.node.name for h in rule.check(subject, None)] == ["q"]


def _fake_view(*names: str) -> SimpleNamespace:
    def node(name: str) -> SimpleNamespace:
        kind = "buffer" if "buffers" in name else "parameter" if name == "w" else "op"
        op = "conv" if name == "conv" else "cat" if name == "u" else "clone"
        return SimpleNamespace(name=name, kind=kind, op=op, is_view=False, is_maybe_view=False,
                               param_name="ema" if "buffers" in name else "conv.weight" if name == "w" else None,
                               location=None, module_path="conv" if name == "conv" else None, tensor_inputs=[], users=[], inputs=[], args={},
                               node=SimpleNamespace(meta={}), position=0, mutates=[], tensor=None, source=None,
                               view_chain=lambda **kw: [])
    nodes = {n: node(n) for n in names}
    return SimpleNamespace(by_name=nodes, writers=[], nodes=list(nodes.values()))


def test_judge_gives_eager_owned_copies_to_their_finding_and_ignoring_a_code_hides_only_its_own():
    view = _fake_view("conv", "mm", "p", "u", "r", "w", "l_self_buffers_ema_")
    bufs = list(KIND_EXAMPLES.values())
    low = Lowering(buffers=bufs, lowered={"p", "mm", "u", "r", "conv"}, extern_sources={"mm", "conv"}, schedulers=1)
    rules = default_registry().rules()
    eager = Finding(code="FXL201", name="noncontiguous-matmul", severity=Severity.WARNING, message="copies.",
                    node="mm", bytes=1024, graph="graph 0")
    out, quiet, said = judge([eager], low, view, "graph 0", rules=rules)
    codes = sorted(f.code for f in out)
    # the bmm operand's copy is FXL201's (it survives); the other kinds are each one compiled finding
    assert codes == ["FXL201", "FXL702", "FXL703", "FXL704", "FXL705"], codes
    assert out[0].compiled == "survives" and out[0].compiled_bytes == 1024
    assert [u["buffer"] for u in said["unexplained"]] == ["buf0"] and said["unexplained"][0]["producer"] == "r"
    assert said["survives"] == 5 and quiet == []

    without = [r for r in rules if r.code != "FXL702"]
    out2, _, _ = judge([eager], low, view, "graph 0", rules=without)
    assert sorted(f.code for f in out2) == ["FXL201", "FXL703", "FXL704", "FXL705"]  # no other took FXL702's copy
    # no eager finding: the bmm operand's copy is Inductor's own layout for the kernel
    out3, _, _ = judge([], low, view, "graph 0", rules=rules)
    assert sorted(f.code for f in out3) == ["FXL701", "FXL702", "FXL703", "FXL704", "FXL705"]
    # an unreadable lowering: no compiled finding, never a guess
    out4, _, said4 = judge([eager], Lowering(error="boom"), view, "graph 0", rules=rules)
    assert [f.code for f in out4] == ["FXL201"] and out4[0].compiled == "unknown" and "boom" in said4["why_unknown"]


def test_a_rule_that_raises_is_reported_and_the_others_still_run():
    from dataclasses import replace

    view = _fake_view("conv", "mm", "p", "u", "r", "w", "l_self_buffers_ema_")
    low = Lowering(buffers=list(KIND_EXAMPLES.values()), lowered={"p"}, schedulers=1)

    def boom(compiled, ctx):
        raise RuntimeError("injected")

    rules = [replace(r, check=boom) if r.code == "FXL703" else r for r in default_registry().rules()]
    with pytest.warns(fxlint.FxlintWarning, match="FXL703 compiled-cat-copy failed"):
        out, _, _ = judge([], low, view, "graph 0", rules=rules)
    assert sorted(f.code for f in out) == ["FXL701", "FXL702", "FXL704", "FXL705"]


# ------------------------------------------------------------------------------------------- Inductor


def _onednn() -> bool:
    return torch.backends.mkldnn.is_available() and torch.backends.mkldnn.enabled


needs_onednn = pytest.mark.skipif(not _onednn(), reason="Inductor's channels_last layout optimisation for convolutions "
                                  "runs where oneDNN does (FXLINT_TEST_MKLDNN=0 turns it off)")


@pytest.fixture(scope="module")
def linted():
    model, inputs = load_fixture("fxl7xx").make()
    with torch.no_grad():
        return fxlint.lint(model, inputs, compiled=True, config=False)


@pytest.fixture(scope="module")
def generated():
    """The program Inductor generates for the fixture, and the kernels one profiled call runs."""
    from torch._inductor.utils import run_and_get_code

    model, inputs = load_fixture("fxl7xx").make()
    torch._dynamo.reset()
    with torch.no_grad(), torch._inductor.config.patch({"fx_graph_cache": False, "cpp.enable_kernel_profile": True}):
        compiled = torch.compile(model, backend="inductor")
        _, code = run_and_get_code(compiled, *inputs)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            compiled(*inputs)
    ran = [e.name for e in prof.events()]
    torch._dynamo.reset()
    return parse(code[0]), ran


@pytest.mark.inductor
@needs_onednn
def test_positives_and_negatives_of_each_compiled_rule(linted):
    for code in CODES:
        found = {f.line for f in [*linted.findings, *linted.suppressed] if f.code == code}
        positives = set(marked_lines("fxl7xx", f"positive {code}"))
        negatives = set(marked_lines("fxl7xx", f"negative {code}"))
        assert positives and positives <= found, (code, positives, found)
        assert not (negatives & found), (code, negatives & found)
    for f in linted:
        if f.code in CODES:
            assert f.compiled == "survives" and f.compiled_bytes and f.bytes is None, f
    # eager copies these rules never take: one owner per copy (FXL202 keeps the weight eager converts too)
    branch = [f for f in linted if f.module_path == "branch_a" and f.code in ("FXL202", "FXL702")]
    assert [f.code for f in branch] == ["FXL202"] and branch[0].compiled == "survives"


@pytest.mark.inductor
def test_snapshot_of_the_compiled_rules_on_the_fixture(linted, snapshot):
    from tests.rule_snapshots import kernel_env

    found = [f for f in [*linted.findings, *linted.suppressed] if f.code in CODES]
    # Inductor runs convolutions channels_last where oneDNN does: the output depends on it
    assert render_findings(found, "fxl7xx.py") == snapshot(name=kernel_env())


@pytest.mark.inductor
@needs_onednn
def test_every_claim_is_a_kernel_of_the_generated_program_that_runs_on_every_call(linted, generated):
    program, ran = generated
    model, (img, x) = load_fixture("fxl7xx").make()
    inputs: dict[tuple[int, ...], list[str]] = {}  # the graph's inputs by size (several may share one)
    for name, b in program.buffers.items():
        if name.startswith(("arg", "primals")):
            inputs.setdefault(b.size, []).append(name)
    by = {(f.code, f.message.split("`")[1] if "`" in f.message else ""): f for f in linted if f.code in CODES}

    def copies_of(size: tuple[int, ...]) -> list[tuple[str, str]]:
        return [(c.kernel, w) for source in inputs[size] for c, w in program.copies_of(source)]

    # FXL702: the weight and the image, each read by a kernel that writes a channels_last buffer of its size
    for value, tensor in (("conv.weight", model.conv.weight), ("img", img)):
        f = by[("FXL702", value)]
        size = tuple(tensor.shape)
        written = [(k, w) for k, w in copies_of(size) if w in program.buffers and program.buffers[w].size == size]
        assert written, (value, program.calls)
        kernel, buf = written[0]
        assert program.buffers[buf].stride == channels_last(size)
        assert f.compiled_bytes == program.buffers[buf].nbytes == tensor.numel() * 4
        assert any(kernel in name for name in ran), (kernel, ran)  # it runs on the profiled call
    # FXL704: the kernel that updates `ema` also writes the new value to a buffer of its own, which the matmul reads
    f = by[("FXL704", "ema")]
    updates = [(c, ema) for ema in inputs[tuple(model.ema.shape)] for c in program.writes_of(ema)]
    assert updates and any(w != ema and program.buffers[w].nbytes == f.compiled_bytes
                           for c, ema in updates for w in c.writes if w in program.buffers)
    # FXL703: each conv output is read by a kernel that writes it into the concatenation
    cats = [f for f in linted if f.code == "FXL703"]
    assert len(cats) == 2 and {f.message.split("`")[1] for f in cats} == {"branch_a", "branch_b"}
    assert all(f.compiled_bytes == 2 * 4 * 8 * 8 * 4 for f in cats)
    # FXL701: the transposed pairs made contiguous before view_as_complex
    f = next(f for f in linted if f.code == "FXL701")
    assert f.compiled_bytes == x.numel() * 4
    assert any(program.buffers[w].size == (8, 8, 2) and program.buffers[w].stride == (16, 2, 1)
               for _, w in copies_of(tuple(x.shape)) if w in program.buffers), program.calls


@pytest.mark.inductor
@needs_onednn
def test_the_fix_for_weights_removes_the_copy():
    """FXL702's fix, checked: the model converted to channels_last once; the weights' copies are gone."""
    model, inputs = load_fixture("fxl7xx").make()
    model = model.to(memory_format=torch.channels_last)
    with torch.no_grad():
        report = fxlint.lint(model, inputs, compiled=True, config=False, select="FXL702")
    values = {f.message.split("`")[1] for f in report}
    assert values == {"img"}, values  # the caller's image still arrives NCHW


@pytest.mark.inductor
@needs_onednn
def test_the_backend_reports_them_with_the_compile():
    model, inputs = load_fixture("fxl7xx").make()
    with torch.no_grad():  # a fresh copy of the module: the call updates its buffers
        expect = load_fixture("fxl7xx").make()[0](*inputs)
    torch._dynamo.reset()
    with torch.no_grad(), fxlint.collect() as session:
        out = torch.compile(model, backend="fxlint", options={"config": False})(*inputs)
    torch._dynamo.reset()
    for got, want in zip(out, expect):
        torch.testing.assert_close(got, want)
    assert set(CODES) <= {f.code for f in session.findings}
    mine = [f for f in session.findings if f.code in CODES]
    assert all(f.compiled == "survives" and f.compiled_bytes for f in mine)
    summary = session.report().summary()["compiled"]
    assert summary["bytes_per_call"] >= sum(f.compiled_bytes for f in mine)


@pytest.mark.inductor
@needs_onednn
def test_a_comment_silences_one_compiled_finding_and_the_configuration_its_severity(write_module):
    path = write_module("""
        import torch
        import torch.nn as nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(3, 4, 3)
                self.conv2 = nn.Conv2d(3, 4, 3)

            def forward(self, x):
                a = self.conv(x)  # fxlint: ignore[FXL702]
                return a, self.conv2(x * 2)
        """, name="silenced_model.py")
    import importlib.util

    spec = importlib.util.spec_from_file_location("silenced_model", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with torch.no_grad():
        report = fxlint.lint(mod.Net().eval(), (torch.randn(1, 3, 8, 8),), compiled=True, config=False,
                             select="FXL702", severity={"FXL702": "error"})
    assert {f.message.split("`")[1] for f in report} == {"conv2.weight"}, [f.message for f in report]
    assert {f.severity for f in report} == {Severity.ERROR}
    assert {f.message.split("`")[1] for f in report.suppressed} >= {"conv.weight", "x"}
