"""Small graph helpers shared by rule modules (kept private to the passes package)."""

from __future__ import annotations

import torch

from ..canon import CanonNode
from ..tensor.info import TensorInfo


def real_users(node: CanonNode) -> list[CanonNode]:
    """``node.users`` without the metadata checks torch.export inserts (``_assert_tensor_metadata``,
    ``_assert_scalar``...): they read nothing."""
    return [u for u in node.users if not u.op.startswith("_assert")]


def device_of(t: TensorInfo | None) -> torch.device | None:
    return t.device if t is not None else None


def same_device(a: torch.device | None, b: torch.device | None) -> bool | None:
    if a is None or b is None:
        return None
    if a.type != b.type:
        return False
    return a.index == b.index or a.index is None or b.index is None
