"""Roles of the inputs of a Dynamo graph (user input, parameter, buffer) and their dotted names,
read from each placeholder's source; ``capture`` passes them to ``canon.build_view``."""

from __future__ import annotations

import re
from typing import Any

import torch
import torch.fx as fx

from ..util.source import clean_path


def dynamo_roles(gm: fx.GraphModule) -> dict[str, tuple[str, str | None]]:
    """Roles of the placeholders of a Dynamo graph, from each input's source."""
    roles: dict[str, tuple[str, str | None]] = {}
    param_sources = getattr(gm, "_param_name_to_source", None) or {}
    raw: dict[str, tuple[str, str | None]] = {}
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            ga = node.meta.get("grapharg")
            src = getattr(ga, "source", None)
            name = _source_name(src)
            example = getattr(ga, "fake_tensor", None) if ga is not None else None
            kind = "input"
            if name and "._parameters." in _raw_source_text(src):
                kind = "parameter"
            elif name and "._buffers." in _raw_source_text(src):
                kind = "buffer"
            elif isinstance(example, torch.nn.Parameter):
                kind = "parameter"
            raw[node.name] = (kind, name)
        elif node.op == "get_attr":
            src = param_sources.get(str(node.target))
            if src is not None:
                raw[node.name] = ("parameter", _source_name(src))
    # One model in the frame (`self`, or the module a wrapper got): names are relative
    # to it. Several (`def step(G, D, z)`, two closure modules): keep each local's name,
    # or G's and D's parameters would share names.
    roots = {m.group(1) for kind, name in raw.values() if kind != "input" and name
             for m in [re.match(r"^L\['([^']*)'\]", name)] if m}
    for node_name, (kind, name) in raw.items():
        roles[node_name] = (kind, clean_path(name, keep_root=len(roots) > 1) if kind != "input" else name)
    return roles


def _source_name(src: Any) -> str | None:
    if src is None:
        return None
    n = getattr(src, "name", None)
    if callable(n):
        try:
            n = n()
        except Exception:  # noqa: BLE001
            return None
    return str(n) if n is not None else None


def _raw_source_text(src: Any) -> str:
    text = _source_name(src) or ""
    return text.replace("['", ".").replace("']", "")


__all__ = ["dynamo_roles"]
