"""`fxlint bench` runs on a tiny model and writes valid JSON and a PNG (not a timed test)."""

from __future__ import annotations

import json

import pytest
import torch

import fxlint
from fxlint.cli.app import main

TINY = """
import torch
import torch.nn as nn


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        return self.lin(x)[:, [0, 2, 4, 6]]


def make():
    torch.manual_seed(0)
    return Tiny(), (torch.randn(4, 8),)
"""

FIELDS = {"model", "variant", "mode", "median_s", "iqr_s", "runs", "ratio", "copied_bytes", "peak_bytes",
          "compile_s", "max_out_diff", "max_grad_diff", "correct", "rewrites", "error"}


def _bench(capsys, path, tmp_path, *extra):
    out_json, out_png = tmp_path / "b.json", tmp_path / "b.png"
    code = main(["bench", f"{path}:make", "--min-run-time", "0.05", "--json", str(out_json),
                 "--plot", str(out_png), *extra])
    captured = capsys.readouterr()
    return code, captured, json.loads(out_json.read_text()), out_png


def test_bench_eager_both_modes_writes_json_and_png(capsys, write_module, tmp_path):
    path = write_module(TINY, name="tiny.py")
    code, cap, data, png = _bench(capsys, path, tmp_path, "--backends", "eager")
    assert code == 0, cap.err
    assert {"cpu", "threads", "torch"} <= set(data["machine"])
    rows = data["results"]
    assert {(r["variant"], r["mode"]) for r in rows} == {
        (v, m) for v in ("eager", "eager+rewrite") for m in ("infer", "train")}
    for r in rows:
        assert FIELDS <= set(r)
        assert r["correct"] and r["error"] is None and r["median_s"] > 0 and r["runs"] > 0
        assert r["max_out_diff"] == 0.0
    orig = {r["mode"]: r for r in rows if r["variant"] == "eager"}
    new = {r["mode"]: r for r in rows if r["variant"] == "eager+rewrite"}
    # the gather (4x4 float32) is gone; the Linear's bias copy (every addmm pays it) stays
    assert orig["infer"]["copied_bytes"] - new["infer"]["copied_bytes"] == 4 * 4 * 4
    assert new["infer"]["copied_bytes"] == 4 * 8 * 4
    assert orig["infer"]["ratio"] == pytest.approx(1.0)
    assert new["infer"]["rewrites"] and "FXL401" in new["infer"]["rewrites"][0]
    assert new["train"]["max_grad_diff"] == 0.0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    assert "eager+rewrite" in cap.out and "machine:" in cap.out
    assert "[1/" in cap.err and "model 1/1" in cap.err and "left)" in cap.err  # progress, with the time left


def test_a_variant_with_wrong_results_is_marked_failed(capsys, write_module, tmp_path, monkeypatch):
    path = write_module(TINY, name="tiny_wrong.py")
    real = fxlint.rewrite

    class Wrong:
        def __init__(self, result):
            self.applied, self.skipped = result.applied, result.skipped
            self.module = lambda x: result.module(x) + 1.0

    import fxlint.benchmarks.harness as harness

    monkeypatch.setattr(harness, "_variants", _wrapping(harness._variants, lambda m, i: Wrong(real(m, i))))
    code, cap, data, _ = _bench(capsys, path, tmp_path, "--backends", "eager", "--mode", "infer")
    assert code == 1
    bad = [r for r in data["results"] if not r["correct"]]
    assert [r["variant"] for r in bad] == ["eager+rewrite"] and bad[0]["max_out_diff"] == pytest.approx(1.0)
    assert "FAILED" in cap.out


def _wrapping(variants, rewrite_fn):
    def patched(model, inputs, backends, _rewrite, compiler="inductor"):
        return variants(model, inputs, backends, rewrite_fn, compiler)

    return patched


@pytest.mark.parametrize("argv,needle", [
    (["--backends", "tpu"], "--backends takes eager"),
    (["--plot", "chart.svg"], "needs a .png"),
    ([], "needs example inputs"),
])
def test_bench_bad_input(capsys, write_module, argv, needle):
    path = write_module("import torch.nn as nn\nclass M(nn.Module):\n    def forward(self, x):\n        return x\n",
                        name="noinputs.py")
    code = main(["bench", f"{path}:M", *argv] if argv != [] else ["bench", f"{path}:M"])
    err = capsys.readouterr().err
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1


