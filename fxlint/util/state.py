"""Running the user's model without leaving a trace: ``preserved_state`` restores what a run may change.

Below capture, the runtime audit, the benchmark and the model-error explanation alike: each runs
the user's model and hands it back as it was (buffers, parameter and buffer slots, RNG state,
example inputs).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch

__all__ = ["preserved_state", "tensors_in"]


@contextlib.contextmanager
def preserved_state(module: torch.nn.Module | None, inputs: Any = ()) -> Iterator[None]:
    """Restore buffers, the RNG state and the example inputs after running the user's model.

    A model that writes into its inputs in place (``x.add_(1)``, ``x[0] = 0``) would otherwise
    hand the caller changed tensors after a lint or an audit. Each input tensor is copied before
    the run (what that costs: the inputs' size once) and written back only if it changed."""
    buffers: list[tuple[torch.Tensor, torch.Tensor]] = []
    params: list[tuple[torch.Tensor, int]] = []
    # which tensor object each module attribute holds: a capture may rebind one (Dynamo's export
    # replays `self.buf += x` as a store of its own fake result into the module)
    slots: list[tuple[dict[str, Any], str, Any]] = []
    if module is not None:
        for sub in module.modules():
            for table in (sub._parameters, sub._buffers):
                slots.extend((table, name, value) for name, value in table.items())
        with torch.no_grad():
            buffers = [(b, b.detach().clone()) for b in module.buffers()]
        params = [(p, p._version) for p in module.parameters()]
    param_ids = {id(p) for p, _ in params} | {id(b) for b, _ in buffers}
    with torch.no_grad():
        saved_inputs = [(t, t._version, t.detach().clone()) for t in _tensors(inputs)
                        if id(t) not in param_ids and not isinstance(t, torch._subclasses.FakeTensor)]
    rng = torch.get_rng_state()
    cuda_rng = torch.cuda.get_rng_state_all() if torch.cuda.is_available() and torch.cuda.is_initialized() else None
    try:
        yield
    finally:
        for table, name, value in slots:
            if table.get(name) is not value:
                table[name] = value
        with torch.no_grad():
            for live, saved in buffers:
                if live._version != saved._version or not torch.equal(live, saved):
                    live.copy_(saved)
            for live, version, saved in saved_inputs:
                if live._version != version:
                    live.copy_(saved)
        torch.set_rng_state(rng)
        if cuda_rng is not None:
            torch.cuda.set_rng_state_all(cuda_rng)
        changed = [p for p, v in params if p._version != v]
        if changed:
            import warnings

            warnings.warn(
                f"fxlint: the model changed {len(changed)} parameter(s) in place while it ran; "
                "they were not restored",
                stacklevel=3,
            )


def tensors_in(x: Any) -> list[torch.Tensor]:
    """Every tensor in a returned value: tensors, and tensors inside tuples, lists, dicts,
    dataclasses (registered with pytree or not) and pytree nodes (e.g. Hugging Face outputs)."""
    import dataclasses

    import torch.utils._pytree as pytree

    found: list[torch.Tensor] = []

    def walk(v: Any, depth: int) -> None:
        if isinstance(v, torch.Tensor):
            found.append(v)
        elif depth > 32 or isinstance(v, (str, bytes, int, float, bool, type(None))):
            return
        elif isinstance(v, (list, tuple, set, frozenset)):
            for item in v:
                walk(item, depth + 1)
        elif isinstance(v, dict):
            for item in v.values():
                walk(item, depth + 1)
        elif dataclasses.is_dataclass(v) and not isinstance(v, type):
            for f in dataclasses.fields(v):
                walk(getattr(v, f.name, None), depth + 1)
        else:
            leaves = pytree.tree_leaves(v)
            if not (len(leaves) == 1 and leaves[0] is v):
                for item in leaves:
                    walk(item, depth + 1)

    walk(x, 0)
    return found


def _tensors(x: Any) -> list[torch.Tensor]:
    return tensors_in(x)
