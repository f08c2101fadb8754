"""Real-zoo census: fxlint's precision and recall on timm, torchvision and transformers models,
measured line by line against the runtime audit.

    nice -n 10 .venv/bin/python bench/census.py                 # every model, both modes (about an hour on 2 cores)
    .venv/bin/python bench/census.py --quick                    # the fast subset, both modes
    .venv/bin/python bench/census.py --mode train               # training mode only
    .venv/bin/python bench/census.py --library torchvision
    .venv/bin/python bench/census.py --models pvt_v2_b0,transformers/bert
    .venv/bin/python bench/census.py --from-json out/census.json   # re-render a saved run

Each architecture of ``bench/census_models.py`` is built with random weights (no download) and
measured in each mode of ``--mode`` (default ``both``: inference, then training):

* ``infer``: ``eval()``, run once as a smoke test under ``torch.no_grad()``, then linted under
  ``torch.no_grad()`` with ``fxlint.lint(model, inputs, confirm=True, config=False)``; forward copies scored.
* ``train``: ``train()``, ``torch.manual_seed(0)``, one training step as a smoke test (forward, the audit's
  own loss ``fxlint.runtime.training_loss``, backward), then ``fxlint.lint(model, inputs, train=True,
  confirm=True, config=False)`` with autograd on: the audit profiles a training step, and forward *and*
  backward copies are scored (a backward copy is attributed to the forward line that made its autograd node).

A model that cannot be built or run (in train mode: cannot train, e.g. no floating-point output that
requires grad) is "not built" in that mode, with the reason, and is not fxlint's failure. The static rules
run, then the runtime audit (``torch.profiler``, nested ATen copies) marks every copy finding confirmed,
refuted or not-run. The audit's ``CopyEvent`` list of that same run is kept (``fxlint.audit`` is wrapped
for the call; if a future ``lint`` stops calling it, the census runs ``fxlint.audit`` once more and says
so in ``audit_source``).

What is measured, per model, per library and overall, per mode:

* **precision**: copy findings (FXL1xx, FXL2xx, FXL4xx) that the runtime ``confirmed`` over
  confirmed + ``refuted``; ``not-run`` findings (their line did not run) are counted apart. In train
  mode a finding with ``backward_bytes > 0`` makes a second, backward claim (``backward_claims``:
  confirmed when the avoidable backward copies of its line, as ``confirm._backward_hits`` takes them, add
  up to at least ``backward_bytes``), and precision counts both kinds.
* **recall**: the source lines (file, line; library files count, the models live there) where the audit
  saw an avoidable copy (forward; in train mode forward and backward, a row per line and phase), that
  carry at least one finding of any code. Avoidable is the audit's one classification
  (``CopyEvent.avoidable``, ``fxlint.runtime.profiler.classify``; docs/census.md says why each class is
  unavoidable); dtype casts (``kind == "dtype"``) are left out. A line whose remaining copies add up to
  less than ``--min-bytes`` (default 256 bytes: 64 float32 elements, four cache lines; below that a copy
  costs its dispatch, not its bytes, and such copies come from constant-size tables, not from the
  activations a rule is about) is left out and reported as "small". Recall is given in model-lines (a
  line counted once per model that runs it), in distinct lines (a line missed in any model counts as
  missed) and in bytes per call.
* **explained bytes** (for reference): the share of all avoidable forward bytes the audit saw
  (dtype casts included) that the confirmed findings account for, copy by copy (the audit's own
  ``Report.unexplained`` is the rest): stricter than line coverage.
* crashes (an exception inside ``fxlint.lint`` or the audit: recorded, the census goes on),
  fxlint's internal rule errors (``Report.errors``), lint time and audit time.
* **misses by kind**: the missed lines grouped by the copy's op chain (``top op>copy op``, e.g.
  ``aten::scaled_dot_product_attention>aten::contiguous``; a subscript assignment
  ``x[...] += y`` / ``x[...] = y`` is labelled ``__setitem__>aten::copy_``), with bytes per call,
  line counts and an example ``file:line`` with its source text: the list rule authors work from.

Models run one at a time (each mode in turn) in a worker process (imports are paid once; a model that kills its
process, or runs past ``--timeout``, is recorded and a fresh worker takes the next model).
Progress goes to stderr, one line per model. Output: ``out/census.json`` (everything, per model
and per line; ``SCHEMA`` below describes it) and ``out/census.md`` (printed too). ``--readme``
puts the Markdown between ``<!-- census:start -->`` and ``<!-- census:end -->`` in a file.
"""

from __future__ import annotations