@pytest.mark.inductor
def test_bench_with_inductor(capsys, write_module, tmp_path):
    path = write_module(TINY, name="tiny_inductor.py")
    code, cap, data, _ = _bench(capsys, path, tmp_path, "--mode", "infer")
    assert code == 0, cap.err
    rows = {r["variant"]: r for r in data["results"]}
    assert set(rows) == {"eager", "eager+rewrite", "inductor", "inductor+rewrite"}
    assert rows["inductor"]["compile_s"] > 0 and rows["inductor+rewrite"]["correct"]
    assert torch.isfinite(torch.tensor(rows["inductor+rewrite"]["ratio"]))


def test_a_meta_device_model_is_skipped_not_failed(capsys, write_module, tmp_path):
    path = write_module(
        "import torch\nimport torch.nn as nn\n\n"
        "def make():\n    return nn.Linear(4, 4).to('meta'), (torch.randn(2, 4, device='meta'),)\n",
        name="tiny_meta.py")
    code, cap, data, _ = _bench(capsys, path, tmp_path, "--backends", "eager", "--mode", "infer")
    assert code == 0, cap.err
    assert data["failures"] == 0 and all("meta device" in r["skipped"] for r in data["results"])
    assert "skipped: runs on the meta device" in cap.out


def test_peak_memory_counts_only_what_the_call_allocates():
    from fxlint.benchmarks.harness import _peak_bytes, _Step

    held = [torch.ones(1 << 20)]  # 4 MiB allocated before the measured call

    def fn(x):
        held.pop()  # freed inside the call: must not cancel the call's own allocations
        return x.clone()  # 1 MiB

    x = torch.ones(1 << 18)
    peak = _peak_bytes(_Step(fn, (x,), {}, False, [], {}))
    assert peak == x.nbytes


def test_a_compiled_variant_is_audited_as_compiled_not_as_its_eager_original():
    from fxlint.benchmarks.harness import _copied_bytes
    from tests.test_backend import Sep  # output[:, [i for i in range(0, n, 2)]]: a gather

    torch._dynamo.reset()
    m, x = Sep(), torch.randn(64, 16)
    compiled = torch.compile(m, backend="fxlint", options={"rewrite": True, "inner": "eager"})
    eager = _copied_bytes(m, m, (x,), {}, False, compiled=False)
    rewritten = _copied_bytes(compiled, m, (x,), {}, False, compiled=True)
    # the compiled graph slices: only the gather's 64x8 floats go (addmm's bias copy stays)
    assert eager - rewritten == 64 * 8 * 4
    assert _copied_bytes(compiled, m, (x,), {}, True, compiled=True) < _copied_bytes(m, m, (x,), {}, True,
                                                                                      compiled=False)


