"""What the consumers of a copy need: would they work as well on the layout before the copy?
Shared by FXL101 and FXL102 (kept private to the passes package)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

from ..canon import CanonNode, GraphView
from ..canon.text import call_text, line_of
from ..tensor.info import Dim, TensorInfo
from ..tensor.viewable import check_view
from ._util import real_users

#: ops that reduce to a fresh tensor: they read any strides, and their output layout is their own
REDUCTION_OPS = frozenset({
    "sum", "mean", "amax", "amin", "max", "min", "prod", "norm", "var", "std", "logsumexp", "all", "any",
    "argmax", "argmin", "count_nonzero", "nansum", "nanmean", "linalg_vector_norm",
})

ConsumerVerdict = Literal["needs", "unknown", "agnostic"]
NEEDS: Final = "needs"
UNKNOWN: Final = "unknown"
AGNOSTIC: Final = "agnostic"


@dataclass
class Need:
    """How the consumers of a copy depend on it.

    ``verdict``: ``needs`` (a consumer cannot work on the pre-copy layout without a copy of its
    own), ``unknown`` (a consumer whose stride handling is not modelled here, or the value
    escapes the graph), ``agnostic`` (every consumer reads any strides: the copy buys nothing).
    ``why``: a short text per consumer that decided it.
    """

    verdict: ConsumerVerdict
    why: list[str] = field(default_factory=list)
    consumers: list[CanonNode] = field(default_factory=list)


_RANK = {AGNOSTIC: 0, UNKNOWN: 1, NEEDS: 2}


def consumers_need(node: CanonNode, pre: TensorInfo, view: GraphView, depth: int = 0) -> Need:
    """Would the users of ``node`` (a contiguous copy of data laid out as ``pre``) work as well on
    ``pre`` directly? Follows elementwise ops, permutes and views a few levels down."""
    need = Need(AGNOSTIC)
    outs = set(view.outputs)

    def worst(verdict: ConsumerVerdict, why: str, who: CanonNode) -> None:
        need.consumers.append(who)
        if _RANK[verdict] > _RANK[need.verdict]:
            need.verdict = verdict
            need.why = [why]
        elif verdict == need.verdict and verdict != AGNOSTIC:
            need.why.append(why)

    if node in outs:
        worst(UNKNOWN, "the caller (it is returned)", node)
    for u in real_users(node):
        if u.kind == "output":
            continue
        if u.op in ("view", "reshape") and u.input is node and u.tensor is not None:
            chk = check_view(pre.shape, pre.stride, u.tensor.shape)
            if chk.viewable is False:
                verb = "cannot view" if u.op == "view" else "would copy"
                worst(NEEDS, f"`{call_text(u)}` at {line_of(u)} {verb} the original layout", u)
            elif chk.viewable is None or depth >= 3:
                worst(UNKNOWN, f"`{call_text(u)}` at {line_of(u)}", u)
            else:
                after = _relayout(pre, u.tensor.shape, chk.strides)
                sub = consumers_need(u, after, view, depth + 1)
                worst(sub.verdict if sub.verdict != NEEDS else NEEDS, "; ".join(sub.why), u)
        elif u.op == "permute" and u.input is node and u.args.get("dims") is not None and depth < 3:
            dims = u.args["dims"]
            after = _relayout(pre, tuple(pre.shape[d] for d in dims), tuple(pre.stride[d] for d in dims))
            sub = consumers_need(u, after, view, depth + 1)
            worst(sub.verdict, "; ".join(sub.why), u)
        elif u.op in REDUCTION_OPS or u.op == "contiguous":
            worst(AGNOSTIC, "", u)
        elif (u.is_pointwise or u.op in ("clone", "to")) and u.tensor is not None and depth < 3:
            if tuple(u.tensor.shape) != tuple(pre.shape):
                worst(UNKNOWN, f"`{u.op}` at {line_of(u)} (broadcasts)", u)
                continue
            # an elementwise result takes its inputs' layout: what its users need, this copy may
            sub = consumers_need(u, pre, view, depth + 1)
            verdict = UNKNOWN if sub.verdict == NEEDS else sub.verdict
            worst(verdict, "; ".join(sub.why) or f"`{u.op}` at {line_of(u)}", u)
        else:
            worst(UNKNOWN, f"`{u.op}` at {line_of(u)}", u)
    return need


def _relayout(t: TensorInfo, shape: Sequence[Dim], stride: Sequence[Dim] | None) -> TensorInfo:
    return TensorInfo(shape=tuple(shape), stride=tuple(stride or ()), storage_offset=t.storage_offset,
                      dtype=t.dtype, device=t.device, requires_grad=t.requires_grad)


__all__ = ["AGNOSTIC", "NEEDS", "REDUCTION_OPS", "UNKNOWN", "Need", "consumers_need"]
