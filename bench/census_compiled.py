"""The compiled-program census: on the real-zoo census models (``census_models.REGISTRY``), how much the
program ``torch.compile`` (Inductor, CPU) builds really copies, how much of it sits on a line where fxlint
has a finding, and how often fxlint's ``survives`` verdicts are right.

Per model and mode, two independent runs:

* ``fxlint.lint(model, inputs, compiled=True)``: the findings, each copy finding with its verdict read from
  Inductor's lowering (``Finding.compiled``: survives with its bytes, fused, unknown);
* ``fxlint.audit(model, inputs, compiled=True)``: the oracle (``fxlint.runtime.compiled_audit``): the model
  compiled again with Inductor, its output code, Inductor's provenance and the profiler say what each call
  really copies, per user line;

then ``fxlint.runtime.compiled_confirm.check_verdicts`` holds the verdicts to the oracle line by line.
Figures per library: the avoidable copy bytes per call of the compiled program, the share on a line with a
copy finding (goal >= 95%), the bytes the oracle could not put on one line, the bytes it could not classify,
and the precision of ``survives`` verdicts (confirmed of confirmed + refuted; goal >= 99%).

    python bench/census_compiled.py --quick                      # one fast model per library
    python bench/census_compiled.py --models timm/cait_xxs24_224,torchvision/resnet18
    python bench/census_compiled.py --library timm --out out/   # out/census_compiled.{json,md,jsonl}
    python bench/census_compiled.py --resume --out out/          # go on from out/census_compiled.jsonl

Each model runs in a worker process with a timeout (``--timeout``, default 1200 s: two Inductor compiles);
``--mode train`` audits a training step (the backward graph compiled at the first backward and measured
too). Run it niced, in the background: each model takes 30 s to 5 min on two cores.
"""

from __future__ import annotations

import argparse
import gc
import json
import multiprocessing
import os
import sys
import time
import traceback
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from census import (  # noqa: E402 - bench/ is not a package: its folder goes on the path first
    LIBRARIES,
    _call,
    _fmt_s,
    _pct,
    _short,
    _smoke_train,
    describe_inputs,
    display_path,
    human_bytes,
    interleaved,
    machine,
    read_checkpoint,
    select,
)

ROOT = HERE.parent
DEFAULT_TIMEOUT_S = 1200
MODES = ("infer", "train")
STATUSES = ("confirmed", "refuted", "not-run", "not-known")


def _empty(arch: Any, mode: str) -> dict[str, Any]:
    return {"name": arch.name, "library": arch.library, "mode": mode, "status": "ok", "reason": None,
            "input": None, "times": {"build_s": None, "lint_s": None, "audit_s": None},
            "bytes": 0, "covered_bytes": 0, "no_line_bytes": 0, "unknown_bytes": 0, "unavoidable_bytes": 0,
            "kernel_bytes": 0, "aten_bytes": 0, "backward_bytes": 0,
            "survives": {s: 0 for s in STATUSES}, "fused": {s: 0 for s in STATUSES},
            "verdicts": {"survives": 0, "fused": 0, "unknown": 0}, "misses": [], "refuted": [], "fused_refuted": [],
            "no_line": [],
            "notes": []}


