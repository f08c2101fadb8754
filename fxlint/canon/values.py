"""Fake-tensor values of a graph's nodes: the one propagator.

Capture (a ``GraphModule`` handed over without values), the rewrites (a changed node and what is
downstream of it) and the device simulation (every node again, on another device) all run ops on fake
tensors through ``FakeProp``, an ``fx.Interpreter``:

* ``propagate(*inputs)``: the whole graph from example inputs, with ``torch.fx.passes.FakeTensorProp``'s
  own rules (static input shapes; data-dependent sizes get a symbol from the mode's shape environment);
* ``update(changed)``: only the changed nodes and their users, from the values already stored on their
  inputs, in the graph's own fake mode (so symbolic sizes stay symbolic), as Inductor's
  ``FakeTensorUpdater`` does after a pass;
* a subclass overrides ``run_node`` (the device simulation places inputs and falls back per op).

Values are read and written through ``fxlint.canon._fx.value_of``/``set_value`` (one precedence:
``val``, then Dynamo's ``example_value``); ``fake_mode_of`` is the one answer to "which fake mode do
this graph's values live in".
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from typing import Any

import torch
import torch.fx as fx
from torch.fx.passes.fake_tensor_prop import FakeTensorProp

from ._fx import VALUE_KEYS, set_value, value_of


def fake_mode_of(gm: fx.GraphModule, *, create: bool = False) -> Any:
    """The fake mode the graph's values live in: that of its first fake value in node order (the
    inputs'), not the ambient one (inside a backend Dynamo may hand over a different mode than the one
    its metadata was traced in). A graph without fake values has none; ``create=True`` then gives a
    new mode (non-fake inputs allowed, with a shape environment for data-dependent sizes)."""
    from torch._subclasses.fake_tensor import FakeTensor

    for n in gm.graph.nodes:
        v = value_of(n)
        if isinstance(v, FakeTensor):
            return v.fake_mode
    return new_fake_mode() if create else None


def new_fake_mode() -> Any:
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    # a shape environment lets data-dependent ops (x[mask], nonzero) get a symbolic size
    return FakeTensorMode(allow_non_fake_inputs=True, shape_env=ShapeEnv())


def run_op(gm: fx.GraphModule, node: fx.Node, args: Any, kwargs: Any) -> Any:
    """Run one ``call_*`` node on ``args``/``kwargs`` (whatever tensors they hold)."""
    target: Any = node.target
    if node.op == "call_function":
        return target(*args, **kwargs)
    if node.op == "call_method":
        self_obj, *rest = args
        return getattr(self_obj, target)(*rest, **kwargs)
    if node.op == "call_module":
        return gm.get_submodule(target)(*args, **kwargs)
    raise RuntimeError(f"unexpected node {node.op}")


class FakeProp(FakeTensorProp):
    """Runs a graph's ops on fake tensors and stores each node's value (see the module docstring)."""

    def __init__(self, gm: fx.GraphModule, mode: Any = None) -> None:
        super().__init__(gm, mode if mode is not None else fake_mode_of(gm, create=True))
        self.gm = gm
        self.mode = self._mode

    # ------------------------------------------------------------------ the whole graph

    def propagate(self, *inputs: Any) -> Any:
        """Every node's value from example ``inputs`` (real or fake tensors, or other values); the inputs'
        shapes stay static."""
        fake = [self.mode.from_tensor(a, static_shapes=True)
                if isinstance(a, torch.Tensor) and not _is_fake(a) else a for a in inputs]
        return self.propagate_dont_convert_inputs(*fake)

    def run_node(self, n: fx.Node) -> Any:
        result = super().run_node(n)
        if "val" in n.meta:  # FakeTensorProp writes `val`; keep every value key current
            set_value(n, value_of(n))
        return result

    # ------------------------------------------------------------------ after a change

    def update(self, changed: Iterable[fx.Node], grad_enabled: Callable[[fx.Node], bool] | None = None,
               on_error: Callable[[fx.Node, Exception], Any] | None = None) -> None:
        """Recompute the value of every changed node and of everything downstream of it, from the values
        stored on their inputs. A node with an input of unknown value loses its (stale) value. An op that
        raises goes to ``on_error(node, exc)`` (default: re-raise)."""
        dirty = set(changed)
        keys_default = [k for k in VALUE_KEYS if any(k in n.meta for n in self.gm.graph.nodes)] or ["val"]
        shape_env = getattr(self.mode, "shape_env", None)
        for node in self.gm.graph.nodes:
            if node.op in ("placeholder", "get_attr", "output"):
                continue
            if node not in dirty and not any(a in dirty for a in node.all_input_nodes):
                continue
            dirty.add(node)
            keys = [k for k in VALUE_KEYS if k in node.meta] or keys_default
            if any(value_of(a) is None for a in node.all_input_nodes):
                for k in keys:
                    node.meta.pop(k, None)  # unknown inputs: drop the stale value rather than keep a wrong one
                continue
            args = fx.node.map_arg(node.args, value_of)
            kwargs = fx.node.map_arg(node.kwargs, value_of)
            grad = grad_enabled(node) if grad_enabled is not None else torch.is_grad_enabled()
            try:
                with self.mode, torch.set_grad_enabled(grad), _ignore_unbacked(shape_env):
                    value = run_op(self.gm, node, args, kwargs)
            except Exception as exc:
                if on_error is None:
                    raise
                on_error(node, exc)
                continue
            for k in keys:
                node.meta[k] = value


# ------------------------------------------------------------------ where a meta kernel's layout is not eager's

#: ``F.batch_norm`` and its spellings in Dynamo and ATen graphs
_BATCH_NORM = ("batch_norm", "native_batch_norm", "_native_batch_norm_legit", "_native_batch_norm_legit_no_training",
               "_batch_norm_impl_index")


def _target_name(n: fx.Node) -> str:
    t = n.target
    return str(getattr(t, "__name__", None) or getattr(t, "_opname", None) or t).split(".")[-1]


def _eager_layout(n: fx.Node, value: Any) -> Any:
    """The value eager gives ``n`` where its fake value's strides are the meta kernel's, not the CPU kernel's;
    None when they agree. CPU ``batch_norm`` allocates its output contiguous whenever its input
    ``is_contiguous()`` (ATen's ``suggest_memory_format_contig``), while the meta kernel keeps the input's
    strides: on a tensor with size-1 dims that is contiguous and channels_last at once ((2, 256, 1, 1) with
    strides (256, 1, 256, 256), after a global pool) eager hands on NCHW strides and the meta kernel
    channels_last ones, and every later layout decision (a conv converting its weight, FXL202) follows."""
    if n.op != "call_function" or _target_name(n) not in _BATCH_NORM:
        return None
    out = value[0] if isinstance(value, (tuple, list)) and value else value
    x = value_of(n.args[0]) if n.args and isinstance(n.args[0], fx.Node) else None
    if not isinstance(out, torch.Tensor) or not isinstance(x, torch.Tensor) or out.device.type != "cpu":
        return None
    try:
        if not x.is_contiguous() or tuple(out.stride()) == _contiguous_strides(out.shape):
            return None
    except Exception:  # noqa: BLE001 - symbolic strides: leave the value alone
        return None
    fixed = torch.empty(out.shape, dtype=out.dtype, device=out.device)
    return (fixed, *value[1:]) if isinstance(value, (tuple, list)) else fixed


def _contiguous_strides(shape: Any) -> tuple[Any, ...]:
    strides, acc = [], 1
    for size in reversed(tuple(shape)):
        strides.append(acc)
        acc = acc * size
    return tuple(reversed(strides))


@contextlib.contextmanager
def eager_layouts(gm: fx.GraphModule) -> Any:
    """While open, the values of ``gm``'s nodes carry the strides eager gives them where a meta kernel picks
    another layout (``_eager_layout``), and every node downstream is recomputed from them (``FakeProp.update``);
    on exit the graph's own values are back (the compiler after fxlint reads them)."""
    mode = fake_mode_of(gm)
    if mode is None:
        yield
        return
    saved = {n: {k: n.meta[k] for k in VALUE_KEYS if k in n.meta} for n in gm.graph.nodes}
    changed = []
    try:
        with mode:
            for n in gm.graph.nodes:
                fixed = _eager_layout(n, value_of(n))
                if fixed is not None:
                    for k in saved[n]:
                        n.meta[k] = fixed
                    changed.append(n)
        if changed:
            users = [u for n in changed for u in n.users]
            try:
                FakeProp(gm, mode).update(users, on_error=lambda node, exc: None)
            except Exception:  # noqa: BLE001 - a graph fxlint cannot re-run: keep the first correction only
                pass
        yield
    finally:
        for n, vals in saved.items():
            for k in VALUE_KEYS:
                n.meta.pop(k, None)
            n.meta.update(vals)


def _is_fake(t: torch.Tensor) -> bool:
    from torch._subclasses.fake_tensor import FakeTensor

    return isinstance(t, FakeTensor)


def _ignore_unbacked(shape_env: Any) -> Any:
    if shape_env is not None and hasattr(shape_env, "ignore_fresh_unbacked_symbols"):
        return shape_env.ignore_fresh_unbacked_symbols()
    return contextlib.nullcontext()


def size_hint(gm: fx.GraphModule, expr: Any) -> int | None:
    """``expr`` (an int or a sympy expression in the graph's size symbols) at the example's sizes."""
    if isinstance(expr, int):
        return expr
    env = getattr(fake_mode_of(gm), "shape_env", None)
    if env is None:
        return None
    try:
        values = getattr(env, "backed_var_to_val", None)
        value = expr.xreplace(values if values is not None else env.var_to_val)
        return int(value) if value.is_number else None
    except Exception:  # noqa: BLE001 - a size we cannot read is simply unknown
        return None
