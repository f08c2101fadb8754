"""Snapshot every finding and rewrite fxlint produces on the scenario models and on fuzz programs,
one JSON line each, so a refactor can be checked for "no behaviour change" with a plain diff.

    # programs once (the same files are linted before and after):
    python bench/findings_snapshot.py --write-programs /tmp/fuzz_progs --programs 60
    # before (another checkout first on the path) and after:
    PYTHONPATH=/path/to/main python bench/findings_snapshot.py --programs-dir /tmp/fuzz_progs -o before.jsonl
    python bench/findings_snapshot.py --programs-dir /tmp/fuzz_progs -o after.jsonl
    diff before.jsonl after.jsonl

Each model is linted as Dynamo captures it, as ``torch.fx.symbolic_trace`` traces it and as
``torch.export`` exports it (where those work), and rewritten with ``fxlint.rewrite``. A line holds
the target, the capture, and the finding's code, location, bytes, message, fix and details (or the
rewrite's code, location, description and reason). Errors are recorded, not raised.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import glob
import importlib.util
import io
import json
import os
import sys
import warnings
from typing import Any, Iterator, Mapping

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _load(path: str) -> Any:
    name = "snap_" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _json(x: Any) -> Any:
    if isinstance(x, (str, int, float, bool)) or x is None:
        return x
    if isinstance(x, Mapping):  # Finding.details is a read-only mapping, not a dict
        return {str(k): _json(v) for k, v in sorted(x.items(), key=lambda kv: str(kv[0]))}
    if dataclasses.is_dataclass(x) and not isinstance(x, type):  # a violation's structured field
        return _json({f.name: getattr(x, f.name) for f in dataclasses.fields(x)})
    if isinstance(x, (list, tuple)):
        return [_json(v) for v in x]
    return str(x)


def _finding(f: Any) -> dict[str, Any]:
    return {"code": f.code, "where": f"{os.path.basename(f.file or '')}:{f.line}", "node": f.node,
            "graph": f.graph, "severity": str(f.severity), "bytes": f.bytes, "bytes_expr": f.bytes_expr,
            "message": f.message, "fix": f.fix, "details": _json(f.details)}


def _captures(model: Any, inputs: tuple) -> Iterator[tuple[str, Any, Any]]:
    yield "dynamo", model, inputs
    try:
        gm = torch.fx.symbolic_trace(model)
    except Exception as e:  # noqa: BLE001 - recorded
        yield "fx", e, None
    else:
        yield "fx", gm, inputs
    try:
        ep = torch.export.export(model, inputs)
    except Exception as e:  # noqa: BLE001 - recorded
        yield "export", e, None
    else:
        yield "export", ep, inputs


def snapshot(target: str, model: Any, inputs: tuple) -> Iterator[dict[str, Any]]:
    import fxlint

    for how, obj, args in _captures(model, inputs):
        if isinstance(obj, Exception):
            yield {"target": target, "capture": how, "error": type(obj).__name__}
            continue
        try:
            report = fxlint.lint(obj, args, config=False)
        except Exception as e:  # noqa: BLE001 - recorded
            yield {"target": target, "capture": how, "error": f"{type(e).__name__}: {e}"}
            continue
        for err in report.errors:
            yield {"target": target, "capture": how, "rule_error": err}
        for f in sorted(report.findings, key=lambda f: (f.code, f.line or 0, f.node or "", f.message)):
            yield {"target": target, "capture": how, **_finding(f)}
    try:
        res = fxlint.rewrite(model, inputs)
    except Exception as e:  # noqa: BLE001 - recorded
        yield {"target": target, "capture": "rewrite", "error": f"{type(e).__name__}: {e}"}
        return
    for a in res.applied:
        yield {"target": target, "capture": "rewrite", "applied": a.code, "where": f"{a.line}", "node": a.node,
               "description": a.description, "bytes_saved": a.bytes_saved, "source_edit": a.source_edit}
    for s in res.skipped:
        yield {"target": target, "capture": "rewrite", "skipped": s.code, "node": s.node, "reason": s.reason,
               "rolled_back": s.rolled_back}


def write_programs(folder: str, n: int) -> None:
    """Write ``n`` fuzz programs (tests/fuzz_programs.py, derandomized) to ``folder``."""
    from hypothesis import HealthCheck, given, settings

    sys.path.insert(0, ROOT)
    from tests.fuzz_programs import programs

    os.makedirs(folder, exist_ok=True)
    sources: list[str] = []

    @settings(max_examples=n, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(programs())
    def collect(p: Any) -> None:
        sources.append(p.source)

    collect()
    for i, src in enumerate(dict.fromkeys(sources)):
        with open(os.path.join(folder, f"prog_{i:03d}.py"), "w", encoding="utf-8") as fh:
            fh.write(src)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=os.path.join(ROOT, "models"))
    ap.add_argument("--programs-dir", help="lint the fuzz programs in this folder too")
    ap.add_argument("--write-programs", metavar="DIR", help="write fuzz programs to DIR and exit")
    ap.add_argument("--programs", type=int, default=60, help="how many programs --write-programs writes")
    ap.add_argument("-o", "--output", default="-")
    args = ap.parse_args()
    if args.write_programs:
        write_programs(args.write_programs, args.programs)
        return
    files = sorted(f for f in glob.glob(os.path.join(args.models, "*.py")) if not os.path.basename(f).startswith("_"))
    if args.programs_dir:
        files += sorted(glob.glob(os.path.join(args.programs_dir, "*.py")))
    out = sys.stdout if args.output == "-" else open(args.output, "w", encoding="utf-8")
    warnings.simplefilter("ignore")
    for i, path in enumerate(files):
        target = os.path.relpath(path, ROOT) if path.startswith(ROOT) else os.path.basename(path)
        print(f"[{i + 1}/{len(files)}] {target}", file=sys.stderr, flush=True)
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                mod = _load(path)
                if not hasattr(mod, "make"):
                    continue
                model, inputs = mod.make()
                inputs = inputs if isinstance(inputs, tuple) else (inputs,)
                rows = list(snapshot(target, model, inputs))
        except Exception as e:  # noqa: BLE001 - recorded
            rows = [{"target": target, "error": f"{type(e).__name__}: {e}"}]
        for row in rows:
            out.write(json.dumps(row, sort_keys=True) + "\n")
        out.flush()
    if out is not sys.stdout:
        out.close()


if __name__ == "__main__":
    main()
