"""Small helpers shared by rule modules (kept private to the passes package)."""

from __future__ import annotations

from ..canon import CanonNode
from ..indexing import progression, slice_text  # noqa: F401  (re-exported for rule modules)


def operand_name(node: CanonNode | None) -> str:
    """A short name for a node in messages: the user's parameter name or the node name."""
    if node is None:
        return "x"
    if node.param_name:
        return node.param_name
    if node.kind == "input":
        return node.name.removeprefix("l_").removesuffix("_") or node.name
    return node.name
