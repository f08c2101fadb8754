"""Check fxlint's device predictions (``--device cuda``) against a real GPU, line by line.

Two steps, so the GPU machine needs nothing but torch and CUDA (any torch 2.x with CUDA; it
never imports fxlint, which needs torch 2.13):

    # 1. on the CPU machine (needs fxlint): lint the GPU-story models for CUDA, write predictions
    .venv/bin/python bench/gpu_check.py predict -o out/gpu_predictions.json

    # 2. on the GPU machine (needs torch + CUDA and this repository's models/): run them, compare
    python bench/gpu_check.py verify out/gpu_predictions.json -o out/gpu_check.json

    # both at once, on a machine with fxlint and a GPU
    .venv/bin/python bench/gpu_check.py all -o out/gpu_check.json

    # the compiled program on the GPU (needs fxlint, torch >= 2.13 with CUDA and Triton)
    python bench/gpu_check.py compiled -o out/gpu_compiled.json

The GPU-story models are the files in ``models/`` that declare ``DEVICE = "cuda"``. ``predict``
builds each with ``make(device="cpu")`` and lints it with ``fxlint.lint(..., device="cuda")``
(the fake-tensor simulation, docs/device.md); every FXL106/FXL107 finding becomes a predicted
transfer (direction and bytes per call, its line), every FXL304 finding with a device a
predicted host sync, and a finding that says the GPU raises a predicted error.

``verify`` builds each model with ``make(device="cuda")``, runs it once to warm up, then runs one
forward under ``torch.profiler`` (CPU and CUDA activities, Python stacks) and reads the trace:
``Memcpy HtoD``/``Memcpy DtoH`` events (bytes from the trace), and the host waits
(``cudaStreamSynchronize``, ``cudaDeviceSynchronize``, ``cudaMemcpy``, ``cudaEventSynchronize``),
each attributed to the model file's innermost Python frame enclosing its CUDA runtime call. A
training model (``model.training``) also runs ``backward()`` in a second profile, compared by
totals (backward has no Python line): the predicted backward bytes against the measured copies.
The comparison is per line: every predicted transfer must be measured there (same direction,
same bytes), every predicted sync must find a host wait there, and a copy or wait measured on a
model line nothing predicted is a mismatch too. A copy measured on a predicted sync line (the
scalar ``.item()`` reads back) and a wait on a predicted transfer line (a pageable copy waits)
are part of that prediction. It prints a table, writes the JSON, and exits 1 on any mismatch.
Without CUDA it prints why and exits 0 (skipped). One pass takes seconds on a GPU.

``compiled`` checks fxlint's reading of Inductor's lowering where Inductor writes Triton, not C++:
for the issue's example (a permuted bmm operand, a reshape and a gather after a transpose) and every
model in ``models/`` (moved to the GPU, in ``eval()`` under ``no_grad``), it lints with
``compiled=True`` on the GPU and, for the same module, compiles it with plain Inductor, reads the
Triton kernels of the output code and profiles one call. It checks that the lowering was read (a
verdict of ``unknown`` for a whole graph, with the reason, fails), that every kernel the profiled
call runs whose name is made of copy ops alone (Inductor names a kernel after the ops lowered into
it) is one of the copies fxlint accounts for (a surviving finding, an FXL7xx finding or a listed
"copy no finding explains") and that fxlint accounts for no more copy kernels than the program
runs, and it shows where the GPU's verdicts differ from the CPU's for the same module (convolution
layouts do: Inductor's layout optimisation has other rules there). It exits 1 on any of those.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterable

ROOT = Path(__file__).resolve().parents[1]
MODELS_DIR = ROOT / "models"
SCHEMA = 1

#: CUDA runtime calls where the host waits for the device
SYNC_CALLS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy")
_PY_FRAME = re.compile(r"^(?P<file>.*?\.py)\((?P<line>\d+)\): (?P<func>.*)$")


# --------------------------------------------------------------------------- models


def gpu_story_models(folder: Path = MODELS_DIR) -> list[str]:
    """The model files that declare ``DEVICE = "cuda"`` (their stem), read without importing them."""
    import ast

    out = []
    for path in sorted(folder.glob("*.py")):
        if path.name.startswith("_"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "DEVICE"
                                                    for t in node.targets) \
                    and isinstance(node.value, ast.Constant) and str(node.value.value).startswith("cuda"):
                out.append(path.stem)
    return out


def _load(name: str) -> Any:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    return importlib.import_module(f"models.{name}")


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


# --------------------------------------------------------------------------- predict (needs fxlint)


def predictions_from_report(report: Any, model_file: str) -> list[dict[str, Any]]:
    """The device predictions of one ``fxlint.Report`` linted with ``device=...``, on ``model_file``."""
    out: list[dict[str, Any]] = []
    for f in report.findings:
        if f.file is None or os.path.abspath(f.file) != os.path.abspath(model_file) or f.line is None:
            continue
        d = dict(f.details or {})
        if f.code in ("FXL106", "FXL107"):
            if d.get("raises"):
                out.append({"line": f.line, "code": f.code, "kind": "raises", "bytes": None, "backward": 0})
                continue
            if f.code == "FXL106":
                src, dst, nbytes = d.get("src_device", "cpu"), d.get("dst_device", "cpu"), d.get("copied")
            else:
                src, dst, nbytes = "cpu", d.get("target_device", "cuda"), d.get("moved")
            kind = "DtoH" if str(dst).startswith("cpu") else ("HtoD" if str(src).startswith("cpu") else "DtoD")
            backward = d.get("backward_copied") if f.code == "FXL106" else 0
            out.append({"line": f.line, "code": f.code, "kind": kind, "bytes": nbytes,
                        "backward": backward if isinstance(backward, int) else 0})
        elif f.code == "FXL304" and d.get("device"):
            out.append({"line": f.line, "code": f.code, "kind": "sync", "bytes": None, "backward": 0})
    return sorted(out, key=lambda p: (p["line"], p["kind"]))


def predict(names: Iterable[str], device: str = "cuda") -> dict[str, Any]:
    import fxlint
    import torch

    models: dict[str, Any] = {}
    for name in names:
        mod = _load(name)
        model, inputs = mod.make(device="cpu")
        report = fxlint.lint(model, inputs, device=device, config=False, probe=False)
        path = Path(mod.__file__)
        preds = predictions_from_report(report, str(path))
        text = _lines(path)
        for p in preds:
            p["source"] = text[p["line"] - 1].strip() if 0 < p["line"] <= len(text) else None
        models[name] = {
            "file": str(path.relative_to(ROOT)),
            "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            "training": bool(model.training),
            "predictions": preds,
            "simulation": report.extras.get("device"),
        }
    return {"schema": SCHEMA, "device": device, "torch": torch.__version__, "fxlint": fxlint.__version__,
            "models": models}


# --------------------------------------------------------------------------- verify (torch + CUDA only)


def events_from_trace(trace: dict[str, Any], model_file: str) -> list[dict[str, Any]]:
    """Copies and host waits of a Chrome trace (``prof.export_chrome_trace``), each with the line of
    ``model_file`` whose Python frame encloses its CUDA runtime call (None: no line of that file).

    Returns dicts ``{"kind": "HtoD"|"DtoH"|"DtoD"|"sync", "bytes": int|None, "line": int|None,
    "name": str}``."""
    events = [e for e in trace.get("traceEvents", []) if isinstance(e, dict) and e.get("ph") == "X"]
    target = os.path.realpath(model_file)
    frames: dict[tuple, list[tuple[float, float, int]]] = {}  # (pid, tid) -> (start, end, line) of model frames
    for e in events:
        if e.get("cat") != "python_function":
            continue
        m = _PY_FRAME.match(str(e.get("name", "")))
        if m is None or not _same_file(m["file"], target):
            continue
        frames.setdefault((e.get("pid"), e.get("tid")), []).append(
            (float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)), int(m["line"])))
    runtime: dict[Any, dict[str, Any]] = {}
    out: list[dict[str, Any]] = []
    for e in events:
        if e.get("cat") not in ("cuda_runtime", "cuda_driver"):
            continue
        corr = (e.get("args") or {}).get("correlation")
        if corr is not None:
            runtime[corr] = e
        if str(e.get("name", "")) in SYNC_CALLS:
            out.append({"kind": "sync", "bytes": None, "line": _line_at(frames, e), "name": e["name"]})
    for e in events:
        if e.get("cat") != "gpu_memcpy":
            continue
        name = str(e.get("name", ""))
        kind = "HtoD" if "HtoD" in name else "DtoH" if "DtoH" in name else "DtoD" if "DtoD" in name else None
        if kind is None:
            continue
        args = e.get("args") or {}
        call = runtime.get(args.get("correlation"))
        out.append({"kind": kind, "bytes": int(args["bytes"]) if "bytes" in args else None,
                    "line": _line_at(frames, call) if call is not None else None, "name": name})
    return out


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.realpath(a) == b or os.path.realpath(os.path.join(str(ROOT), a)) == b
    except (OSError, ValueError):
        return False


def _line_at(frames: dict[tuple, list[tuple[float, float, int]]], call: dict[str, Any]) -> int | None:
    """The line of the innermost model frame (latest start) on the call's thread enclosing it."""
    ts = float(call.get("ts", 0))
    for spans in (frames.get((call.get("pid"), call.get("tid")), ()),  # the call's own thread first
                  [s for key, ss in frames.items() for s in ss]):  # traces that put Python on another tid
        best = None
        for start, end, line in spans:
            if start <= ts <= end and (best is None or start >= best[0]):
                best = (start, line)
        if best is not None:
            return best[1]
    return None


