"""The JSON schema of ``fxlint lint --format json`` (and ``Report.to_dict()``).

Generated from the code, so it cannot drift: the finding's typed fields come
from ``fxlint.findings.Finding``, and each rule's ``details`` from the field
annotations of the violation type it declares (``@rule(..., violation=...)``).
``fxlint docs`` writes it to ``docs/report.schema.json``; the tests validate
real reports against it (JSON Schema draft 2020-12).
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from typing import Any, Union

from ..findings import Finding, Saving, Severity

DRAFT = "https://json-schema.org/draft/2020-12/schema"

_FIELD_DOCS = {
    "code": "rule code, e.g. FXL401",
    "name": "rule name, e.g. index-as-slice",
    "severity": "error, warning or info (after the project's severity overrides)",
    "message": "what is wrong and what it costs, in one paragraph",
    "file": "the user's source file (never a torch or fxlint frame); null for graphs without source",
    "line": "the line in file",
    "module_path": "the module that ran the line, e.g. encoder.layers.3.attn",
    "bytes": "bytes copied per call (null when not a copy, or when dynamic shapes decide: see bytes_expr)",
    "fix": "how to fix it",
    "bytes_expr": "the bytes as a formula of Dynamo's size symbols, when dynamic",
    "source": "the source line, stripped",
    "node": "the FX node name",
    "graph": "which captured graph, e.g. 'graph 0'",
    "status": "runtime cross-check (confirm=True): confirmed, refuted or not-run",
    "suppressed": "silenced by a comment or per-file-ignores (in 'suppressed' only)",
    "copy_sizes": "bytes of each copy event the finding stands for, when several (or null)",
    "backward_bytes": "bytes the backward copies again because of this site (0: none; null: not modelled)",
    "backward_sites": "[file, line] pairs, other than the finding's, where autograd makes those backward copies "
                      "(a `.contiguous()` paid again in the backward of a `linear` in another module)",
    "repeats": "times the line makes this copy per call (a loop, or one statement for several values); "
               "bytes is the total",
    "tensor_shape": "for a claim that nothing is copied: the tensor it is about",
    "dedup": "tells two findings of one rule on one line apart",
    "time_ns": "with the runtime audit: time of the copies that back it, per call: the call timed without the "
               "profiler, split by the profiled shares",
    "nodes": "with repeats > 1: the FX node of each instance (null: one instance)",
    "compiled": "what Inductor's lowering does with a copy finding's copy: survives, fused (no memory traffic of "
                "its own) or unknown; null when not compiled with Inductor or not a copy",
    "compiled_bytes": "with compiled='survives': bytes the compiled program copies per call for it (fused: 0); "
                      "for an FXL7xx finding, the copy Inductor makes there",
    "compiled_backward_bytes": "when the compiled backward graph was read (a training graph): bytes it copies for "
                               "the finding per training step (null: not read)",
    "ranks": "under torch.distributed, gathered across ranks: the ranks that found it (null: not gathered)",
    "via": "the frames inside the reported line, outermost first: pass-through library code (einops, "
           "[tool.fxlint] passthrough) and torch's own functions between the user's call and the op (null: none)",
    "compiled_only": "the line is in a branch only torch.compile takes (`if is_compiling():`): the condition and "
                     "where it is; eager runs the other branch (null: not such a line)",
    "eager_site": "with the runtime audit, for a compiled_only finding: [file, line] where eager makes the same "
                  "copy instead (null: none found, or not such a finding)",
    "details": "the rule's own data: the fields of its violation type",
}

_SAVING_DOCS = {
    "bytes_per_call": "bytes fixing it saves per call: its copies' bytes (null: not a copy finding, e.g. a gradient "
                      "cut, or a symbolic size)",
    "bytes_per_step": "with the backward's copies (backward_bytes), per training step (null: not modelled, or the "
                      "backward adds nothing)",
    "time_ns": "measured with the runtime audit (confirm=True): its copies' time, the call timed without the "
               "profiler split by the profiled shares, per call (per training step with train=True); null: not "
               "measured",
    "gain": "what fixing it gains besides bytes (a gradient cut: the parameters that train again); null: none",
}


def _json_type(tp: Any) -> dict[str, Any]:
    """A JSON schema for a Python annotation (what ``Violation.to_dict`` produces from it)."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is type(None):
        return {"type": "null"}
    if origin in (Union, types.UnionType):
        return {"anyOf": [_json_type(a) for a in args]}
    if origin is typing.Literal:
        return {"enum": list(args)}
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": "integer"}
    if tp is float:
        return {"type": "number"}
    if tp is str:
        return {"type": "string"}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return {"enum": [m.value for m in tp]}
    if origin in (tuple, list, typing.Sequence) or tp in (tuple, list):
        if args and not (len(args) == 2 and args[1] is Ellipsis) and origin is tuple:
            return {"type": "array", "prefixItems": [_json_type(a) for a in args], "items": False}
        item = args[0] if args else Any
        return {"type": "array", "items": _json_type(item)}
    if origin in (dict, typing.Mapping) or tp is dict:
        return {"type": "object"}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _dataclass_schema(tp)
    return {}  # Any, or a type rendered as text: no constraint