import argparse
import fnmatch
import gc
import json
import multiprocessing
import os
import platform
import re
import signal
import statistics
import sys
import time
import traceback
import warnings
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Iterable

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # before transformers is imported: never download
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for _p in (str(ROOT), str(HERE)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

SCHEMA_VERSION = 2  # 2: modes (inference, training); 1 was inference only
DEFAULT_MIN_BYTES = 256
DEFAULT_TIMEOUT_S = 900
COPY_PREFIXES = ("FXL1", "FXL2", "FXL4")
LIBRARIES = ("timm", "torchvision", "transformers", "diffusers", "monai", "smp", "pyg", "torchaudio",
             "x_transformers")
#: inference (``eval()``, ``no_grad``: forward copies scored) and training (``train()``, a training step
#: audited: forward and backward copies scored)
MODES = ("infer", "train")
MARK_START, MARK_END = "<!-- census:start -->", "<!-- census:end -->"

# --------------------------------------------------------------------------- the JSON schema

_LINE = {
    "type": "object",
    "required": ["file", "path", "line", "phase", "code", "bytes", "calls", "covered", "codes", "small", "groups"],
    "properties": {
        "file": {"type": "string"}, "path": {"type": "string"}, "line": {"type": ["integer", "null"]},
        "phase": {"enum": ["forward", "backward"]},
        "code": {"type": ["string", "null"]}, "bytes": {"type": "integer"}, "calls": {"type": "integer"},
        "covered": {"type": "boolean"}, "codes": {"type": "array", "items": {"type": "string"}},
        "small": {"type": "boolean"},
        "groups": {"type": "array", "items": {
            "type": "object", "required": ["label", "kind", "chain", "calls", "bytes", "sizes"],
            "properties": {"label": {"type": "string"}, "kind": {"type": "string"},
                           "chain": {"type": "string"}, "calls": {"type": "integer"},
                           "bytes": {"type": "integer"}, "sizes": {"type": "array", "items": {"type": "integer"}}}}},
    },
}
_COUNTS = {
    "type": "object",
    "required": ["lines", "covered_lines", "bytes", "covered_bytes"],
    "properties": {k: {"type": "integer"} for k in ("lines", "covered_lines", "bytes", "covered_bytes")},
}
CLAIM_KEYS = ("confirmed", "refuted", "not_run", "unmarked")
_CLAIMS = {
    "type": "object", "required": list(CLAIM_KEYS),
    "properties": {k: {"type": "integer"} for k in CLAIM_KEYS},
}
_RATIO = {"type": ["number", "null"], "minimum": 0, "maximum": 1}
_SUMMARY = {
    "type": "object",
    "required": ["models", "ok", "not_built", "crashes", "died", "timeouts", "rule_errors", "claims",
                 "backward_claims", "precision", "precision_forward", "precision_backward", "recall_phases",
                 "recall", "recall_lines", "recall_bytes", "distinct_lines", "distinct_covered", "recall_distinct",
                 "avoidable_bytes", "explained_bytes", "explained_share", "small_lines", "small_bytes", "left_out",
                 "lint_s", "audit_s", "lint_s_median"],
    "properties": {"claims": _CLAIMS, "backward_claims": _CLAIMS, "recall": _COUNTS, "precision": _RATIO,
                   "precision_forward": _RATIO, "precision_backward": _RATIO,
                   "recall_phases": {"type": "object", "additionalProperties": _COUNTS}, "recall_lines": _RATIO,
                   "recall_bytes": _RATIO, "recall_distinct": _RATIO, "explained_share": _RATIO},
}
_KIND = {
    "type": "object",
    "required": ["label", "kind", "chain", "lines", "model_lines", "models", "bytes", "max_line_bytes", "sizes",
                 "example"],
    "properties": {"example": {"type": "object", "required": ["path", "line", "code", "model"]}},
}
SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "fxlint real-zoo census",
    "type": "object",
    "required": ["schema", "command", "started", "duration_s", "machine", "settings", "modes", "models", "summary",
                 "misses_by_kind", "recall_by_kind", "unconfirmed_claims"],
    "properties": {
        "schema": {"const": SCHEMA_VERSION},
        "command": {"type": "string"}, "started": {"type": "string"}, "duration_s": {"type": "number"},
        "machine": {"type": "object", "required": ["cpu", "threads", "python", "torch", "torchvision_mode"]},
        "settings": {"type": "object", "required": ["min_bytes", "modes", "timeout_s"]},
        "modes": {"type": "array", "items": {"enum": list(MODES)}},
        "models": {"type": "array", "items": {
            "type": "object",
            "required": ["name", "library", "mode", "note", "status", "reason", "input", "times", "claims",
                         "backward_claims", "recall", "lines", "findings", "excluded", "avoidable_bytes",
                         "explained_bytes", "rule_errors", "warnings"],
            "properties": {
                "mode": {"enum": list(MODES)},
                "status": {"enum": ["ok", "not-built", "crash", "died", "timeout"]},
                "library": {"enum": list(LIBRARIES)},
                "times": {"type": "object", "required": ["build_s", "lint_s", "audit_s", "static_s"]},
                "claims": _CLAIMS, "backward_claims": _CLAIMS, "recall": _COUNTS,
                "lines": {"type": "array", "items": _LINE},
            }}},
        "summary": {"type": "object", "propertyNames": {"enum": list(MODES)}, "additionalProperties": {
            "type": "object", "required": ["overall", "libraries"],
            "properties": {"overall": _SUMMARY, "libraries": {"type": "object", "additionalProperties": _SUMMARY}}}},
        "misses_by_kind": {"type": "object", "propertyNames": {"enum": list(MODES)},
                           "additionalProperties": {"type": "array", "items": _KIND}},
        "recall_by_kind": {"type": "object", "propertyNames": {"enum": list(MODES)}, "additionalProperties": {
            "type": "array", "items": {
                "type": "object", "required": ["label", "lines", "covered_lines", "bytes", "covered_bytes"]}}},
        "unconfirmed_claims": {"type": "array", "items": {
            "type": "object", "required": ["model", "mode", "phase", "code", "status", "path", "line", "count",
                                           "bytes"],
            "properties": {"status": {"enum": ["refuted", "not-run", "unmarked"]}}}},
    },
}

# --------------------------------------------------------------------------- one model


def display_path(path: str | None) -> str:
    """A library file as its package-relative path (``timm/layers/attention.py``)."""
    if not path:
        return "<runtime>"
    for marker in ("site-packages" + os.sep, "dist-packages" + os.sep):
        i = path.rfind(marker)
        if i >= 0:
            return path[i + len(marker):]
    try:
        rel = os.path.relpath(path, ROOT)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


#: ``x[...] = y`` / ``x[...] += y``: Python calls ``__setitem__``, whose copy (the view written onto
#: itself after an in-place ``+=``) sits at the top level of the profile as a bare ``aten::copy_``
_SUBSCRIPT_ASSIGN = re.compile(r"^[\w.]+(\[.*\])+\s*(\+|-|\*|/|//|%|\*\*|@|&|\||\^|<<|>>)?=(?!=)")
_SETITEM_TOPS = {"aten::copy_", "aten::index_put_", "aten::_index_put_impl_", "aten::fill_",
                 "aten::masked_fill_"}


def copy_label(top_op: str, op: str, code: str | None) -> str:
    """The kind of a copy, as the misses table groups it: ``top op>copy op``, prefixed with
    ``__setitem__>`` for a copy a subscript assignment makes (``x[a:] += y``: ``aten::copy_``;
    ``mask[a:b] = 1``: ``aten::fill_>aten::copy_``)."""
    label = f"{top_op}>{op}" if top_op != op else op
    if top_op in _SETITEM_TOPS and code and _SUBSCRIPT_ASSIGN.match(code.strip()):
        return f"__setitem__>{label}"
    return label


def _line_key(file: str | None, line: int | None, function: str | None) -> tuple[str, int | str | None]:
    if file is None:
        return ("<runtime>", None)
    if file.startswith("<graph>"):
        return (file, function)
    return (os.path.realpath(file), line)


def backward_claims(report: Any, audit: Any) -> tuple[Counter, dict[int, str], list[Any]]:
    """The training step's second claim of each copy finding that predicts a backward copy
    (``Finding.backward_bytes > 0``): ``confirmed`` when the avoidable backward copies on its line
    (its module's, where the audit tells modules apart), taken largest first as ``confirm`` takes
    them (``_backward_hits``: a copy backs one finding only), add up to at least ``backward_bytes``;
    ``refuted`` when they do not; ``not-run`` when the line did not run. ``_backward_hits`` takes the
    copies of the finding's line first, then those a view earlier in the same function makes of the
    gradient (autograd copies a gradient made non-contiguous by ``transpose(...).contiguous()`` in the
    earlier view's node). Returns the counts, the statuses by finding index and the backward copies
    the confirmed claims explain."""
    from fxlint.runtime.confirm import _backward_hits, backward_owners

    owned = backward_owners(report.findings)
    counts: Counter = Counter()
    status: dict[int, str] = {}
    taken: set[int] = set()
    explained: list[Any] = []
    order = sorted(range(len(report.findings)), key=lambda i: report.findings[i].bytes == 0)
    for i in order:
        f = report.findings[i]
        if not f.code.startswith(COPY_PREFIXES) or f.suppressed or not f.backward_bytes or f.file is None:
            continue
        if f.status == "not-run" or not audit.ran(f.file, f.line):
            status[i] = "not_run"
        else:
            hits = _backward_hits(f, audit, taken, owned)
            taken.update(id(c) for c in hits)
            status[i] = "confirmed" if sum(c.bytes for c in hits) >= f.backward_bytes else "refuted"
            if status[i] == "confirmed":
                explained += hits
        counts[status[i]] += 1
    return counts, status, explained