def test_readme_results_fills_the_marked_sections(tmp_path):
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "readme_results", Path(__file__).resolve().parent.parent / "bench" / "readme_results.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    machine = {"cpu": "TestCPU", "threads": 2, "torch": "2.13.0", "python": "3.11", "cuda": None}

    def row(model, variant, ratio, copied, rewrites=(), correct=True):
        return {"model": model, "variant": variant, "mode": "infer", "ratio": ratio, "copied_bytes": copied,
                "rewrites": list(rewrites), "correct": correct, "error": None, "skipped": None}

    bench = {"machine": machine, "results": [
        row("sep", "eager", 1.0, 8_200_000), row("sep", "eager+rewrite", 1.45, 0, ["FXL401 m.py:3"]),
        row("sep", "inductor", 1.0, 0), row("sep", "inductor+rewrite", 0.97, 0),
        row("mlp", "eager", 1.0, 100), row("mlp", "eager+rewrite", 0.8, 100),
        row("mlp", "inductor", 1.0, 0), row("mlp", "inductor+rewrite", 1.03, 0, correct=False),
    ]}
    speed = {"machine": machine, "rules": 21,
             "stack": [{"layers": 2, "nodes": 54, "capture_s": 0.5, "analysis_s": 0.003, "inductor_s": 5.0}],
             "synthetic": [{"nodes": 1000, "analysis_s": 0.05}, {"nodes": 2000, "analysis_s": 0.1}]}
    (tmp_path / "b.json").write_text(json.dumps(bench))
    (tmp_path / "s.json").write_text(json.dumps(speed))
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- bench-results:start -->\nold\n<!-- bench-results:end -->\nmid\n"
                      "<!-- lint-speed:start -->\n<!-- lint-speed:end -->\nend\n")
    assert mod.main([str(tmp_path / "b.json"), "--lint-speed", str(tmp_path / "s.json"),
                     "--readme", str(readme)]) == 0
    text = readme.read_text()
    assert text.startswith("intro\n") and "\nmid\n" in text and text.endswith("end\n") and "old" not in text
    assert "| sep | infer | 1.45x | 0.97x | 8.2 MB -> 0 B | FXL401 |" in text
    assert "| mlp | infer | no rewrite | 1.03x | 100 B -> 100 B | none |" in text
    assert "Failed variants: mlp infer inductor+rewrite: results differ" in text  # never averaged away
    assert "Machine: TestCPU, 2 threads" in text
    speed_part = text.split("<!-- lint-speed:start -->")[1]
    assert "fxlint bench --lint-speed" in speed_part and "linear fit: 50.0 us/node" in speed_part
    with pytest.raises(SystemExit, match="no <!-- lint-speed:start -->"):
        readme.write_text("<!-- bench-results:start --><!-- bench-results:end -->")
        mod.main([str(tmp_path / "b.json"), "--lint-speed", str(tmp_path / "s.json"), "--readme", str(readme)])


GRAPH_BREAK = """
import torch
import torch.nn as nn


class Breaks(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        y = self.lin(x)
        if y.max() > 0:  # data-dependent branch: a graph break
            y = y - 1
        return y[:, [0, 1, 2, 3]]


def make():
    torch.manual_seed(0)
    return Breaks(), (torch.randn(4, 8),)
"""


def test_a_model_with_graph_breaks_skips_the_whole_model_rewrite_and_exits_0(capsys, write_module, tmp_path):
    """fxlint.rewrite needs one graph: a graph break is a reason to skip eager+rewrite, not a failure."""
    path = write_module(GRAPH_BREAK, name="tiny_breaks.py")
    code, cap, data, _ = _bench(capsys, path, tmp_path, "--backends", "eager", "--mode", "infer")
    assert code == 0, cap.out + cap.err
    rows = {r["variant"]: r for r in data["results"]}
    assert rows["eager"]["correct"] and rows["eager"]["skipped"] is None and rows["eager"]["median_s"] > 0
    skipped = rows["eager+rewrite"]
    assert skipped["skipped"].startswith("graph breaks") and skipped["error"] is None and data["failures"] == 0
    assert "skipped: graph breaks" in cap.out and "FAILED" not in cap.out


def test_a_variant_torch_compile_cannot_build_is_skipped_and_a_rewrite_that_breaks_is_failed(monkeypatch):
    """The plain compile is built before any fxlint variant, so its failure is PyTorch's: skipped, and
    the fxlint-compiled variant with it. Where the plain compile works, the fxlint variant failing is a
    failure (exit 1)."""
    from fxlint.benchmarks import harness

    real = harness._variants

    def variants(*fail: str):
        def patched(*a, **k):
            out = []
            for name, factory in real(*a, **k):
                if name in fail:
                    def factory(name=name):
                        raise RuntimeError(f"{name} cannot be built here")
                out.append((name, factory))
            return out
        return patched

    model, inputs = torch.nn.Linear(4, 4), (torch.randn(2, 4),)
    kw = dict(modes=["infer"], backends=["eager", "inductor"], measure=False, compiler="eager", say=lambda m: None)
    monkeypatch.setattr(harness, "_variants", variants("inductor", "inductor+rewrite"))
    rows = {r.variant: r for r in harness.bench_model("m", model, inputs, **kw)}
    assert [r.variant for r in rows.values()] == list(harness.VARIANTS)  # results in VARIANTS order
    assert rows["inductor"].skipped.startswith("torch.compile itself fails") and rows["inductor"].correct
    assert "inductor cannot be built here" in rows["inductor"].skipped
    assert rows["inductor+rewrite"].skipped.endswith("(see the inductor row)")
    assert rows["inductor+rewrite"].error is None
    assert rows["eager+rewrite"].skipped is None and rows["eager+rewrite"].correct

    monkeypatch.setattr(harness, "_variants", variants("inductor+rewrite"))
    rows = {r.variant: r for r in harness.bench_model("m", model, inputs, **kw)}
    assert rows["inductor"].skipped is None and rows["inductor"].correct
    assert rows["inductor+rewrite"].skipped is None and not rows["inductor+rewrite"].correct
    assert rows["inductor+rewrite"].error == "RuntimeError: inductor+rewrite cannot be built here"
    assert harness.BenchResult(machine={}, results=list(rows.values())).failures == [rows["inductor+rewrite"]]