def _dataclass_schema(cls: type, docs: dict[str, str] | None = None, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    props: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name in skip or f.name.startswith("_"):
            continue
        s = _json_type(hints.get(f.name, Any))
        if docs and f.name in docs:
            s = {**s, "description": docs[f.name]}
        props[f.name] = s
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


SAVING: dict[str, Any] = {**_dataclass_schema(Saving, _SAVING_DOCS),
                          "description": "what fixing it is expected to save (never an invented number)"}


def finding_schema(registry: Any = None) -> dict[str, Any]:
    """One finding: the typed fields, and per rule code the shape of ``details``."""
    from ..registry import default_registry

    base = _dataclass_schema(Finding, _FIELD_DOCS, skip=("violation",))
    base["properties"]["severity"] = {"enum": [s.value for s in Severity], "description": _FIELD_DOCS["severity"]}
    base["properties"]["details"] = {"type": "object", "description": _FIELD_DOCS["details"]}
    base["required"].append("details")
    base["properties"]["saving"] = SAVING
    base["required"].append("saving")
    base["properties"]["group"] = {"type": ["string", "null"],
                                   "description": "the id of its (code, source line) group in 'groups'"}
    for key, what in (("column", "first column"), ("end_line", "last line"), ("end_column", "column after the end")):
        base["properties"][key] = {"type": ["integer", "null"], "minimum": 1,
                                   "description": f"the {what} (1-based) of the expression on the line, where "
                                                  "its rule's source fix locates it (fxlint fix --diff)"}
    reg = registry or default_registry()
    per_rule = []
    for rule in reg.rules():
        if rule.violation is None:
            continue
        per_rule.append({
            "if": {"properties": {"code": {"const": rule.code}}, "required": ["code"]},
            "then": {"properties": {"details": _dataclass_schema(rule.violation)}},
        })
    if per_rule:
        base["allOf"] = per_rule
    return base


_NULL_INT = {"type": ["integer", "null"]}
_NULL_STR = {"type": ["string", "null"]}
GROUP: dict[str, Any] = {
    "type": "object",
    "required": ["id", "code", "instances", "bytes", "message"],
    "additionalProperties": False,
    "properties": {
        "id": {"type": "string", "description": "CODE@location"},
        "code": {"type": "string"}, "name": {"type": "string"},
        "severity": {"enum": [s.value for s in Severity]},
        "file": _NULL_STR, "line": _NULL_INT, "node": _NULL_STR, "location": {"type": "string"},
        "library": {**_NULL_STR, "description": "the installed package the line is in (null: the user's file)"},
        "instances": {"type": "integer", "description": "findings (module instances) on this line"},
        "modules": {**_NULL_STR, "description": "the module paths, compressed: blocks.{0..23}.attn"},
        "module_paths": {"type": "array", "items": {"type": "string"}},
        "bytes": {**_NULL_INT, "description": "bytes per call, summed over the instances"},
        "bytes_expr": _NULL_STR, "backward_bytes": _NULL_INT,
        "time_ns": {**_NULL_INT, "description": "measured time of its copies per call (with the audit)"},
        "message": {"type": "string"}, "fix": _NULL_STR,
        "statuses": {"type": "object", "additionalProperties": {"type": "integer"}},
        "saving": SAVING,
    },
}


def report_schema(registry: Any = None) -> dict[str, Any]:
    """The schema of one report (``fxlint lint --format json``)."""
    finding = {"$ref": "#/$defs/finding"}
    return {
        "$schema": DRAFT,
        "$id": "https://fxlint.dev/schemas/report.schema.json",
        "title": "fxlint report",
        "type": "object",
        "required": ["findings", "suppressed", "baselined", "summary", "errors"],
        "properties": {
            "version": {"type": "string", "description": "the fxlint version that wrote it"},
            "findings": {"type": "array", "items": finding,
                         "description": "active findings, most harmful first (errors, warnings, infos), then "
                                        "most bytes"},
            "suppressed": {"type": "array", "items": finding},
            "baselined": {"type": "array", "items": finding},
            "summary": {"type": "object", "required": ["findings", "errors", "warnings", "infos", "bytes_per_call"],
                        "properties": {k: {"type": "integer"} for k in (
                            "findings", "errors", "warnings", "infos", "suppressed", "baselined",
                            "bytes_per_call", "graphs", "graph_breaks", "internal_errors", "confirmed",
                            "refuted", "not_run")} | {"by_code": {"type": "object",
                                                                 "additionalProperties": {"type": "integer"}},
                                                      "compiled": {
                                                          "type": "object",
                                                          "description": "with Inductor's verdicts: findings that "
                                                                         "survive, are fused, are unknown, the "
                                                                         "bytes per call that survive and, with "
                                                                         "a compiled backward, its bytes per step",
                                                          "properties": {k: {"type": "integer"} for k in (
                                                              "survives", "fused", "unknown", "bytes_per_call",
                                                              "backward_bytes_per_step")}}}},
            "groups": {"type": "array", "items": GROUP,
                       "description": "one per (code, source line), in the order the text report shows them"},
            "errors": {"type": "array", "items": {"type": "string"},
                       "description": "fxlint internal failures (a rule that raised), one line each"},
            "runtime": {"type": "object", "description": "present with confirm=True: the audit's summary and the "
                                                         "runtime copies no finding explains"},
            "compiled_check": {"type": "object", "required": ["summary", "checks", "misses"],
                               "description": "present with compiled=True and confirm=True: each survives/fused "
                                              "verdict held to the measured compiled program (confirmed, refuted, "
                                              "not-run, not-known), the share of its copies on a line with a "
                                              "finding, and its copies on lines without one",
                               "properties": {"summary": {"type": "object"},
                                              "checks": {"type": "array", "items": {"type": "object"}},
                                              "misses": {"type": "array", "items": {"type": "object"}}}},
            "first_call": {"type": "object", "required": ["caches", "findings"], "additionalProperties": False,
                           "description": "present when the first call filled a cache the later calls read: the "
                                          "report is then the second call's, and these findings are the first "
                                          "call's alone",
                           "properties": {"caches": {"type": "array", "items": {"type": "string"},
                                                     "description": "module attributes the first call filled"},
                                          "findings": {"type": "array", "items": finding}}},
        },
        "$defs": {"finding": finding_schema(registry)},
    }


def zoo_schema(registry: Any = None) -> dict[str, Any]:
    """``fxlint lint --zoo --format json``: one report per model."""
    one = report_schema(registry)
    defs = one.pop("$defs")
    one.pop("$schema"), one.pop("$id")
    return {"$schema": DRAFT, "title": "fxlint zoo report", "type": "object", "required": ["models"],
            "properties": {"models": {"type": "object", "additionalProperties": {"$ref": "#/$defs/report"}}},
            "$defs": {**defs, "report": one}}