def compare(predictions: list[dict[str, Any]], measured: list[dict[str, Any]],
            raised: str | None = None) -> list[dict[str, Any]]:
    """Line-by-line verdicts for one model's forward: one row per predicted line and per line with
    measured copies or waits; ``status`` is ``ok``, ``missed`` (predicted, not measured),
    ``unpredicted`` (measured, not predicted) or ``wrong-bytes``. ``raised``: the error the run
    raised, if any (a ``raises`` prediction expects it)."""
    by_line: dict[int | None, dict[str, list]] = {}
    for p in predictions:
        by_line.setdefault(p["line"], {"pred": [], "meas": []})["pred"].append(p)
    for m in measured:
        if m.get("line") is None:
            continue  # not on the model's lines (library internals, warm-up allocations)
        by_line.setdefault(m["line"], {"pred": [], "meas": []})["meas"].append(m)
    rows = []
    for line in sorted(by_line, key=lambda x: (x is None, x)):
        preds, meas = by_line[line]["pred"], by_line[line]["meas"]
        copies = [m for m in meas if m["kind"] != "sync"]
        waits = [m for m in meas if m["kind"] == "sync"]
        problems: list[str] = []
        remaining = list(copies)
        for p in preds:
            if p["kind"] == "raises":
                if raised is None or not re.search(r"same device|two devices|different devices", raised):
                    problems.append("missed: the GPU run did not raise a device mismatch")
                continue
            if p["kind"] == "sync":
                if not waits:
                    problems.append("missed: no host wait measured")
                continue
            match = next((m for m in remaining if m["kind"] == p["kind"]
                          and (p["bytes"] is None or m["bytes"] == p["bytes"])), None)
            if match is None:
                same_dir = [m for m in remaining if m["kind"] == p["kind"]]
                problems.append(f"wrong-bytes: {p['kind']} {p['bytes']} B predicted, measured "
                                f"{[m['bytes'] for m in same_dir]}" if same_dir
                                else f"missed: no {p['kind']} copy measured")
                continue
            remaining.remove(match)
        has_sync = any(p["kind"] == "sync" for p in preds)
        has_copy = any(p["kind"] in ("HtoD", "DtoH", "DtoD") for p in preds)
        # a predicted sync explains the scalar it reads back; a predicted copy explains its own wait
        extra = [m for m in remaining if not has_sync]
        if extra:
            problems.append("unpredicted: " + ", ".join(f"{m['kind']} {m['bytes']} B" for m in extra))
        if waits and not (has_sync or has_copy):
            problems.append(f"unpredicted: {len(waits)} host wait(s) ({waits[0]['name']})")
        status = "ok" if not problems else problems[0].split(":")[0]
        rows.append({"line": line, "predicted": [_short(p) for p in preds],
                     "measured": [_short(m) for m in meas], "status": status, "problems": problems,
                     "source": next((p.get("source") for p in preds if p.get("source")), None)})
    return rows