def test_inductors_own_numerics_are_a_note_and_the_rewrite_is_checked_against_inductor(monkeypatch):
    """Plain Inductor off eager beyond tolerance is PyTorch's (a note, exit 0); the fxlint variant then
    passes when it matches plain Inductor, and fails when it matches neither."""
    from fxlint.benchmarks import harness

    real = harness._variants
    model, inputs = torch.nn.Linear(4, 4), (torch.randn(2, 4),)

    def patched(offsets):
        def variants(*a, **k):
            out = []
            for name, factory in real(*a, **k):
                if name in offsets:
                    def factory(name=name, base=factory):
                        fn, rw = base()
                        return (lambda x: fn(x) + offsets[name]), rw
                out.append((name, factory))
            return out
        return variants

    kw = dict(modes=["infer"], backends=["eager", "inductor"], measure=False, compiler="eager", say=lambda m: None)
    monkeypatch.setattr(harness, "_variants", patched({"inductor": 1e-2, "inductor+rewrite": 1e-2}))
    rows = {r.variant: r for r in harness.bench_model("m", model, inputs, **kw)}
    assert rows["inductor"].correct and "Inductor's own results differ" in rows["inductor"].note
    assert rows["inductor+rewrite"].correct and rows["inductor+rewrite"].max_out_diff == pytest.approx(1e-2, rel=1e-3)
    table = harness.render_table(harness.BenchResult(machine={"cpu": "x", "threads": 1, "torch": "t"},
                                                     results=list(rows.values())), color=False)
    assert "ok (Inductor's own results differ" in table and "FAILED" not in table

    monkeypatch.setattr(harness, "_variants", patched({"inductor": 1e-2, "inductor+rewrite": 5e-2}))
    rows = {r.variant: r for r in harness.bench_model("m", model, inputs, **kw)}
    assert rows["inductor"].correct and not rows["inductor+rewrite"].correct


def test_a_ratio_whose_spread_holds_one_is_marked_as_noise():
    from types import SimpleNamespace

    from fxlint.benchmarks.harness import VariantResult, _ratio_spread

    def rounds(*medians):
        return [SimpleNamespace(median=m) for m in medians]

    base = rounds(1.0, 1.0, 1.0, 1.0, 1.0)
    noisy = rounds(0.8, 1.1, 0.95, 1.2, 1.05)  # per-round ratios straddle 1.00x
    fast = rounds(0.5, 0.52, 0.49, 0.55, 0.5)  # about 2x in every round
    lo, hi = _ratio_spread(base, noisy)
    assert lo < 1.0 < hi
    r = VariantResult("m", "eager+rewrite", "infer", ratio=1.0, ratio_lo=lo, ratio_hi=hi)
    assert r.within_noise and r.ratio_text().startswith("1.00x (noise: ")
    lo2, hi2 = _ratio_spread(base, fast)
    r2 = VariantResult("m", "eager+rewrite", "infer", ratio=2.0, ratio_lo=lo2, ratio_hi=hi2)
    assert not r2.within_noise and r2.ratio_text() == "2.00x"
    # the baseline against itself is 1.00x by construction, never "noise"
    assert not VariantResult("m", "eager", "infer", ratio=1.0, ratio_lo=1.0, ratio_hi=1.0).within_noise