def run_model(name: str, mode: str = "infer") -> dict[str, Any]:
    """Build, lint with verdicts, audit the compiled program and hold the one to the other; never raises."""
    from census_models import REGISTRY

    arch = REGISTRY[name]
    import torch

    from fxlint.util.compat import ensure_torchvision_importable

    ensure_torchvision_importable()
    import fxlint
    from fxlint.runtime.compiled_confirm import check_verdicts

    train = mode == "train"
    rec = _empty(arch, mode)
    t0 = time.perf_counter()
    try:
        torch.manual_seed(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model, inputs = arch.build()
            if train:
                model.train()
                _smoke_train(model, inputs)
            else:
                model.eval()
                with torch.no_grad():
                    _call(model, inputs)
        rec["input"] = describe_inputs(inputs)
    except Exception as exc:  # noqa: BLE001 - the model's own failure
        rec.update(status="not-built", reason=_short(exc))
        return rec
    rec["times"]["build_s"] = round(time.perf_counter() - t0, 3)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.manual_seed(0)
            t = time.perf_counter()
            with torch.set_grad_enabled(train):
                report = fxlint.lint(model, inputs, train=train, compiled=True, config=False)
            rec["times"]["lint_s"] = round(time.perf_counter() - t, 3)
            torch.manual_seed(0)
            t = time.perf_counter()
            with torch.set_grad_enabled(train):
                audit = fxlint.audit(model, inputs, train=train, compiled=True)
            rec["times"]["audit_s"] = round(time.perf_counter() - t, 3)
        if not audit.known:
            rec.update(status="not-known", reason=audit.why_unknown)
            return rec
        check = check_verdicts(report.findings, audit, report.suppressed)
        s = check.summary()
        a = audit.summary()
        rec.update(bytes=check.total_bytes, covered_bytes=check.covered_bytes, no_line_bytes=check.no_line_bytes,
                   unknown_bytes=audit.unknown_bytes,
                   unavoidable_bytes=a["bytes_per_call"] - a["avoidable_bytes_per_call"],
                   kernel_bytes=a["kernel_bytes_per_call"], aten_bytes=a["aten_bytes_per_call"],
                   backward_bytes=a["backward_bytes"], survives=s["survives"], fused=s["fused"])
        rec["verdicts"] = {v: sum(1 for f in report.findings if f.compiled == v) for v in ("survives", "fused",
                                                                                         "unknown")}
        rec["misses"] = [{**m, "file": display_path(m["file"])} for m in check.misses[:20]]
        rec["refuted"] = [{"code": c.code, "file": display_path(c.file), "line": c.line, "phase": c.phase,
                           "claimed": c.claimed,
                           "measured": c.measured} for c in check.checks if c.verdict == "survives"
                          and c.status == "refuted"]
        rec["fused_refuted"] = [{"code": c.code, "file": display_path(c.file), "line": c.line, "left": c.measured}
                                for c in check.checks if c.verdict == "fused" and c.status == "refuted"][:20]
        rec["no_line"] = [{"kernel": c.kernel, "bytes": c.bytes, "lines": [display_path(x) for x in c.lines]}
                          for c in audit.copies if c.file is None and c.avoidable][:10]
        rec["notes"] = audit.notes[:10]
    except Exception as exc:  # noqa: BLE001
        rec.update(status="crash", reason=_short(exc))
        rec["traceback"] = traceback.format_exc()[-4000:]
    finally:
        try:
            torch._dynamo.reset()
        except Exception:  # noqa: BLE001
            pass
        gc.collect()
    return rec


# --------------------------------------------------------------------------- the worker process


def _worker_main(conn: Any) -> None:
    while True:
        try:
            job = conn.recv()
        except EOFError:
            return
        if job is None:
            return
        conn.send(run_model(*job))


class Worker:
    """One model at a time in a child process; one that dies or runs past the timeout is replaced."""

    def __init__(self) -> None:
        self.ctx = multiprocessing.get_context("spawn")
        self.proc: Any = None
        self.conn: Any = None

    def run(self, arch: Any, timeout: float, mode: str) -> dict[str, Any]:
        if self.proc is None or not self.proc.is_alive():
            parent, child = self.ctx.Pipe()
            self.proc = self.ctx.Process(target=_worker_main, args=(child,), daemon=True)
            self.proc.start()
            child.close()
            self.conn = parent
        self.conn.send((arch.name, mode))
        try:
            if self.conn.poll(timeout):
                return self.conn.recv()
            status, reason = "timeout", f"no result after {timeout:.0f} s"
        except (EOFError, OSError):
            status, reason = "died", None
        self.proc.kill()
        self.proc.join()
        reason = reason or f"the worker process died (exit code {self.proc.exitcode})"
        self.proc = None
        rec = _empty(arch, mode)
        rec.update(status=status, reason=reason)
        return rec

    def close(self) -> None:
        if self.proc is not None and self.proc.is_alive():
            try:
                self.conn.send(None)
            except OSError:
                pass
            self.proc.join(10)
            if self.proc.is_alive():
                self.proc.kill()
                self.proc.join()
        self.proc = None


# --------------------------------------------------------------------------- aggregation and tables


def summarise(models: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [m for m in models if m["status"] == "ok"]
    out: dict[str, Any] = {"models": len(models), "ok": len(ok)}
    for st in ("not-built", "crash", "not-known", "timeout", "died"):
        out[st] = sum(1 for m in models if m["status"] == st)
    for k in ("bytes", "covered_bytes", "no_line_bytes", "unknown_bytes", "unavoidable_bytes", "kernel_bytes",
              "aten_bytes", "backward_bytes"):
        out[k] = sum(m[k] for m in ok)
    for v in ("survives", "fused"):
        out[v] = {s: sum(m[v][s] for m in ok) for s in STATUSES}
    out["unknown_verdicts"] = sum(m["verdicts"]["unknown"] for m in ok)
    out["coverage"] = out["covered_bytes"] / out["bytes"] if out["bytes"] else None
    judged = out["survives"]["confirmed"] + out["survives"]["refuted"]
    out["precision"] = out["survives"]["confirmed"] / judged if judged else None
    out["lint_s"] = sum(m["times"]["lint_s"] or 0 for m in ok)
    out["audit_s"] = sum(m["times"]["audit_s"] or 0 for m in ok)
    return out


def _status_cell(s: dict[str, Any]) -> str:
    return f"{s['models']} ({s['ok']} / {s['not-built']} / {s['crash'] + s['timeout'] + s['died']} / {s['not-known']})"


def _verdict_cell(v: dict[str, int]) -> str:
    return f"{v['confirmed']} / {v['refuted']} / {v['not-run']} / {v['not-known']}"


def render_markdown(data: dict[str, Any], *, per_model: bool = True) -> str:
    models = data["models"]
    m = data["machine"]
    out = ["## The compiled program", "",
           f"Command: `{data['command']}` ({data['duration_s'] / 60:.1f} min, started {data['started']}).", "",
           f"Machine: {m.get('cpu', '?')}, {m.get('threads', '?')} threads, Python {m.get('python', '?')}, "
           f"torch {m.get('torch', '?')}. The compiled program is Inductor's on the CPU; its copies are measured by "
           "`fxlint.audit(..., compiled=True)` (output code, provenance, profiler: "
           "[the compiled-program oracle](audit.md#the-compiled-program)).", "",
           "| mode | library | models (ok / not built / crash / not known) | copies per call "
           "| on a line with a finding | on no one line | not classified "
           "| survives: confirmed / refuted / not-run / not-known | precision "
           "| fused: confirmed / refuted / not-run / not-known | unknown verdicts | lint s / oracle s |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for mode in MODES:
        mine = [x for x in models if x["mode"] == mode]
        if not mine:
            continue
        libs = [lib for lib in LIBRARIES if any(x["library"] == lib for x in mine)]
        for lib in [*libs, "all"]:
            rows = mine if lib == "all" else [x for x in mine if x["library"] == lib]
            s = summarise(rows)
            name = "**all**" if lib == "all" else lib
            out.append(f"| {mode} | {name} | {_status_cell(s)} | {human_bytes(s['bytes'])} | "
                       f"{human_bytes(s['covered_bytes'])} = {_pct(s['coverage'])} | "
                       f"{human_bytes(s['no_line_bytes'])} | {human_bytes(s['unknown_bytes'])} | "
                       f"{_verdict_cell(s['survives'])} | {_pct(s['precision'])} | {_verdict_cell(s['fused'])} | "
                       f"{s['unknown_verdicts']} | {s['lint_s']:.0f} / {s['audit_s']:.0f} |")
    misses = sorted(((x, mi) for x in models if x["status"] == "ok" for mi in x["misses"]),
                    key=lambda p: -p[1]["bytes"])
    if misses:
        out += ["", "The largest copies of the compiled program on lines without a finding:", "",
                "| model | mode | line | phase | bytes per call | kernels |", "| --- | --- | --- | --- | --- | --- |"]
        for x, mi in misses[:25]:
            kernels = ", ".join(mi["kernels"])[:90]
            out.append(f"| {x['name']} | {x['mode']} | `{mi['file']}:{mi['line']}` | {mi['phase']} | "
                       f"{human_bytes(mi['bytes'])} | {kernels} |")
    refuted = [(x, r) for x in models for r in x.get("refuted", [])]
    if refuted:
        out += ["", "`survives` verdicts the oracle refutes:", "",
                "| model | mode | finding | line | phase | claimed | measured on the line |",
                "| --- | --- | --- | --- | --- | --- | --- |"]
        for x, r in refuted[:25]:
            out.append(f"| {x['name']} | {x['mode']} | {r['code']} | `{r['file']}:{r['line']}` | "
                       f"{r.get('phase', 'forward')} | "
                       f"{human_bytes(r['claimed'])} | {human_bytes(r['measured'])} |")
    if per_model:
        out += ["", "| model | mode | status | copies per call | on a line with a finding | survives c / r / nr / nk "
                "| lint s | oracle s |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for x in models:
            if x["status"] != "ok":
                out.append(f"| {x['name']} | {x['mode']} | {x['status']}: {str(x['reason'])[:80]} | | | | | |")
                continue
            cov = x["covered_bytes"] / x["bytes"] if x["bytes"] else None
            out.append(f"| {x['name']} | {x['mode']} | ok | {human_bytes(x['bytes'])} | {_pct(cov)} | "
                       f"{_verdict_cell(x['survives'])} | {x['times']['lint_s']:.0f} | {x['times']['audit_s']:.0f} |")
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- the command


def run_census(archs: list[Any], *, modes: tuple[str, ...], timeout_s: float, in_process: bool,
               checkpoint: Path | None, done: list[dict[str, Any]], log: Any = sys.stderr) -> list[dict[str, Any]]:
    results = list(done)
    finished = {(r["name"], r["mode"]) for r in results}
    todo = [(a, mode) for a in archs for mode in modes if (a.name, mode) not in finished]
    worker = None if in_process or not todo else Worker()
    t0 = time.perf_counter()
    try:
        for i, (arch, mode) in enumerate(todo, 1):
            t = time.perf_counter()
            rec = run_model(arch.name, mode) if worker is None else worker.run(arch, timeout_s, mode)
            results.append(rec)
            if checkpoint is not None:
                with checkpoint.open("a") as fh:
                    fh.write(json.dumps(rec, default=str) + "\n")
            if log is not None:
                took, elapsed = time.perf_counter() - t, time.perf_counter() - t0
                share = rec["covered_bytes"] / rec["bytes"] if rec["bytes"] else None
                body = (f"{rec['status'].upper()}: {str(rec['reason'])[:120]}" if rec["status"] != "ok" else
                        f"{human_bytes(rec['bytes'])} copied, {_pct(share)} on finding lines, "
                        f"survives {_verdict_cell(rec['survives'])}")
                print(f"[{i}/{len(todo)}] {arch.name:<44} {mode:<5} {took:6.1f}s {body}  | {_fmt_s(elapsed)} elapsed",
                      file=log, flush=True)
    finally:
        if worker is not None:
            worker.close()
    return results


def main(argv: Iterable[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="census_compiled", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", help="comma-separated: library/name, name, or a glob (e.g. 'timm/swin*')")
    p.add_argument("--library", choices=LIBRARIES)
    p.add_argument("--quick", action="store_true", help="the fast subset (census_models.QUICK)")
    p.add_argument("--mode", choices=(*MODES, "both"), default="infer", help="inference (default), training or both")
    p.add_argument("--out", default=str(ROOT / "out"),
                   help="folder for census_compiled.json, .md and the .jsonl checkpoint (default: out/)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds per model (default 1200)")
    p.add_argument("--in-process", action="store_true", help="no worker process (debugging; a crash ends the run)")
    p.add_argument("--resume", action="store_true", help="keep the models already in the checkpoint and run the rest")
    args = p.parse_args(list(argv) if argv is not None else None)
    try:
        archs = select(args.models, args.library, args.quick)
    except ValueError as exc:
        print(f"census_compiled: error: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    checkpoint = out / "census_compiled.jsonl"
    done = read_checkpoint(checkpoint) if args.resume else []
    if not args.resume and checkpoint.exists():
        checkpoint.unlink()
    modes = MODES if args.mode == "both" else (args.mode,)
    started = time.strftime("%Y-%m-%d %H:%M")
    t0 = time.perf_counter()
    models = run_census(interleaved(archs), modes=modes, timeout_s=args.timeout, in_process=args.in_process,
                        checkpoint=checkpoint, done=done)
    command = "python bench/census_compiled.py " + " ".join(sys.argv[1:] if argv is None else list(argv))
    data = {"command": command.strip(), "started": started, "duration_s": time.perf_counter() - t0,
            "machine": machine(), "models": models,
            "summary": {mode: summarise([m for m in models if m["mode"] == mode]) for mode in modes}}
    (out / "census_compiled.json").write_text(json.dumps(data, indent=1, default=str))
    md = render_markdown(data)
    (out / "census_compiled.md").write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    raise SystemExit(main())
