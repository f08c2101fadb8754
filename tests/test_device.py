"""Linting for a target device from a CPU machine (issue 17): the fake-tensor simulation
(fxlint.analysis.device), what FXL106/FXL107/FXL304 predict with it, per line and bytes, the mixed-device
programs (parts deliberately on the host), the configuration key and the CLI flag, the zoo's
declared devices, and bench/gpu_check.py's offline paths (the GPU run itself needs a GPU)."""

from __future__ import annotations

import importlib
import json
import re
import textwrap

import pytest
import torch
import torch.nn as nn

import fxlint
from fxlint.errors import ConfigError
from tests.conftest import ROOT, line_of, run_cli

HERE = __file__


def L(marker: str) -> int:
    return line_of(HERE, marker)


# --------------------------------------------------------------------------- small cases


class Normalise(nn.Module):
    def forward(self, x):
        return x / x.abs().max().item()  # mark:item


class RoundTrip(nn.Module):
    def forward(self, x):
        n = x.cpu().numpy()  # mark:cpu
        return x + torch.from_numpy(n).to(x.device)  # mark:back


class Branches(nn.Module):
    def forward(self, x):
        if x.sum() > 0:  # mark:if
            x = x * 2
        print(x)  # mark:print
        return x


class Positions(nn.Module):
    def forward(self, x):
        pos = torch.arange(x.shape[1]).to(x.device, non_blocking=True)  # mark:arange
        return x + pos


class OnDevice(nn.Module):
    def forward(self, x):
        z = torch.zeros(x.shape[1], device=x.device)  # built where it is used
        return x + z + torch.ones((), dtype=x.dtype)  # a 0-dim CPU tensor mixes freely


class Mixed(nn.Module):
    def forward(self, x):
        return x + torch.ones(x.shape)  # mark:mixed-factory


class HostMix(nn.Module):
    def forward(self, x):
        h = x.cpu()  # mark:hostmix-cpu
        return x + h  # mark:hostmix-add


class ExplicitCpu(nn.Module):
    def forward(self, x):
        y = x.to(torch.device("cpu"))  # mark:explicit
        return y * 2


