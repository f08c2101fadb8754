"""Reading ``torch.profiler``'s event tree (``kineto_results.experimental_event_tree()``): what kind an event is,
and the element count of a recorded size. One reading for the eager audit (``profiler``), its dataflow
(``computed_gathers``) and the compiled-program audit (``compiled_audit``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def is_op(e: Any) -> bool:
    """An operator event (``aten::...``, a record function), not a memory or Python event."""
    return type(e.extra_fields).__name__ == "_ExtraFields_TorchOp"


def is_allocation(e: Any) -> bool:
    """A memory event: ``alloc_size`` > 0 allocates, < 0 frees."""
    return type(e.extra_fields).__name__ == "_ExtraFields_Allocation"


def numel(sizes: Iterable[int]) -> int:
    """The number of elements of a tensor of these sizes (1 for a scalar)."""
    n = 1
    for s in sizes:
        n *= int(s)
    return n