def analyse(report: Any, audit: Any, min_bytes: int, mode: str = "infer") -> dict[str, Any]:
    """Precision, recall and the per-line table of one linted model (``report`` confirmed by
    ``audit``). Pure: reads only the public ``Report``/``Finding``/``AuditReport``/``CopyEvent``.
    ``mode="train"``: the audit profiled a training step; backward copies are scored too (a line
    row per (line, phase)), and the findings' backward claims are judged (``backward_claims``)."""
    train = mode == "train"
    claims = Counter()
    back_claims, back_status, back_explained = backward_claims(report, audit) if train else (Counter(), {}, [])
    #: backward rows a confirmed backward claim explains (the view's line upstream of the finding's)
    claimed_rows = {(*_line_key(c.file, c.line, c.function), "backward") for c in back_explained}
    finding_codes: dict[tuple, set[str]] = defaultdict(set)
    findings = []
    for i, f in enumerate((*report.findings, *getattr(report, "suppressed", []))):
        if f.file is not None:
            finding_codes[_line_key(f.file, f.line, None)].add(f.code)
            eager = getattr(f, "eager_site", None)
            if eager:  # a line only torch.compile runs: eager makes the copy the finding claims there instead
                finding_codes[_line_key(eager[0], eager[1], None)].add(f.code)
        elif f.node:
            finding_codes[("<graph>", f.node)].add(f.code)
        if f.code.startswith(COPY_PREFIXES) and not f.suppressed:
            # a copy finding the audit left without a status would be a confirmation bug: counted apart
            claims[{"confirmed": "confirmed", "refuted": "refuted", "not-run": "not_run"}.get(f.status or "",
                                                                                             "unmarked")] += 1
        findings.append({"code": f.code, "status": f.status, "path": display_path(f.file) if f.file else None,
                         "line": f.line, "bytes": f.bytes, "module_path": f.module_path,
                         "severity": str(f.severity), "suppressed": bool(f.suppressed),
                         "backward_bytes": f.backward_bytes,
                         "backward_status": {"not_run": "not-run"}.get(back_status.get(i, ""), back_status.get(i))})

    excluded = Counter()
    unavoidable: Counter = Counter()
    per_line: dict[tuple, list[Any]] = defaultdict(list)
    for c in audit.copies:
        if c.phase != "forward" and not train:
            excluded["backward_bytes"] += c.bytes
        elif not c.avoidable:
            excluded["unavoidable_bytes"] += c.bytes
            unavoidable[c.reason or "unavoidable"] += c.bytes
        elif c.kind == "dtype":
            excluded["dtype_bytes"] += c.bytes
        elif c.file is None:
            excluded["unattributed_bytes"] += c.bytes
        else:
            per_line[(*_line_key(c.file, c.line, c.function), c.phase)].append(c)

    lines = []
    for key, events in per_line.items():
        first = events[0]
        groups: dict[str, dict[str, Any]] = {}
        for c in events:
            label = copy_label(c.top_op, c.op, c.code)
            g = groups.setdefault(label, {"label": label, "kind": c.kind, "chains": Counter(), "calls": 0,
                                          "bytes": 0, "sizes": set()})
            g["chains"][">".join(c.chain)] += 1
            g["calls"] += 1
            g["bytes"] += c.bytes
            g["sizes"].add(c.bytes)
        nbytes = sum(c.bytes for c in events)
        codes = sorted(finding_codes.get(key[:2], ()))
        by_claim = not codes and key in claimed_rows
        small = nbytes < min_bytes
        if small:
            excluded["small_lines"] += 1
            excluded["small_bytes"] += nbytes
        lines.append({
            "file": first.file, "path": display_path(first.file) if not first.file.startswith("<") else
            f"<graph>:{first.function}", "line": first.line, "phase": first.phase, "code": first.code, "bytes": nbytes,
            "calls": len(events), "covered": bool(codes) or by_claim, "codes": codes, "by_claim": by_claim,
            "small": small,
            "groups": sorted(({"label": g["label"], "kind": g["kind"], "chain": g["chains"].most_common(1)[0][0],
                               "calls": g["calls"], "bytes": g["bytes"], "sizes": sorted(g["sizes"], reverse=True)[:8]}
                              for g in groups.values()), key=lambda g: -g["bytes"]),
        })
    lines.sort(key=lambda r: (-r["bytes"], r["path"], r["line"] or 0, r["phase"]))
    counted = [r for r in lines if not r["small"]]
    recall = {"lines": len(counted), "covered_lines": sum(r["covered"] for r in counted),
              "bytes": sum(r["bytes"] for r in counted), "covered_bytes": sum(r["bytes"] for r in counted if r["covered"])}
    avoidable = sum(c.bytes for c in audit.copies if c.avoidable and c.phase == "forward" and c.file is not None)
    unexplained = sum(int(u.get("bytes", 0)) for u in getattr(report, "unexplained", []) or [])
    return {
        "claims": {k: claims[k] for k in CLAIM_KEYS},
        "backward_claims": {k: back_claims[k] for k in CLAIM_KEYS},
        "recall": recall, "lines": lines, "findings": findings,
        "excluded": {k: int(excluded[k]) for k in ("dtype_bytes", "unavoidable_bytes", "backward_bytes",
                                                  "unattributed_bytes", "small_lines", "small_bytes")},
        "unavoidable_by_reason": dict(unavoidable.most_common()),
        "avoidable_bytes": avoidable, "explained_bytes": max(0, avoidable - unexplained),
        "rule_errors": [str(e) for e in getattr(report, "errors", [])],
    }


def describe_inputs(inputs: Any) -> str:
    import torch

    def one(x: Any) -> str:
        if isinstance(x, torch.Tensor):
            return f"{str(x.dtype).replace('torch.', '')}{tuple(x.shape)}"
        return type(x).__name__

    if isinstance(inputs, dict):
        return ", ".join(f"{k}={one(v)}" for k, v in inputs.items())
    if isinstance(inputs, (tuple, list)):
        return ", ".join(one(v) for v in inputs)
    return one(inputs)


def _call(model: Any, inputs: Any) -> Any:
    if isinstance(inputs, dict):
        return model(**inputs)
    if isinstance(inputs, (tuple, list)):
        return model(*inputs)
    return model(inputs)


def _empty_record(arch: Any, mode: str = "infer") -> dict[str, Any]:
    return {"name": arch.name, "library": arch.library, "mode": mode, "note": arch.note, "status": "ok",
            "reason": None,
            "input": None, "params": None, "audit_source": None,
            "times": {"build_s": None, "lint_s": None, "audit_s": None, "static_s": None},
            "claims": {k: 0 for k in CLAIM_KEYS}, "backward_claims": {k: 0 for k in CLAIM_KEYS},
            "recall": {"lines": 0, "covered_lines": 0, "bytes": 0, "covered_bytes": 0}, "lines": [], "findings": [],
            "excluded": {}, "avoidable_bytes": 0, "explained_bytes": 0, "rule_errors": [], "warnings": [],
            "graph_breaks": None}