class Buffer(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("table", torch.randn(8, 8))

    def forward(self, x):
        return x @ self.table.to(x.device)  # a no-op: the buffer is on the device with the model


class Offload(nn.Module):
    """An embedding table kept on the host: the ids go there, the rows come back."""

    def __init__(self):
        super().__init__()
        self.table = nn.Embedding(100, 16)
        self.proj = nn.Linear(16, 16)

    def forward(self, ids, x):
        rows = self.table(ids.cpu()).to(x.device)  # mark:offload
        return self.proj(rows + x).relu()


class HostMetric(nn.Module):
    """A running metric kept in a host buffer, updated from the device's output."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 4)
        self.register_buffer("seen", torch.zeros(4))

    def forward(self, x):
        y = self.lin(x)
        self.seen += y.detach().cpu().softmax(-1).sum(0)  # mark:metric
        return y


def _lint(model, inputs, **kw):
    kw.setdefault("probe", False)
    kw.setdefault("config", False)
    return fxlint.lint(model, inputs, **kw)


def _rows(report):
    return sorted((f.code, f.line, f.bytes, f.severity.value) for f in report.findings)


X = torch.randn(4, 8, generator=torch.Generator().manual_seed(0))


def test_without_a_device_nothing_changes():
    """Today's behaviour on the inputs' own device: no transfer, no factory move, no inference sync."""
    for model in (Normalise(), RoundTrip(), Positions(), Mixed(), Offload().eval(), HostMetric().eval()):
        inputs = (torch.randint(0, 100, (4,)), torch.randn(4, 16)) if isinstance(model, Offload) else (X,)
        report = _lint(model.eval(), inputs)
        assert not {"FXL106", "FXL107", "FXL304"} & report.codes(), str(report)
        assert "device" not in report.extras


def test_inference_item_is_a_host_sync_on_the_device():
    report = _lint(Normalise().eval(), (X,), device="cuda")
    [f] = report.by_code("FXL304")
    assert f.line == L("mark:item") and f.severity.value == "warning"
    assert f.details["device"] == "cuda:0" and f.details["sync"] == "item"
    assert "host waits" in f.message and "cuda:0" in f.message
    assert report.extras["device"]["device"] == "cuda:0"


@pytest.mark.parametrize("sign", [1, -1], ids=["branch taken", "branch not taken"])
def test_control_flow_and_print_are_host_syncs(sign):
    x = sign * X.abs()  # not taken: no op between the two breaks, so no graph ends at `print`
    report = _lint(Branches().eval(), (x,), device="cuda")
    got = sorted((f.line, f.details["sync"]) for f in report.by_code("FXL304"))
    assert got == [(L("mark:if"), "bool"), (L("mark:print"), "print")]


def test_cpu_round_trip_is_one_transfer_with_its_sync_then_the_move_back():
    report = _lint(RoundTrip().eval(), (X,), device="cuda")
    [out] = report.by_code("FXL106")
    assert (out.line, out.bytes) == (L("mark:cpu"), 4 * 8 * 4)
    assert out.details["src_device"] == "cuda:0" and out.details["dst_device"] == "cpu"
    assert out.details["host_waits"] and "host sync" in out.message
    [back] = report.by_code("FXL107")  # the numpy data comes back as a fresh host tensor
    assert (back.line, back.bytes) == (L("mark:back"), 4 * 8 * 4)
    assert not report.by_code("FXL304")  # the .cpu() is the sync: reported once, by FXL106


def test_factory_moved_with_non_blocking_from_pageable_memory():
    report = _lint(Positions().eval(), (X,), device="cuda")
    [f] = report.findings
    assert (f.code, f.line, f.bytes) == ("FXL107", L("mark:arange"), 8 * 8)
    assert f.details["non_blocking_unpinned"] and "not pinned" in f.message
    assert "device=x.device" in f.fix


def test_built_on_the_device_is_quiet():
    assert _lint(OnDevice().eval(), (X,), device="cuda").findings == []
    assert _lint(Buffer().eval(), (torch.randn(2, 8),), device="cuda").findings == []


def test_a_factory_mixed_into_a_device_op_is_the_error_the_gpu_raises():
    report = _lint(Mixed().eval(), (X,), device="cuda")
    [f] = report.findings
    assert (f.code, f.line, f.severity.value) == ("FXL107", L("mark:mixed-factory"), "error")
    assert f.details["raises"] and "raises" in f.message
    assert report.extras["device"]["mismatches"]


def test_a_host_tensor_mixed_into_a_device_op_raises_too():
    report = _lint(HostMix().eval(), (X,), device="cuda")
    rows = _rows(report)
    assert ("FXL106", L("mark:hostmix-cpu"), 128, "warning") in rows
    [err] = [f for f in report.by_code("FXL106") if f.severity.value == "error"]
    assert err.line == L("mark:hostmix-add") and err.details["raises"]


def test_a_device_written_in_the_source_stays_the_cpu():
    [f] = _lint(ExplicitCpu().eval(), (X,), device="cuda").by_code("FXL106")
    assert f.line == L("mark:explicit") and f.details["dst_device"] == "cpu"


def test_offloaded_embedding_reports_the_boundary_once_each_way():
    model = Offload()
    ids, x = torch.randint(0, 100, (4,)), torch.randn(4, 16)
    report = _lint(model, (ids, x), device="cuda")
    assert report.extras["device"]["host_parameters"] == ["table.weight"]
    assert report.codes() == {"FXL106"}, str(report)  # no cascade after the boundary
    got = sorted((f.line, f.details["src_device"], f.details["dst_device"], f.bytes, f.backward_bytes)
                 for f in report.findings)
    line = L("mark:offload")
    assert got == [(line, "cpu", "cuda:0", 4 * 16 * 4, 4 * 16 * 4),  # the rows, and their gradient back
                   (line, "cuda:0", "cpu", 4 * 8, 0)]  # the ids


def test_host_side_metric_reports_the_copy_to_the_host_only():
    report = _lint(HostMetric().eval(), (X,), device="cuda")
    assert report.extras["device"]["host_parameters"] == ["seen"]
    [f] = report.findings
    assert (f.code, f.line, f.bytes) == ("FXL106", L("mark:metric"), 4 * 4 * 4)
    assert f.details["host_waits"]


def test_training_sync_that_cuts_a_gradient_is_one_finding_saying_both():
    mod = importlib.import_module("models.item_loss")
    model, inputs = mod.make()
    report = _lint(model, inputs, device="cuda")
    [f] = report.by_code("FXL304")
    assert f.severity.value == "error" and "never receive" in f.message and "host waits" in f.message
    assert f.details["device"] == "cuda:0"


def test_every_op_tells_where_it_lives():
    from fxlint.capture.graphs import capture
    from fxlint.analysis.device import simulate

    captured = capture(Offload(), (torch.randint(0, 100, (4,)), torch.randn(4, 16)))
    sim = simulate(captured, "cuda")
    devices = {n.name: str(n.tensor.device) for v in captured.views for n in v.nodes if n.tensor is not None}
    assert sim.host_parameters == ["table.weight"]
    assert devices["l_ids_"] == "cuda:0" and devices["l_x_"] == "cuda:0"
    assert any(name.endswith("table_parameters_weight_") and d == "cpu" for name, d in devices.items())
    assert any(name.endswith("proj_parameters_weight_") and d == "cuda:0" for name, d in devices.items())
    assert devices["embedding"] == "cpu"


def test_values_crossing_a_graph_break_keep_their_device():
    class Across(nn.Module):
        def forward(self, x):
            h = x.cpu()
            s = x.sum().item()
            return x + h.sum() + s  # h is a 0-dim-free host tensor: summed on the host, 0-dim mixes freely

    from fxlint.capture.graphs import capture
    from fxlint.analysis.device import simulate

    captured = capture(Across().eval(), (X,))
    simulate(captured, "cuda")
    assert len(captured.views) == 2
    h = next(n for n in captured.views[1].nodes if n.op == "placeholder" and n.name == "l_h_")
    assert str(h.tensor.device) == "cpu"


def test_dynamic_batch_keeps_working():
    model, x = Positions().eval(), torch.randn(4, 8)
    torch._dynamo.maybe_mark_dynamic(x, 0)
    torch._dynamo.reset()
    [f] = _lint(model, (x,), device="cuda").findings
    assert f.code == "FXL107" and f.bytes == 64


# --------------------------------------------------------------------------- configuration, API, CLI


@pytest.mark.parametrize("bad", ["gpu", "cuda:x", "", 3, "tpu"])
def test_bad_devices_are_config_errors(bad):
    with pytest.raises(ConfigError, match="device"):
        _lint(Normalise(), (X,), device=bad)


def test_config_file_device_key(tmp_path):
    from fxlint.project.config import load_file, resolve

    good = tmp_path / "pyproject.toml"
    good.write_text('[tool.fxlint]\ndevice = "cuda"\n')
    assert load_file(good).device == "cuda"
    report = _lint(Normalise().eval(), (X,), config=str(good))
    assert report.by_code("FXL304") and report.extras["device"]["device"] == "cuda:0"
    assert resolve(config=str(good), device="cpu").device == "cpu"  # an explicit argument wins
    bad = tmp_path / "bad" / "pyproject.toml"
    bad.parent.mkdir()
    bad.write_text('[tool.fxlint]\ndevice = "gpu0"\n')
    with pytest.raises(ConfigError, match=r"device.*cuda"):
        load_file(bad)


def test_audit_cross_check_leaves_simulated_copies_not_run():
    report = _lint(Positions().eval(), (X,), device="cuda", confirm=True)
    [f] = report.findings
    assert f.status == "not-run" and f.time_ns is None


def test_report_takes_a_device(tmp_path):
    html = fxlint.report(Positions().eval(), (X,), tmp_path / "r.html", device="cuda", rewrites=False)
    assert "FXL107" in html


def test_cli_device_flag_and_bad_value(write_module, capsys):
    from fxlint.cli.app import main

    path = write_module(textwrap.dedent('''
        import torch, torch.nn as nn
        class Pos(nn.Module):
            def forward(self, x):
                return x + torch.arange(x.shape[1]).to(x.device)
        def make():
            return Pos(), (torch.randn(2, 8),)
    '''))
    assert main(["lint", f"{path}:make", "--format", "json", "--no-probe", "--no-config"]) == 0
    capsys.readouterr()
    assert main(["lint", f"{path}:make", "--device", "cuda", "--format", "json", "--no-probe", "--no-config"]) == 1
    out, err = capsys.readouterr()
    [f] = json.loads(out)["findings"]
    assert f["code"] == "FXL107" and f["details"]["target_device"] == "cuda:0"
    assert "linted for cuda:0, simulated" in err
    bad = run_cli("lint", f"{path}:make", "--device", "gpu")  # a usage error: exit 2, one line naming the flag
    assert bad.returncode == 2 and "--device" in bad.stderr


def test_zoo_honours_declared_devices(capsys, tmp_path):
    import shutil

    from fxlint.cli.app import main
    from fxlint.cli.commands._common import declared_device

    assert declared_device(str(ROOT / "models" / "ocr_positional_encoding.py")) == "cuda"
    assert declared_device(str(ROOT / "models" / "clean_mlp.py")) is None
    for name in ("ocr_positional_encoding", "clean_mlp"):  # two of the zoo: `make demo` runs them all
        shutil.copy(ROOT / "models" / f"{name}.py", tmp_path)
    code = main(["lint", "--zoo", str(tmp_path), "--fail-on", "never", "--no-probe"])
    out = capsys.readouterr().out
    assert code == 0
    assert "== ocr_positional_encoding (--device cuda:0, simulated) ==" in out
    assert "== clean_mlp ==" in out and "FXL107" in out


# --------------------------------------------------------------------------- the GPU-story models


#: model -> sorted (line marker, kind, bytes per call): what the GPU run must show (bench/gpu_check.py)
GPU_STORIES = {
    "ocr_positional_encoding": [("built on the host, copied every forward", "HtoD", 64 * 8)],
    "host_offload": [("the boundary: out and back", "DtoH", 64 * 8), ("the boundary: out and back", "HtoD",
                                                                       64 * 32 * 4),
                     ("the metric, on the host", "DtoH", 64 * 4)],
    "inference_sync": [("a host sync per request", "sync", None), ("Python control flow", "sync", None)],
    "item_loss": [("the bug: the aux term", "sync", None)],
}


def _gpu_check():
    import importlib.util

    spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "bench" / "gpu_check.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_gpu_story_models_predictions():
    """The predictions `bench/gpu_check.py predict` writes, per model and line, from the simulation."""
    gc = _gpu_check()
    assert sorted(gc.gpu_story_models()) == sorted(GPU_STORIES)
    preds = gc.predict(sorted(GPU_STORIES))
    for name, want in GPU_STORIES.items():
        path = ROOT / "models" / f"{name}.py"
        got = sorted((p["line"], p["kind"], p["bytes"]) for p in preds["models"][name]["predictions"])
        assert got == sorted((line_of(path, m), k, b) for m, k, b in want), name
    offload = {(p["kind"], p["backward"]) for p in preds["models"]["host_offload"]["predictions"]}
    assert ("HtoD", 64 * 32 * 4) in offload  # the rows' gradient goes back in backward


def _trace(model_file: str) -> dict:
    """A Chrome trace as torch.profiler writes it (CPU + CUDA, with_stack): the forward at line 45
    copies 512 B host-to-device and waits; line 50 reads a scalar back; library frames around them."""
    tid, pid = 7, 1
    ev = [
        {"ph": "X", "cat": "python_function", "name": f"{model_file}(44): forward", "ts": 100, "dur": 400,
         "pid": pid, "tid": tid},
        {"ph": "X", "cat": "python_function", "name": f"{model_file}(45): forward", "ts": 110, "dur": 100,
         "pid": pid, "tid": tid},
        {"ph": "X", "cat": "python_function", "name": "torch/nn/modules/module.py(1750): _call_impl", "ts": 120,
         "dur": 50, "pid": pid, "tid": tid},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "ts": 130, "dur": 5, "pid": pid,
         "tid": tid, "args": {"correlation": 11}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "ts": 140, "dur": 5, "pid": pid,
         "tid": tid, "args": {"correlation": 12}},
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "ts": 131, "dur": 2,
         "pid": 0, "tid": 3, "args": {"correlation": 11, "bytes": 512}},
        {"ph": "X", "cat": "python_function", "name": f"{model_file}(50): forward", "ts": 300, "dur": 100,
         "pid": pid, "tid": tid},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "ts": 310, "dur": 5, "pid": pid,
         "tid": tid, "args": {"correlation": 21}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "ts": 320, "dur": 5, "pid": pid,
         "tid": tid, "args": {"correlation": 22}},
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pageable)", "ts": 311, "dur": 2,
         "pid": 0, "tid": 3, "args": {"correlation": 21, "bytes": 4}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "ts": 600, "dur": 5, "pid": pid,
         "tid": tid, "args": {"correlation": 31}},  # outside the model's frames (warm-up, library)
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "ts": 601, "dur": 2,
         "pid": 0, "tid": 3, "args": {"correlation": 31, "bytes": 99}},
    ]
    return {"traceEvents": ev}


def test_verify_reads_a_profiler_trace_and_compares_line_by_line(tmp_path):
    gc = _gpu_check()
    model_file = str(tmp_path / "m.py")
    events = gc.events_from_trace(_trace(model_file), model_file)
    assert sorted((e["kind"], e["bytes"], e["line"]) for e in events if e["kind"] != "sync") == \
        [("DtoH", 4, 50), ("HtoD", 99, None), ("HtoD", 512, 45)]
    assert sorted(e["line"] for e in events if e["kind"] == "sync") == [45, 50]
    good = [{"line": 45, "kind": "HtoD", "bytes": 512}, {"line": 50, "kind": "sync", "bytes": None}]
    assert [r["status"] for r in gc.compare(good, events)] == ["ok", "ok"]
    wrong = [{"line": 45, "kind": "HtoD", "bytes": 256}, {"line": 50, "kind": "sync", "bytes": None}]
    assert [r["status"] for r in gc.compare(wrong, events)] == ["wrong-bytes", "ok"]
    missing = [{"line": 45, "kind": "HtoD", "bytes": 512}]  # the sync at line 50 was not predicted
    assert [r["status"] for r in gc.compare(missing, events)] == ["ok", "unpredicted"]
    extra = good + [{"line": 47, "kind": "DtoH", "bytes": 8}]
    assert [r["status"] for r in gc.compare(extra, events)] == ["ok", "missed", "ok"]
    raises = [{"line": 45, "kind": "raises", "bytes": None}]
    assert gc.compare(raises, [], "Expected all tensors to be on the same device")[0]["status"] == "ok"
    assert gc.compare(raises, [], None)[0]["status"] == "missed"
    back = gc.compare_backward([{"line": 45, "kind": "HtoD", "bytes": 512, "backward": 512}],
                               [{"kind": "DtoH", "bytes": 512}])
    assert back["status"] == "ok"
    assert gc.compare_backward([{"line": 45, "kind": "HtoD", "bytes": 512, "backward": 512}], [])["status"] == \
        "mismatch"


def test_verify_skips_with_a_reason_without_cuda(tmp_path, capsys):
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: the verify step really runs (bench/gpu_check.py)")
    gc = _gpu_check()
    preds = tmp_path / "p.json"
    preds.write_text(json.dumps({"schema": gc.SCHEMA, "device": "cuda", "models": {}}))
    out = tmp_path / "check.json"
    assert gc.main(["verify", str(preds), "-o", str(out)]) == 0
    assert "skipped: no CUDA device" in capsys.readouterr().out
    assert "no CUDA device" in json.loads(out.read_text())["skipped"]
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert gc.main(["verify", str(bad)]) == 2


def test_verify_path_does_not_import_fxlint():
    """The GPU machine has another torch (2.11) and no fxlint: `verify` must not need it."""
    import subprocess
    import sys

    code = ("import sys, importlib.util; sys.modules['fxlint'] = None\n"
            f"spec = importlib.util.spec_from_file_location('g', r'{ROOT / 'bench' / 'gpu_check.py'}')\n"
            "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
            "print(m.skip_reason() or 'cuda')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_an_exported_program_warns_that_its_no_op_conversions_are_gone():
    ep = torch.export.export(Positions(), (X,))
    with pytest.warns(fxlint.FxlintWarning, match="torch.export drops"):
        report = _lint(ep, None, device="cuda")
    assert report.extras["device"]["device"] == "cuda:0"


def test_a_graph_the_simulation_cannot_handle_is_analysed_as_captured(monkeypatch):
    import fxlint.analysis.device as device

    def broken(*a, **k):
        raise RuntimeError("boom")

    monkeypatch.setattr(device, "_propagate", broken)
    with pytest.warns(fxlint.FxlintWarning, match="device simulation failed on graph 0"):
        report = _lint(Positions().eval(), (X,), device="cuda")
    assert report.findings == [] and report.extras["device"]["errors"] == ["graph 0: RuntimeError: boom"]


# --------------------------------------------------------------------------- the --device cuda hint


def test_cpu_lint_hints_at_device_cuda_once_when_a_factory_has_no_device(monkeypatch, capsys):
    """On a CPU-only machine a factory without device= that meets the model's tensors is free (FXL107 is
    quiet); the text report says once that --device cuda lints it for the GPU. Not with --device, not for a
    model without such a factory; --zoo says it once, after the last model."""
    from fxlint.cli import main

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("COLUMNS", "200")
    main(["lint", "models/masked_loss.py:make", "--fail-on", "never"])
    out = capsys.readouterr().out
    assert out.count("hint: ") == 1 and "FXL107 " not in out
    hint = out.split("hint: ", 1)[1]
    assert hint.startswith("1 tensor factory without `device=` (`torch.arange` at models/masked_loss.py:32) meets")
    assert "`--device cuda`" in hint and "docs/device.md" in hint
    main(["lint", "models/masked_loss.py:make", "--device", "cuda", "--fail-on", "never"])
    out = capsys.readouterr().out
    assert "hint: " not in out and "FXL107 error" in out  # what the hint promised
    main(["lint", "models/repeat_vs_expand.py:make", "--fail-on", "never"])
    assert "hint: " not in capsys.readouterr().out
    main(["lint", "--zoo", "models", "--fail-on", "never"])
    out = capsys.readouterr().out
    assert out.count("hint: ") == 1  # after the last model, before the totals (still the last line)
    assert re.search(r"lints for the GPU, without one \(docs/device\.md\)\.\n\n\d+ models, ", out)
    assert "`torch.arange` at models/masked_loss.py:32" in out.split("hint: ")[1]


def test_device_hint_in_the_report_extras(monkeypatch):
    from tests.conftest import load_model

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    path = ROOT / "models" / "frame_subsampling.py"
    model, x = load_model(path)
    report = fxlint.lint(model, x)
    assert report.extras["device_hint"]["factories"] == [{"kind": "arange", "file": str(path), "line": 31}]
    assert "device_hint" not in fxlint.lint(model, x, device="cuda").extras