def compare_backward(predictions: list[dict[str, Any]], measured: list[dict[str, Any]]) -> dict[str, Any]:
    """Backward totals: the gradient of a forward move copies back the other way."""
    back = {"HtoD": "DtoH", "DtoH": "HtoD"}
    want: dict[str, int] = {}
    for p in predictions:
        if p.get("backward") and p["kind"] in back:
            want[back[p["kind"]]] = want.get(back[p["kind"]], 0) + int(p["backward"])
    got: dict[str, int] = {}
    for m in measured:
        if m["kind"] in back and m.get("bytes") is not None:
            got[m["kind"]] = got.get(m["kind"], 0) + int(m["bytes"])
    return {"predicted": want, "measured": got, "status": "ok" if want == got else "mismatch"}


def _short(e: dict[str, Any]) -> str:
    return e["kind"] + (f" {e['bytes']} B" if e.get("bytes") is not None else "")


def _profile(fn: Any) -> tuple[dict[str, Any], Any, str | None]:
    """Run ``fn`` under the profiler (CPU + CUDA, Python stacks); the Chrome trace, the result and
    the error it raised (as text)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    result, raised = None, None
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], with_stack=True) as prof:
        try:
            result = fn()
        except RuntimeError as exc:
            raised = str(exc)
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(path)
        with open(path, encoding="utf-8") as fh:
            trace = json.load(fh)
    return trace, result, raised


def verify(predictions: dict[str, Any]) -> dict[str, Any]:
    import torch

    results: dict[str, Any] = {}
    for name, entry in predictions["models"].items():
        mod = _load(name)
        path = Path(mod.__file__)
        stale = hashlib.sha256(path.read_bytes()).hexdigest() != entry.get("sha256")
        model, inputs = mod.make(device=predictions.get("device", "cuda"))

        def forward() -> Any:
            return model(*inputs)

        try:  # warm-up: CUDA context, cuBLAS handles, the caching allocator
            forward()
        except RuntimeError:
            pass
        torch.cuda.synchronize()
        trace, out, raised = _profile(forward)
        rows = compare(entry["predictions"], events_from_trace(trace, str(path)), raised)
        res: dict[str, Any] = {"file": entry["file"], "stale": stale, "rows": rows, "raised": raised}
        if entry.get("training") and isinstance(out, torch.Tensor) and out.requires_grad:
            def backward() -> None:
                model(*inputs).float().sum().backward()
            forward_trace, _, _ = _profile(forward)  # the copies of forward alone, to subtract
            full, _, _ = _profile(backward)
            fwd = _totals(events_from_trace(forward_trace, str(path)))
            both = _totals(events_from_trace(full, str(path)))
            measured = [{"kind": k, "bytes": both.get(k, 0) - fwd.get(k, 0)} for k in ("HtoD", "DtoH")
                        if both.get(k, 0) - fwd.get(k, 0)]
            res["backward"] = compare_backward(entry["predictions"], measured)
        res["ok"] = not stale and all(r["status"] == "ok" for r in rows) and \
            res.get("backward", {}).get("status", "ok") == "ok"
        results[name] = res
    return {"schema": SCHEMA, "torch": torch.__version__, "device": torch.cuda.get_device_name(0),
            "models": results, "ok": all(r["ok"] for r in results.values())}


def _totals(events: list[dict[str, Any]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for e in events:
        if e["kind"] != "sync" and e.get("bytes") is not None:
            out[e["kind"]] = out.get(e["kind"], 0) + int(e["bytes"])
    return out


def table(result: dict[str, Any]) -> str:
    lines = [f"{'model':<24} {'line':>4}  {'predicted':<28} {'measured':<34} status"]
    for name, res in result["models"].items():
        if res.get("stale"):
            lines.append(f"{name:<24} {'':>4}  the model file changed since `predict`: run predict again")
        for r in res["rows"]:
            lines.append(f"{name:<24} {str(r['line']):>4}  {', '.join(r['predicted']) or '-':<28} "
                         f"{', '.join(r['measured']) or '-':<34} {r['status']}"
                         + (f"  ({'; '.join(r['problems'])})" if r["problems"] else ""))
        if "backward" in res:
            b = res["backward"]
            lines.append(f"{name:<24} {'bwd':>4}  {json.dumps(b['predicted']):<28} {json.dumps(b['measured']):<34} "
                         f"{b['status']}")
    lines.append("all predictions hold" if result["ok"] else "MISMATCH: see the rows above")
    return "\n".join(lines)


def skip_reason() -> str | None:
    """Why ``verify`` cannot run here (None: it can)."""
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return (f"no CUDA device (torch {torch.__version__}, CUDA build: {torch.version.cuda or 'no'}); "
                "the device predictions are checked against the simulation by tests/test_device.py")
    return None


# --------------------------------------------------------------------------- the compiled program

#: aten ops that only move data, as Inductor names a kernel after them (fxlint.compiled.lowering.COPY_OPS
#: with the extern ops a layout conversion for them is named after)
_CONVERSION_FOR = ("convolution", "bmm", "mm", "addmm", "_scaled_dot_product")


def _example() -> tuple[Any, tuple[Any, ...]]:
    """The issue's example: eager copies in three places, Inductor one (the bmm operand)."""
    import torch
    import torch.nn as nn

    class Example(nn.Module):
        def forward(self, a, b, x):
            y = torch.matmul(a.permute(0, 2, 1, 3), b)
            z = x.t().reshape(-1) * 2
            w = x[:, [0, 2, 4, 6]] + 1
            return y, z, w

    return Example(), (torch.randn(4, 32, 6, 16), torch.randn(4, 6, 16, 32), torch.randn(16, 16))


