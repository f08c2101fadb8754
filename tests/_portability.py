"""The kernel model with the CPU paths forced down: run the CPU-dependent tests in each mode
(``make test-portability``), and count which predictions differ between the modes.

    .venv/bin/python -m tests._portability check [MODE ...] -- PYTEST-ARGS   # what make runs
    .venv/bin/python -m tests._portability compare [--families conv,matrix] [--json out.json]

``check`` runs pytest once per mode (a mode is ``VAR=value``: ``ATEN_CPU_CAPABILITY=avx2``,
``ATEN_CPU_CAPABILITY=default``, ``ONEDNN_MAX_CPU_ISA=SSE41``, ``FXLINT_TEST_MKLDNN=0``), says how
long each took, skips a capability this CPU already runs at (``avx2`` on an AVX2-only CPU is the
main run again), and fails when any run fails or runs no test.

``compare`` predicts (does not run) the sweep's grids:

Each mode is a fresh interpreter (``ATEN_CPU_CAPABILITY`` and ``ONEDNN_MAX_CPU_ISA`` are read at
start-up; ``FXLINT_TEST_MKLDNN=0`` switches oneDNN off as tests/conftest.py does). A prediction is
its path, the copies it claims (phase, operand, bytes, reason) and the parts it leaves unknown. The
table counts, per family, the cases whose prediction differs from the native mode's, and the most
common changes of path. The runtime is not consulted: ``make test-portability`` checks that each
mode's predictions hold (the sweep, the probe, the layout tests run in every mode).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
from typing import Any

MODES: dict[str, dict[str, str]] = {
    "native": {},
    "ATEN_CPU_CAPABILITY=avx2": {"ATEN_CPU_CAPABILITY": "avx2"},
    "ATEN_CPU_CAPABILITY=default": {"ATEN_CPU_CAPABILITY": "default"},
    "ONEDNN_MAX_CPU_ISA=SSE41": {"ONEDNN_MAX_CPU_ISA": "SSE41"},
    "FXLINT_TEST_MKLDNN=0": {"FXLINT_TEST_MKLDNN": "0"},
}


def _dump(families: list[str], out: str) -> None:
    import torch

    if os.environ.get("FXLINT_TEST_MKLDNN", "1") == "0":
        torch.backends.mkldnn.enabled = False
    from fxlint.kernels import Env
    from tests import _sweep

    result: dict[str, Any] = {"env": Env.current().describe(), "cases": {}}
    for fam in families:
        for i, case in enumerate(_sweep.grid(fam)):
            fn, args, train, predictor = case.build()
            pred = predictor(*args)
            if pred is None:
                result["cases"][f"{i} {case.name}"] = [fam, None, [], []]
                continue
            copies = sorted([c.phase, c.operand, str(c.nbytes), c.reason, c.count] for c in pred.copies)
            result["cases"][f"{i} {case.name}"] = [fam, pred.path, copies, sorted(u.name for u in pred.unknown)]
    with open(out, "w", encoding="utf-8") as fh:
        json.dump(result, fh)


def _short(path: str | None) -> str:
    return "none" if path is None else path.split(": ", 1)[-1]


def compare(families: list[str]) -> dict[str, Any]:
    dumps: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for mode, extra in MODES.items():
            out = os.path.join(tmp, "m.json")
            env = {**os.environ, **extra}
            for var in ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "FXLINT_TEST_MKLDNN"):
                if var not in extra:
                    env.pop(var, None)
            subprocess.run([sys.executable, "-m", "tests._portability", "compare", "--dump", out, "--families",
                            ",".join(families)], env=env, check=True)
            with open(out, encoding="utf-8") as fh:
                dumps[mode] = json.load(fh)
    base = dumps["native"]["cases"]
    report: dict[str, Any] = {"env": {m: d["env"] for m, d in dumps.items()}, "modes": {}}
    for mode, d in dumps.items():
        per_family: dict[str, dict[str, Any]] = {}
        for name, (fam, path, copies, unknown) in d["cases"].items():
            f = per_family.setdefault(fam, {"cases": 0, "differ": 0, "with_unknown": 0, "changes": collections.Counter()})
            f["cases"] += 1
            f["with_unknown"] += bool(unknown)
            b = base[name]
            if [path, copies, unknown] != b[1:]:
                f["differ"] += 1
                what = "copies" if path == b[1] and unknown == b[3] else "unknown parts" if path == b[1] else "path"
                f["changes"][f"{_short(b[1])} -> {_short(path)}" if what == "path" else f"{_short(path)}: {what}"] += 1
        report["modes"][mode] = {fam: {**v, "changes": v["changes"].most_common(6)} for fam, v in per_family.items()}
    return report


def _markdown(report: dict[str, Any]) -> str:
    fams = list(next(iter(report["modes"].values())))
    lines = ["| mode | " + " | ".join(fams) + " |", "| --- |" + " --- |" * len(fams)]
    for mode, per in report["modes"].items():
        cells = [f"{per[f]['differ']:,} of {per[f]['cases']:,} differ, {per[f]['with_unknown']:,} with unknown parts"
                 for f in fams]
        lines.append(f"| {mode} | " + " | ".join(cells) + " |")
    lines.append("")
    for mode, per in report["modes"].items():
        for fam, v in per.items():
            for change, n in v["changes"]:
                lines.append(f"* {mode}, {fam}: {n:,} x {change}")
    return "\n".join(lines)


def check(modes: list[str], pytest_args: list[str]) -> int:
    """Run pytest with ``pytest_args`` once per mode; 0 when every run passed."""
    import time

    import torch

    native = str(torch.backends.cpu.get_cpu_capability()).lower()
    failed = []
    for mode in modes:
        var, _, value = mode.partition("=")
        if not var or not value:
            print(f"portability: bad mode {mode!r} (expected VAR=value)", file=sys.stderr)
            return 2
        if var == "ATEN_CPU_CAPABILITY" and value.lower() == native:
            print(f"portability: {mode}: skipped, this CPU already runs ATen at {native.upper()} (the main run)")
            continue
        env = {**os.environ, var: value}
        t0 = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "pytest", *pytest_args], env=env, capture_output=True, text=True)
        took = time.monotonic() - t0
        tail = (proc.stdout.strip().splitlines() or ["(no output)"])[-1]
        print(f"portability: {mode}: {tail} [{took:.0f} s]")
        if proc.returncode != 0:  # 5 (no tests ran) is a failure too
            failed.append(mode)
            sys.stdout.write(proc.stdout[-6000:])
            sys.stderr.write(proc.stderr[-3000:])
    if failed:
        print(f"portability: failed in {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["check"]:
        rest = argv[1:]
        split = rest.index("--") if "--" in rest else len(rest)
        return check(rest[:split], rest[split + 1:])
    if argv[:1] == ["compare"]:
        argv = argv[1:]
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--families", default="matrix,bmm,matmul,conv,norm")
    p.add_argument("--dump", help=argparse.SUPPRESS)
    p.add_argument("--json", help="also write the comparison as JSON")
    args = p.parse_args(argv)
    families = [f for f in args.families.split(",") if f]
    if args.dump:
        _dump(families, args.dump)
        return 0
    report = compare(families)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(report, fh, indent=1)
    print(_markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
