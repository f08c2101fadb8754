"""Small helpers shared by rule modules (kept private to the passes package)."""

from __future__ import annotations

import re

from ..canon import CanonNode
from ..indexing import progression, slice_text  # noqa: F401  (re-exported for rule modules)


def operand_name(node: CanonNode | None) -> str:
    """A short name for a node in messages: the user's parameter name or the node name."""
    if node is None:
        return "x"
    if node.kind == "input":  # Dynamo names inputs by source (L['x']); the user wrote x
        m = re.fullmatch(r"L\['(\w+)'\]", node.param_name or "")
        return m.group(1) if m else (node.name.removeprefix("l_").removesuffix("_") or node.name)
    if node.param_name:
        return node.param_name
    return node.name