def _compiled_cases(names: Iterable[str] | None) -> dict[str, Any]:
    cases: dict[str, Any] = {"issue_example": _example}
    for path in sorted(MODELS_DIR.glob("*.py")):
        if path.name.startswith("_") or (names is not None and path.stem not in names):
            continue
        cases[path.stem] = lambda stem=path.stem: _load(stem).make()
    return cases


def _to(x: Any, device: str) -> Any:
    import torch

    if isinstance(x, torch.Tensor) or isinstance(x, torch.nn.Module):
        return x.to(device)
    if isinstance(x, (tuple, list)):
        return type(x)(_to(v, device) for v in x)
    if isinstance(x, dict):
        return {k: _to(v, device) for k, v in x.items()}
    return x


def _verdicts(model: Any, inputs: Any, device: str) -> dict[str, Any]:
    """``lint(compiled=True)`` of the module on ``device``: the verdicts by line, the copies it accounts for."""
    import torch

    import fxlint

    model, inputs = _to(model, device), _to(inputs, device)
    with torch.no_grad():
        report = fxlint.lint(model.eval(), inputs if isinstance(inputs, (tuple, dict)) else (inputs,),
                             compiled=True, config=False)
    graphs = report.extras.get("compiled", {})
    unknown = {g: d["why_unknown"] for g, d in graphs.items() if isinstance(d, dict) and d.get("why_unknown")}
    surviving = [f for f in report.findings if f.compiled == "survives"]
    listed = sum(len(d.get("unexplained", ())) for d in graphs.values() if isinstance(d, dict))
    return {"unknown_graphs": unknown,
            "verdicts": sorted(f"{f.code} {f.line}: {f.compiled}" for f in report.findings if f.compiled),
            # a loop's finding stands for each iteration's copy
            "copies": sum(f.repeats for f in surviving) + listed,
            "findings": [f"{f.code} {f.line} {f.compiled_bytes}" for f in surviving]}


