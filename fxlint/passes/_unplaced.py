"""Factories without ``device=`` whose tensor meets the model's own tensors: on this CPU nothing moves
(FXL107 is quiet), on a GPU each one is FXL107's host-to-device copy (or the error of mixed devices).

Not a rule: ``fxlint.lint`` asks it when no target device is given on a machine without CUDA, and the
text report then says once that ``--device cuda`` lints the model for the GPU (docs/device.md).
"""

from __future__ import annotations

from collections.abc import Iterable

from ..canon import CanonNode, GraphView
from ._factory import from_cpu_factory


def unplaced_factories(views: Iterable[GraphView]) -> list[CanonNode]:
    """The factory nodes built without ``device=`` whose value (through views, reshapes, conversions and
    CPU arithmetic) is an operand of an op that also takes a tensor of the model's own (an input, a
    parameter or what was computed from them), once each, in graph order."""
    found: dict[int, CanonNode] = {}
    for view in views:
        for node in view:
            if from_cpu_factory(node) is not None:
                continue  # still the factory's own tensor: where it meets the model is further on
            inputs = node.tensor_inputs
            factories = [from_cpu_factory(i) for i in inputs]
            own = [i for i, f in zip(inputs, factories) if f is None and i.tensor is not None and i.tensor.ndim > 0]
            if not own:
                continue
            for f in factories:
                if f is not None and f.args.get("device") is None:
                    found.setdefault(id(f), f)
    return list(found.values())