def _short(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text if len(text) <= 400 else text[:397] + "..."


def _smoke_train(model: Any, inputs: Any) -> None:
    """One training step the way the audit takes it (forward, the audit's loss, backward); a model
    that cannot train (no floating output that requires grad, an op without a backward) raises."""
    from fxlint.runtime import training_loss

    out = _call(model, inputs)
    loss = training_loss(out, {})
    if loss is None:
        raise ValueError("cannot train: no floating-point output that requires grad")
    loss.backward()
    model.zero_grad(set_to_none=True)


def run_model(name: str, min_bytes: int = DEFAULT_MIN_BYTES, mode: str = "infer") -> dict[str, Any]:
    """Build, smoke-run, lint (confirm=True) and analyse one architecture in ``mode`` ("infer":
    ``eval()`` under ``no_grad``; "train": ``train()``, a training step audited); never raises."""
    from census_models import REGISTRY

    arch = REGISTRY[name]  # an unknown name is the caller's error: it raises (and a worker exits)
    import torch

    from fxlint.util.compat import ensure_torchvision_importable

    ensure_torchvision_importable()
    import fxlint

    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    train = mode == "train"
    rec = _empty_record(arch, mode)
    t0 = time.perf_counter()
    try:  # the model's own failures: not built, not fxlint's
        torch.manual_seed(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model, inputs = arch.build()
            if train:
                model.train()
                torch.manual_seed(0)
                _smoke_train(model, inputs)
                torch.manual_seed(0)
            else:
                model.eval()
                with torch.no_grad():
                    _call(model, inputs)
        rec["input"] = describe_inputs(inputs)
        rec["params"] = sum(p.numel() for p in model.parameters())
    except Exception as exc:  # noqa: BLE001
        rec.update(status="not-built", reason=_short(exc))
        rec["times"]["build_s"] = round(time.perf_counter() - t0, 3)
        return rec
    rec["times"]["build_s"] = round(time.perf_counter() - t0, 3)

    audits: list[tuple[Any, float]] = []
    orig_audit = fxlint.audit

    def recording_audit(*args: Any, **kwargs: Any) -> Any:
        t = time.perf_counter()
        result = orig_audit(*args, **kwargs)
        audits.append((result, time.perf_counter() - t))
        return result

    caught: list[str] = []
    try:
        fxlint.audit = recording_audit
        with warnings.catch_warnings(record=True) as ws:
            warnings.simplefilter("always")
            t = time.perf_counter()
            with torch.set_grad_enabled(train):
                report = fxlint.lint(model, inputs, train=train, confirm=True, config=False)
            lint_s = time.perf_counter() - t
            caught = list(dict.fromkeys(f"{w.category.__name__}: {w.message}"[:300] for w in ws
                                        if "fxlint" in w.category.__name__.lower() or "fxlint" in str(w.message)))
        if audits:
            audit, audit_s = audits[-1]
            rec["audit_source"] = "lint"
        else:  # lint no longer goes through fxlint.audit: measure the audit on its own
            t = time.perf_counter()
            with torch.set_grad_enabled(train):
                audit = orig_audit(model, inputs, train=train)
            audit_s = time.perf_counter() - t
            lint_s += audit_s
            rec["audit_source"] = "separate run"
        rec["times"].update(lint_s=round(lint_s, 3), audit_s=round(audit_s, 3),
                            static_s=round(max(0.0, lint_s - audit_s), 3))
        rec.update(analyse(report, audit, min_bytes, mode))
        rec["graph_breaks"] = report.graph_breaks
        rec["warnings"] = caught[:20]
    except Exception as exc:  # noqa: BLE001
        rec.update(status="crash", reason=_short(exc), warnings=caught[:20])
        rec["traceback"] = traceback.format_exc()[-4000:]
    finally:
        fxlint.audit = orig_audit
        try:
            torch._dynamo.reset()
        except Exception:  # noqa: BLE001
            pass
        del model, inputs
        gc.collect()
    return rec


# --------------------------------------------------------------------------- the worker process


def _worker_main(conn: Any, min_bytes: int) -> None:
    # torchvision, timm, transformers and fxlint are imported once per worker (the first model pays)
    while True:
        try:
            job = conn.recv()
        except EOFError:
            return
        if job is None:
            return
        name, mode = job
        conn.send(run_model(name, min_bytes, mode))


class Worker:
    """One model at a time in a child process; a child that dies or runs past the timeout is
    replaced, and the model is recorded as such."""

    def __init__(self, min_bytes: int) -> None:
        self.min_bytes = min_bytes
        self.ctx = multiprocessing.get_context("spawn")
        self.proc: Any = None
        self.conn: Any = None

    def _start(self) -> None:
        parent, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=_worker_main, args=(child, self.min_bytes), daemon=True)
        self.proc.start()
        child.close()
        self.conn = parent

    def run(self, arch: Any, timeout: float, mode: str = "infer") -> dict[str, Any]:
        if self.proc is None or not self.proc.is_alive():
            self._start()
        self.conn.send((arch.name, mode))
        try:
            if self.conn.poll(timeout):
                return self.conn.recv()
            status, reason = "timeout", f"no result after {timeout:.0f} s"
        except (EOFError, OSError):
            status, reason = "died", None
        self.proc.kill()
        self.proc.join()
        if reason is None:
            reason = f"the worker process died (exit code {self.proc.exitcode})"
        self.proc = None
        rec = _empty_record(arch, mode)
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


# --------------------------------------------------------------------------- aggregation


def _ratio(num: int | float, den: int | float) -> float | None:
    return None if not den else num / den


def summarise(models: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [m for m in models if m["status"] == "ok"]
    claims = Counter()
    back = Counter()
    recall = Counter()
    phases: dict[str, Counter] = defaultdict(Counter)
    for m in ok:
        claims.update(m["claims"])
        back.update(m.get("backward_claims") or {})
        recall.update(m["recall"])
        for r in m["lines"]:
            if not r["small"]:
                ph = phases[r.get("phase", "forward")]
                ph["lines"] += 1
                ph["covered_lines"] += r["covered"]
                ph["bytes"] += r["bytes"]
                ph["covered_bytes"] += r["bytes"] if r["covered"] else 0
    distinct: dict[tuple, bool] = {}
    for m in ok:
        for r in m["lines"]:
            if r["small"]:
                continue
            key = (r["path"], r["line"], r.get("phase", "forward"))
            distinct[key] = distinct.get(key, True) and r["covered"]
    lint_times = [m["times"]["lint_s"] for m in ok if m["times"]["lint_s"] is not None]
    small = Counter()
    for m in ok:
        small["lines"] += m["excluded"].get("small_lines", 0)
        small["bytes"] += m["excluded"].get("small_bytes", 0)
    avoidable = sum(m["avoidable_bytes"] for m in ok)
    explained = sum(m["explained_bytes"] for m in ok)
    left_out = Counter()
    for m in ok:
        left_out.update({k: v for k, v in m["excluded"].items() if k.endswith("_bytes") and k != "small_bytes"})
    conf, ref = claims["confirmed"] + back["confirmed"], claims["refuted"] + back["refuted"]
    return {
        "models": len(models), "ok": len(ok),
        "not_built": sum(m["status"] == "not-built" for m in models),
        "crashes": sum(m["status"] == "crash" for m in models),
        "died": sum(m["status"] == "died" for m in models),
        "timeouts": sum(m["status"] == "timeout" for m in models),
        "rule_errors": sum(len(m["rule_errors"]) for m in ok),
        "claims": {k: int(claims[k]) for k in CLAIM_KEYS},
        "backward_claims": {k: int(back[k]) for k in CLAIM_KEYS},
        "precision": _ratio(conf, conf + ref),
        "precision_forward": _ratio(claims["confirmed"], claims["confirmed"] + claims["refuted"]),
        "precision_backward": _ratio(back["confirmed"], back["confirmed"] + back["refuted"]),
        "recall_phases": {ph: {k: int(c[k]) for k in ("lines", "covered_lines", "bytes", "covered_bytes")}
                          for ph, c in sorted(phases.items())},
        "recall": {k: int(recall[k]) for k in ("lines", "covered_lines", "bytes", "covered_bytes")},
        "recall_lines": _ratio(recall["covered_lines"], recall["lines"]),
        "recall_bytes": _ratio(recall["covered_bytes"], recall["bytes"]),
        "distinct_lines": len(distinct), "distinct_covered": sum(distinct.values()),
        "recall_distinct": _ratio(sum(distinct.values()), len(distinct)),
        "avoidable_bytes": avoidable, "explained_bytes": explained, "explained_share": _ratio(explained, avoidable),
        "small_lines": int(small["lines"]), "small_bytes": int(small["bytes"]),
        "left_out": {k: int(left_out[k]) for k in ("dtype_bytes", "unavoidable_bytes", "backward_bytes",
                                                    "unattributed_bytes")},
        "lint_s": round(sum(lint_times), 2),
        "audit_s": round(sum(m["times"]["audit_s"] or 0 for m in ok), 2),
        "lint_s_median": round(statistics.median(lint_times), 2) if lint_times else None,
    }


def _phase_label(label: str, row: dict[str, Any]) -> str:
    """A copy kind's label, ``backward: `` in front for a backward line's copies."""
    return f"backward: {label}" if row.get("phase") == "backward" else label


def by_kind(models: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(misses by kind, recall by kind) over the counted lines of every model that ran."""
    misses: dict[str, dict[str, Any]] = {}
    coverage: dict[str, Counter] = defaultdict(Counter)
    for m in models:
        if m["status"] != "ok":
            continue
        for r in m["lines"]:
            if r["small"]:
                continue
            for g in r["groups"]:
                g = {**g, "label": _phase_label(g["label"], r)}
                cov = coverage[g["label"]]
                cov["lines"] += 1
                cov["bytes"] += g["bytes"]
                if r["covered"]:
                    cov["covered_lines"] += 1
                    cov["covered_bytes"] += g["bytes"]
                    continue
                k = misses.setdefault(g["label"], {
                    "label": g["label"], "kind": g["kind"], "chains": Counter(), "distinct": set(), "model_lines": 0,
                    "models": [], "bytes": 0, "max_line_bytes": 0, "sizes": Counter(), "example": None})
                k["chains"][g["chain"]] += g["calls"]
                k["distinct"].add((r["path"], r["line"]))
                k["model_lines"] += 1
                if m["name"] not in k["models"]:
                    k["models"].append(m["name"])
                k["bytes"] += g["bytes"]
                k["sizes"].update({s: 1 for s in g["sizes"]})
                if g["bytes"] > k["max_line_bytes"]:
                    k["max_line_bytes"] = g["bytes"]
                    k["example"] = {"path": r["path"], "line": r["line"], "code": r["code"], "model": m["name"],
                                    "bytes": g["bytes"], "calls": g["calls"]}
    miss_rows = sorted(({
        "label": k["label"], "kind": k["kind"], "chain": k["chains"].most_common(1)[0][0],
        "chains": [c for c, _ in k["chains"].most_common(5)], "lines": len(k["distinct"]),
        "model_lines": k["model_lines"], "models": k["models"], "bytes": k["bytes"],
        "max_line_bytes": k["max_line_bytes"], "sizes": [s for s, _ in k["sizes"].most_common(5)],
        "example": k["example"],
        "distinct_lines": [{"path": p, "line": ln} for p, ln in sorted(k["distinct"], key=lambda t: (t[0], t[1] or 0))],
    } for k in misses.values()), key=lambda r: (-r["bytes"], r["label"]))
    cov_rows = sorted(({"label": lbl, **{f: int(c[f]) for f in ("lines", "covered_lines", "bytes", "covered_bytes")}}
                       for lbl, c in coverage.items()), key=lambda r: (-r["bytes"], r["label"]))
    return miss_rows, cov_rows


def unconfirmed_claims(models: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Copy findings the runtime refuted (or could not judge), one row per model, code and line."""
    rows: dict[tuple, dict[str, Any]] = {}
    for m in models:
        mode = m.get("mode") or "infer"
        for f in m["findings"]:
            if not f["code"].startswith(COPY_PREFIXES) or f["suppressed"]:
                continue
            claims = [("forward", f["status"], f["bytes"])]
            if f.get("backward_status") is not None:
                claims.append(("backward", f["backward_status"], f.get("backward_bytes")))
            for phase, status, nbytes in claims:
                if status == "confirmed":
                    continue
                key = (m["name"], mode, phase, f["code"], status, f["path"], f["line"])
                row = rows.setdefault(key, {"model": m["name"], "mode": mode, "phase": phase, "code": f["code"],
                                            "status": status or "unmarked", "path": f["path"], "line": f["line"],
                                            "count": 0, "bytes": 0})
                row["count"] += 1
                row["bytes"] += nbytes or 0
    order = {"refuted": 0, "unmarked": 1, "not-run": 2}
    return sorted(rows.values(), key=lambda r: (order.get(r["status"], 3), r["mode"], r["model"], r["path"] or "",
                                                r["line"] or 0, r["phase"]))


def merge_runs(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Several census JSONs (a run per mode) as one: the model records of all of them (a later run's record of
    the same model and mode replaces an earlier one's), the commands and start times joined, durations summed."""
    records: dict[tuple[str, str], dict[str, Any]] = {}
    for run in runs:
        for m in run.get("models", []):
            records[(m["name"], m.get("mode", "infer"))] = m
    settings = {**runs[0].get("settings", {}), "modes": [mode for mode in MODES if any(k[1] == mode for k in records)],
                "partial": any(r.get("settings", {}).get("partial") for r in runs),
                "selected": sum(r.get("settings", {}).get("selected") or 0 for r in runs)}
    return build_data(list(records.values()), command=" ; ".join(f"`{r.get('command', '?')}`".strip("`")
                                                                 for r in runs),
                      started=" / ".join(str(r.get("started", "?")) for r in runs),
                      duration_s=sum(float(r.get("duration_s") or 0) for r in runs), settings=settings,
                      machine_info=runs[-1].get("machine"))


def build_data(models: list[dict[str, Any]], *, command: str, started: str, duration_s: float,
               settings: dict[str, Any], machine_info: dict[str, Any] | None = None) -> dict[str, Any]:
    """The census JSON: per mode that ran, the summaries (overall, per library), the misses and the
    recall by kind; the unconfirmed claims (with their mode) and the model records (with theirs)."""
    for m in models:
        m.setdefault("mode", "infer")
    modes = [mode for mode in MODES if any(m["mode"] == mode for m in models)] or list(
        settings.get("modes") or ["infer"])
    summary: dict[str, Any] = {}
    misses_by_kind: dict[str, Any] = {}
    recall_by_kind: dict[str, Any] = {}
    for mode in modes:
        ms = [m for m in models if m["mode"] == mode]
        libs = sorted({m["library"] for m in ms}, key=lambda lib: (LIBRARIES.index(lib) if lib in LIBRARIES
                                                                  else len(LIBRARIES), lib))
        summary[mode] = {"overall": summarise(ms), "libraries": {lib: summarise([m for m in ms if m["library"] == lib])
                                                                 for lib in libs}}
        misses_by_kind[mode], recall_by_kind[mode] = by_kind(ms)
    return {"schema": SCHEMA_VERSION, "command": command, "started": started, "duration_s": round(duration_s, 1),
            "machine": machine_info or machine(), "settings": settings, "modes": modes, "models": models,
            "summary": summary, "misses_by_kind": misses_by_kind, "recall_by_kind": recall_by_kind,
            "unconfirmed_claims": unconfirmed_claims(models)}


def upgrade_v1(data: dict[str, Any]) -> dict[str, Any]:
    """A census JSON of schema 1 (inference only, one summary) as schema 2, from its model records."""
    settings = dict(data.get("settings") or {})
    settings.pop("grad", None)
    settings["modes"] = ["infer"]
    models = [{**m, "mode": "infer", "backward_claims": m.get("backward_claims") or {k: 0 for k in CLAIM_KEYS}}
              for m in data["models"]]
    return build_data(models, command=data["command"], started=data["started"], duration_s=data["duration_s"],
                      settings=settings, machine_info=data["machine"])


def machine() -> dict[str, Any]:
    import torch

    from fxlint.util.compat import ensure_torchvision_importable

    info: dict[str, Any] = {"cpu": _cpu_name(), "threads": torch.get_num_threads(), "python": platform.python_version(),
                            "torch": torch.__version__, "torchvision_mode": ensure_torchvision_importable()}
    for mod in ("torchvision", "timm", "transformers"):
        try:
            info[mod] = __import__(mod).__version__
        except Exception:  # noqa: BLE001
            info[mod] = None
    return info


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


# --------------------------------------------------------------------------- Markdown


def human_bytes(n: int | float | None) -> str:
    if n is None:
        return "-"
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _secs(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"


def _cell(text: Any, limit: int = 90) -> str:
    s = "" if text is None else str(text)
    s = s if len(s) <= limit else s[:limit - 3] + "..."
    return s.replace("|", "\\|").replace("`", "'")


def missed_lines(models: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The distinct missed lines over all models: bytes per call summed, copy labels, models."""
    rows: dict[tuple, dict[str, Any]] = {}
    for m in models:
        if m["status"] != "ok":
            continue
        for r in m["lines"]:
            if r["covered"] or r["small"]:
                continue
            phase = r.get("phase", "forward")
            row = rows.setdefault((r["path"], r["line"], phase), {"path": r["path"], "line": r["line"], "phase": phase,
                                                                  "code": r["code"], "labels": [], "models": [],
                                                                  "bytes": 0})
            row["bytes"] += r["bytes"]
            row["models"].append(m["name"])
            row["labels"] += [g["label"] for g in r["groups"] if g["label"] not in row["labels"]]
    return sorted(rows.values(), key=lambda r: (-r["bytes"], r["path"], r["line"] or 0, r["phase"]))


def _claims_cell(c: dict[str, int]) -> str:
    return f"{c['confirmed']} / {c['refuted']} / {c['not_run']}"


MODE_TEXT = {"infer": "inference: `eval()`, linted under `torch.no_grad()`, forward copies scored",
             "train": "training: `train()`, `lint(..., train=True)`, a training step audited, forward and backward "
                      "copies scored"}


def render_markdown(data: dict[str, Any], *, per_model: bool = True) -> str:
    """The census tables, from the JSON alone (a saved ``census.json`` renders the same). ``per_model=False``
    is the README's summary: the library table (a row per library and mode), the unconfirmed claims and the
    remaining misses by kind of each mode."""
    s = data["summary"]
    m = data["machine"]
    st = data["settings"]
    modes = data["modes"]
    out = [
        f"Command: `{data['command']}` ({data['duration_s'] / 60:.1f} min, started {data['started']}).",
        "",
        *([f"**Partial run: {len(data['models'])} of the {st['selected']} model runs selected** (stopped before the "
           "end; the figures are those of the models measured).", ""] if st.get("partial") else []),
        f"Machine: {m['cpu']}, {m['threads']} threads, Python {m['python']}, torch {m['torch']}, torchvision "
        f"{m.get('torchvision')} ({m['torchvision_mode']}), timm {m.get('timm')}, transformers {m.get('transformers')}. "
        + " ".join(f"Mode {mode}: {MODE_TEXT[mode]}." for mode in modes)
        + f" Lines copying < {st['min_bytes']} B left out.",
        "",
        "| mode | library | models (ok / not built / crash) | copy claims confirmed / refuted / not-run (/ unmarked) "
        "| backward claims confirmed / refuted / not-run | precision "
        "| recall: lines covered / avoidable-copy lines | of which backward lines | recall (bytes/call covered) "
        "| distinct lines covered | explained bytes (reference) | rule errors | lint s (total / median) "
        "| of which audit s |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for mode in modes:
        sm = s[mode]
        rows = [(lib, v) for lib, v in sm["libraries"].items()] + [("**overall**", sm["overall"])]
        for lib, v in rows:
            crashes = v["crashes"] + v["died"] + v["timeouts"]
            c, b, r = v["claims"], v["backward_claims"], v["recall"]
            unmarked = f" / {c['unmarked']}" if c["unmarked"] else ""
            bw = v["recall_phases"].get("backward")
            out.append(
                f"| {mode} | {lib} | {v['models']} ({v['ok']} / {v['not_built']} / {crashes}) "
                f"| {c['confirmed']} / {c['refuted']} / {c['not_run']}{unmarked} "
                f"| {_claims_cell(b) if mode == 'train' else '-'} "
                f"| {_pct(v['precision'])} "
                f"| {r['covered_lines']} / {r['lines']} = {_pct(v['recall_lines'])} "
                f"| {(str(bw['covered_lines']) + ' / ' + str(bw['lines'])) if bw else '-'} "
                f"| {human_bytes(r['covered_bytes'])} of {human_bytes(r['bytes'])} = {_pct(v['recall_bytes'])} "
                f"| {v['distinct_covered']} / {v['distinct_lines']} = {_pct(v['recall_distinct'])} "
                f"| {_pct(v['explained_share'])} of {human_bytes(v['avoidable_bytes'])} | {v['rule_errors']} "
                f"| {v['lint_s']:.0f} / {v['lint_s_median'] if v['lint_s_median'] is not None else '-'} "
                f"| {v['audit_s']:.0f} |")
    out.append("")
    for mode in modes:
        o = s[mode]["overall"]
        lo = o["left_out"]
        out.append(f"Left out of recall in {mode}, per call over all models: dtype casts "
                   f"{human_bytes(lo['dtype_bytes'])}; "
                   f"copies the audit marks unavoidable {human_bytes(lo['unavoidable_bytes'])} (docs/census.md, "
                   f"\"What counts as avoidable\"); "
                   + (f"backward copies {human_bytes(lo['backward_bytes'])} (not scored in inference); "
                      if mode == "infer" and lo["backward_bytes"] else "")
                   + f"copies with no source line {human_bytes(lo['unattributed_bytes'])}; lines copying < "
                   f"{st['min_bytes']} B: {o['small_lines']} model-lines, {human_bytes(o['small_bytes'])}.")
        out.append("")
    out.pop()
    if data["unconfirmed_claims"]:
        out += ["", "Copy claims the runtime did not confirm:", "",
                "| mode | model | code | claim | status | line | findings | predicted bytes/call |",
                "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for u in data["unconfirmed_claims"]:
            out.append(f"| {u['mode']} | {u['model']} | {u['code']} | {u['phase']} | {u['status']} "
                       f"| `{u['path']}:{u['line']}` | {u['count']} | {human_bytes(u['bytes'])} |")
    problems = [x for x in data["models"] if x["status"] != "ok"]
    if problems:
        out += ["", "Not measured:", ""]
        for x in problems:
            what = {"not-built": "not built", "crash": "CRASH in fxlint", "died": "worker DIED",
                    "timeout": "TIMEOUT"}[x["status"]]
            out.append(f"- {x['name']} ({x['mode']}): {what} ({_cell(x['reason'], 300)})")

    for mode in modes:
        out += ["", f"### Remaining misses by kind ({mode})", "",
                "Avoidable copies on lines that carry no finding, grouped by the copy's op chain "
                "(top op > copy op; `backward:` in front for a backward copy, attributed to the forward line "
                "that made its autograd node). Bytes per call are summed over the missed model-lines.", "",
                "| copy (top op > copy op) | kind | distinct lines | model-lines | bytes/call (sum) | largest line "
                "| typical sizes | example | source |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for k in data["misses_by_kind"][mode]:
            ex = k["example"]
            out.append(f"| `{_cell(k['label'])}` | {k['kind']} | {k['lines']} | {k['model_lines']} "
                       f"| {human_bytes(k['bytes'])} | {human_bytes(k['max_line_bytes'])} "
                       f"| {', '.join(human_bytes(x) for x in k['sizes'][:3])} "
                       f"| `{ex['path']}:{ex['line']}` ({ex['model'].split('/', 1)[1]}) | `{_cell(ex['code'], 80)}` |")
        if not data["misses_by_kind"][mode]:
            out.append("| (none) | | | | | | | | |")

    if not per_model:  # the README's summary: the tables above; the rest is in docs/census.md
        return "\n".join(out) + "\n"

    for mode in modes:
        out += ["", f"### Recall by kind ({mode})", "",
                "| copy (top op > copy op) | model-lines covered / lines | bytes/call covered |", "| --- | --- | --- |"]
        for k in data["recall_by_kind"][mode]:
            out.append(f"| `{_cell(k['label'])}` | {k['covered_lines']} / {k['lines']} "
                       f"| {human_bytes(k['covered_bytes'])} of {human_bytes(k['bytes'])} |")

    for mode in modes:
        missed = missed_lines([x for x in data["models"] if x["mode"] == mode])
        out += ["", f"### Missed lines ({mode})", "",
                "Every distinct line with an avoidable copy and no finding, most bytes first.", "",
                "| line | phase | copies | models | bytes/call (sum) | source |",
                "| --- | --- | --- | --- | --- | --- |"]
        for r in missed:
            models = ", ".join(x.split("/", 1)[1] for x in r["models"][:3]) + (
                f" +{len(r['models']) - 3}" if len(r["models"]) > 3 else "")
            out.append(f"| `{r['path']}:{r['line']}` | {r['phase']} | {', '.join(f'`{lbl}`' for lbl in r['labels'])} "
                       f"| {models} | {human_bytes(r['bytes'])} | `{_cell(r['code'], 80)}` |")
    out += ["", "### Per model", "",
            "| model | mode | input | status | claims c / r / n | backward claims c / r / n | recall lines "
            "| recall bytes | findings | lint s | audit s |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for x in data["models"]:
        if x["status"] != "ok":
            out.append(f"| {x['name']} | {x['mode']} | {_cell(x['input'], 50)} | {x['status']} | | | | | | | |")
            continue
        c, b, r = x["claims"], x["backward_claims"], x["recall"]
        out.append(f"| {x['name']} | {x['mode']} | {_cell(x['input'], 50)} | ok "
                   f"| {c['confirmed']} / {c['refuted']} / {c['not_run']} "
                   f"| {_claims_cell(b) if x['mode'] == 'train' else '-'} "
                   f"| {r['covered_lines']} / {r['lines']} "
                   f"| {human_bytes(r['covered_bytes'])} / {human_bytes(r['bytes'])} "
                   f"| {len(x['findings'])} | {_secs(x['times']['lint_s'])} | {_secs(x['times']['audit_s'])} |")
    return "\n".join(out) + "\n"


def _readme_text(path: Path) -> str:
    try:
        text = path.read_text()
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc}") from None
    if MARK_START not in text or MARK_END not in text.split(MARK_START, 1)[-1]:
        raise ValueError(f"{path} has no {MARK_START} ... {MARK_END} section")
    return text


def update_readme(path: Path, markdown: str) -> None:
    """Replace the text between the census markers of ``path`` with ``markdown``."""
    text = _readme_text(path)
    head, rest = text.split(MARK_START, 1)
    _, tail = rest.split(MARK_END, 1)
    path.write_text(f"{head}{MARK_START}\n{markdown}{MARK_END}{tail}")


# --------------------------------------------------------------------------- command line


def select(models: str | None, library: str | None, quick: bool) -> list[Any]:
    from census_models import QUICK, REGISTRY

    archs = list(REGISTRY.values())
    if quick:
        archs = [REGISTRY[n] for n in QUICK]
    if library:
        archs = [a for a in archs if a.library == library]
    if models:
        wanted = [w.strip() for w in models.split(",") if w.strip()]
        picked = []
        for w in wanted:
            hits = [a for a in archs if a.name == w or a.name.split("/", 1)[1] == w or fnmatch.fnmatch(a.name, w)
                    or fnmatch.fnmatch(a.name.split("/", 1)[1], w)]
            if not hits:
                raise ValueError(f"no census model matches {w!r}" + (f" in --library {library}" if library else "")
                                 + "; known: " + ", ".join(a.name for a in REGISTRY.values()))
            picked += [a for a in hits if a not in picked]
        archs = picked
    if not archs:
        raise ValueError("the selection is empty")
    return archs


def _fmt_s(s: float) -> str:
    s = int(round(s))
    return f"{s // 60}:{s % 60:02d}"


def progress_line(i: int, n: int, rec: dict[str, Any], took: float, elapsed: float) -> str:
    left = elapsed / i * (n - i)
    head = f"[{i:>{len(str(n))}}/{n}] {rec['name']:<44} {rec.get('mode', 'infer'):<5} {took:6.1f}s "
    if rec["status"] != "ok":
        body = f"{rec['status'].upper()}: {_cell(rec['reason'], 120)}"
    else:
        c, r = rec["claims"], rec["recall"]
        b = rec.get("backward_claims") or {}
        body = (f"lint {rec['times']['lint_s']:.1f}s (audit {rec['times']['audit_s']:.1f}s)  "
                f"claims {c['confirmed']}/{c['confirmed'] + c['refuted']} confirmed"
                + (f", {c['not_run']} not-run" if c["not_run"] else "")
                + (f", backward {b['confirmed']}/{b['confirmed'] + b['refuted']}"
                   if b.get("confirmed") or b.get("refuted") else "")
                + f"  recall {r['covered_lines']}/{r['lines']} lines")
    return f"{head}{body}  | {_fmt_s(elapsed)} elapsed, ~{_fmt_s(left)} left"


def interleaved(archs: list[Any]) -> list[Any]:
    """The models, one library after another in turn (the order within a library kept)."""
    queues = [[a for a in archs if a.library == lib] for lib in LIBRARIES]
    out: list[Any] = []
    while any(queues):
        for q in queues:
            if q:
                out.append(q.pop(0))
    return out + [a for a in archs if a.library not in LIBRARIES]


def read_checkpoint(path: Path) -> list[dict[str, Any]]:
    """The model records a run wrote to ``path`` (JSON lines); a torn last line is dropped."""
    records = []
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return []
    for line in lines:
        try:
            records.append(json.loads(line))
        except ValueError:
            continue
    return records


def record_key(rec: dict[str, Any]) -> tuple[str, str]:
    """(name, mode) of a model record; a record of schema 1 (no mode) is an inference one."""
    return rec["name"], rec.get("mode") or "infer"


def run_census(archs: list[Any], *, min_bytes: int = DEFAULT_MIN_BYTES, timeout_s: float = DEFAULT_TIMEOUT_S,
               in_process: bool = False, log: Any = sys.stderr, checkpoint: Path | None = None,
               done: list[dict[str, Any]] | None = None, modes: tuple[str, ...] = ("infer",)) -> list[dict[str, Any]]:
    """Run ``archs`` one by one, each in every mode of ``modes`` in turn. Each finished (model, mode)
    is appended to ``checkpoint`` (JSON lines) at once, so a run that is stopped (Ctrl-C, SIGTERM)
    loses nothing: ``--resume`` goes on from it, and the records done so far are rendered as a
    partial census. ``done``: records of an earlier run, kept and skipped (by name and mode)."""
    results = list(done or [])
    finished = {record_key(r) for r in results}
    todo = [(a, mode) for a in archs for mode in modes if (a.name, mode) not in finished]
    total = len(results) + len(todo)
    worker = None if in_process or not todo else Worker(min_bytes)
    t0 = time.perf_counter()
    try:
        for i, (arch, mode) in enumerate(todo, len(results) + 1):
            t = time.perf_counter()
            rec = run_model(arch.name, min_bytes, mode) if worker is None else worker.run(arch, timeout_s, mode)
            results.append(rec)
            if checkpoint is not None:
                with checkpoint.open("a") as fh:
                    fh.write(json.dumps(rec, default=str) + "\n")
            if log is not None:
                print(progress_line(i, total, rec, time.perf_counter() - t, time.perf_counter() - t0),
                      file=log, flush=True)
    finally:
        if worker is not None:
            worker.close()
    return results


def main(argv: Iterable[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", help="comma-separated: library/name, name, or a glob (e.g. 'timm/swin*')")
    p.add_argument("--library", choices=LIBRARIES)
    p.add_argument("--quick", action="store_true", help="the fast subset (census_models.QUICK)")
    p.add_argument("--mode", choices=(*MODES, "both"), default="both",
                   help="infer: eval() under no_grad, forward copies; train: train(), a training step, forward and "
                        "backward copies; both (default): each model in both modes")
    p.add_argument("--out", default=str(ROOT / "out"), help="folder for census.json and census.md (default: out/)")
    p.add_argument("--min-bytes", type=int, default=DEFAULT_MIN_BYTES,
                   help=f"leave out lines copying fewer bytes per call (default {DEFAULT_MIN_BYTES})")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds per model (default 900)")
    p.add_argument("--in-process", action="store_true", help="no worker process (debugging; a crash ends the run)")
    p.add_argument("--from-json", metavar="PATH", nargs="+",
                   help="render a saved census.json; run nothing. Several (one run per mode, e.g. out/census.json "
                        "out_train/census.json): their model records are rendered as one census, a later file's "
                        "record of the same model and mode replacing an earlier one's")
    p.add_argument("--readme", metavar="PATH", help="also write the tables between the census markers of PATH")
    p.add_argument("--resume", action="store_true",
                   help="go on from OUT/census.partial.jsonl (each finished model is written there at once): "
                        "the models it holds are kept, not run again")
    p.add_argument("--interleave", action="store_true",
                   help="run the libraries' models in turn (timm, torchvision, transformers, timm, ...), so that a "
                        "run stopped early still covers every library")
    args = p.parse_args(argv)
    if args.min_bytes < 0:
        p.error("--min-bytes must be >= 0")
    if args.timeout <= 0:
        p.error("--timeout must be > 0")
    if args.readme:
        try:
            _readme_text(Path(args.readme))  # before a long run, not after it
        except ValueError as exc:
            p.error(str(exc))

    if args.from_json:
        runs = []
        for path in args.from_json:
            try:
                one = json.loads(Path(path).read_text())
            except (OSError, ValueError) as exc:
                p.error(f"cannot read {path}: {exc}")
            if isinstance(one, dict) and one.get("schema") == 1:
                one = upgrade_v1(one)
            if not isinstance(one, dict) or one.get("schema") != SCHEMA_VERSION:
                p.error(f"{path}: not a census JSON of schema {SCHEMA_VERSION} (or 1)")
            runs.append(one)
        data = runs[0] if len(runs) == 1 else merge_runs(runs)
    else:
        try:
            archs = select(args.models, args.library, args.quick)
        except ValueError as exc:
            p.error(str(exc))
        command = "python bench/census.py" + ("" if not argv else " " + " ".join(argv))
        started = time.strftime("%Y-%m-%d %H:%M")
        modes = MODES if args.mode == "both" else (args.mode,)
        where = "in process" if args.in_process else "process"
        print(f"census: {len(archs)} models x {'/'.join(modes)}, worker {where}, "
              f"min {args.min_bytes} B per line", file=sys.stderr, flush=True)
        if args.interleave:
            archs = interleaved(archs)
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        checkpoint = out / "census.partial.jsonl"
        done = read_checkpoint(checkpoint) if args.resume else []
        if not args.resume:
            checkpoint.write_text("")
        selected = {(a.name, mode) for a in archs for mode in modes}
        done = [r for r in done if record_key(r) in selected]
        t0 = time.perf_counter()
        results: list[dict[str, Any]] = []
        stopped = None

        def _stop(signum: int, _frame: Any) -> None:
            raise KeyboardInterrupt(signal.Signals(signum).name)

        previous = signal.signal(signal.SIGTERM, _stop)
        try:
            results = run_census(archs, min_bytes=args.min_bytes, timeout_s=args.timeout,
                                 in_process=args.in_process, checkpoint=checkpoint, done=done, modes=modes)
        except KeyboardInterrupt as exc:
            stopped = str(exc) or "SIGINT"
            results = read_checkpoint(checkpoint)
            results = [r for r in results if record_key(r) in selected]
            print(f"census: stopped ({stopped}) after {len(results)} of {len(selected)} runs; rendering those "
                  f"(go on with --resume)", file=sys.stderr, flush=True)
        finally:
            signal.signal(signal.SIGTERM, previous)
        data = build_data(results, command=command, started=started, duration_s=time.perf_counter() - t0,
                          settings={"min_bytes": args.min_bytes, "modes": list(modes), "timeout_s": args.timeout,
                                    "quick": args.quick, "library": args.library, "models": args.models,
                                    "selected": len(selected), "partial": len(results) < len(selected)})
        (out / "census.json").write_text(json.dumps(data, indent=1, default=str) + "\n")
    md = render_markdown(data)
    if not args.from_json:
        (Path(args.out) / "census.md").write_text(md)
        print(f"census: wrote {Path(args.out) / 'census.json'} and {Path(args.out) / 'census.md'}", file=sys.stderr)
    if args.readme:
        update_readme(Path(args.readme), render_markdown(data, per_model=False))
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