def _copy_kernels(model: Any, inputs: Any, device: str = "cuda") -> list[str]:
    """The kernels one profiled call of plain ``torch.compile`` runs whose names are copy ops alone (Triton
    kernels on the GPU; C++ kernels, profiled with ``cpp.enable_kernel_profile``, on the CPU)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from fxlint.compiled.lowering import COPY_OPS

    torch._dynamo.reset()
    args = inputs if isinstance(inputs, tuple) else (inputs,)
    activity = ProfilerActivity.CUDA if device == "cuda" else ProfilerActivity.CPU
    with torch.no_grad(), torch._inductor.config.patch({"cpp.enable_kernel_profile": True}):
        compiled = torch.compile(model.eval())
        compiled(*args)
        compiled(*args)
        if device == "cuda":
            torch.cuda.synchronize()
        with profile(activities=[activity]) as prof:
            compiled(*args)
            if device == "cuda":
                torch.cuda.synchronize()
    torch._dynamo.reset()
    out = []
    for e in prof.events():
        m = re.search(r"(?:triton_\w+?|cpp)_fused_(.+?)_\d+$", e.name)
        words = set(re.findall(r"[a-z]+", m.group(1))) if m is not None else set()
        if words and all(any(w in op for op in COPY_OPS) or any(w in c for c in _CONVERSION_FOR) for w in words):
            out.append(e.name)
    return out


def compiled_check(names: Iterable[str] | None = None, device: str = "cuda") -> dict[str, Any]:
    """The ``compiled`` step (``device="cpu"`` runs the same comparison on this machine's C++ kernels)."""
    import torch

    results: dict[str, Any] = {}
    for name, build in _compiled_cases(names).items():
        res: dict[str, Any] = {}
        try:
            res["gpu"] = _verdicts(*build(), device)
            res["cpu"] = _verdicts(*build(), "cpu") if device != "cpu" else res["gpu"]
            res["copy_kernels"] = _copy_kernels(*_to(build(), device), device=device)
        except Exception as exc:  # noqa: BLE001 - one model's failure is that model's row
            res.update(error=f"{type(exc).__name__}: {exc}", ok=False)
            results[name] = res
            continue
        read, ran = res["gpu"]["copies"], len(res["copy_kernels"])
        res["differs_from_cpu"] = sorted(set(res["gpu"]["verdicts"]) ^ set(res["cpu"]["verdicts"]))
        # every copy kernel the program runs is a copy fxlint reads (one kernel may write several of them),
        # and fxlint reads no copy where the program runs none
        res["ok"] = not res["gpu"]["unknown_graphs"] and ran <= read and (ran > 0 or read == 0)
        results[name] = res
    where = torch.cuda.get_device_name(0) if device == "cuda" else "cpu"
    return {"schema": SCHEMA, "torch": torch.__version__, "device": where, "models": results,
            "ok": all(r["ok"] for r in results.values())}


def compiled_table(result: dict[str, Any]) -> str:
    lines = [f"{'model':<28} {'copies fxlint reads':>19} {'copy kernels run':>16}  status"]
    for name, res in result["models"].items():
        if "error" in res:
            lines.append(f"{name:<28} {'':>19} {'':>16}  ERROR {res['error']}")
            continue
        gpu = res["gpu"]
        status = "ok" if res["ok"] else "MISMATCH"
        extra = f"  not read: {gpu['unknown_graphs']}" if gpu["unknown_graphs"] else ""
        lines.append(f"{name:<28} {gpu['copies']:>19} {len(res['copy_kernels']):>16}  {status}{extra}")
        for d in res["differs_from_cpu"]:
            lines.append(f"{'':<28} GPU vs CPU: {d}")
    lines.append("the compiled program's copies are read on the device" if result["ok"]
                 else "MISMATCH: see the rows above")
    return "\n".join(lines)


def _write(obj: dict[str, Any], path: str | None) -> None:
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(obj, indent=2, default=str) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("predict", help="lint the GPU-story models for the device (needs fxlint), write JSON")
    p.add_argument("-o", "--output", default="out/gpu_predictions.json")
    p.add_argument("--models", help="comma-separated model names (default: the files declaring DEVICE)")
    v = sub.add_parser("verify", help="run the models on the GPU under the profiler and compare (torch + CUDA)")
    v.add_argument("predictions")
    v.add_argument("-o", "--output", default="out/gpu_check.json")
    a = sub.add_parser("all", help="predict and verify in one process (needs fxlint and a GPU)")
    a.add_argument("-o", "--output", default="out/gpu_check.json")
    a.add_argument("--models")
    c = sub.add_parser("compiled", help="read Inductor's Triton lowering on the GPU and check it against the "
                                        "profiled program (needs fxlint, CUDA and Triton)")
    c.add_argument("-o", "--output", default="out/gpu_compiled.json")
    c.add_argument("--models", help="comma-separated models/ names (default: all, and the issue's example)")
    c.add_argument("--device", default="cuda", choices=("cuda", "cpu"),
                   help="cpu: the same comparison on this machine's C++ kernels (a dry run of the step)")
    args = parser.parse_args(argv)

    if args.cmd == "compiled":
        reason = skip_reason() if args.device == "cuda" else None
        if reason is not None:
            print(f"gpu_check: skipped: {reason}")
            _write({"schema": SCHEMA, "skipped": reason}, args.output)
            return 0
        result = compiled_check(args.models.split(",") if args.models else None, device=args.device)
        print(compiled_table(result))
        _write(result, args.output)
        return 0 if result["ok"] else 1

    if args.cmd in ("predict", "all"):
        names = args.models.split(",") if args.models else gpu_story_models()
        preds = predict(names)
        if args.cmd == "predict":
            _write(preds, args.output)
            n = sum(len(m["predictions"]) for m in preds["models"].values())
            print(f"gpu_check: {n} predictions for {len(names)} models written to {args.output}")
            return 0
    else:
        try:
            preds = json.loads(Path(args.predictions).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            print(f"gpu_check: cannot read {args.predictions}: {exc}", file=sys.stderr)
            return 2
        if preds.get("schema") != SCHEMA:
            print(f"gpu_check: {args.predictions} is not a predictions file of schema {SCHEMA}", file=sys.stderr)
            return 2
    reason = skip_reason()
    if reason is not None:
        print(f"gpu_check: skipped: {reason}")
        _write({"schema": SCHEMA, "skipped": reason}, args.output)
        return 0
    result = verify(preds)
    print(table(result))
    _write(result, args.output)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
