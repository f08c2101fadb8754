"""Which values are the same every call: computed only from constants, buffers, factories, the
*shapes* (never the data) of the inputs and, in inference, parameters (FXL404, FXL405).

A value is fixed when every node it is computed from is: a constant or a buffer; a parameter when
``weights`` (inference: the weights do not change between calls); a deterministic factory
(``arange``, ``zeros``; never ``rand*``); a ``*_like``/``new_*`` factory, which reads its
template's shape, dtype and device only; a size query (``x.shape``, ``x.size(0)``: metadata); or an
op whose every input (tensor or SymInt) is fixed. Not fixed: anything that reads an input's data
(including a scalar taken out of it with ``.item()``); a value written in place from one that is
not (``mask[i] = x.sum()``) or with random numbers (``t.normal_()``); a buffer or parameter the
graph writes in place (a step counter changes between calls). What a fixed value depends on is
reported (``weights``, ``buffers``, ``shape``) so that a fix can say whether a cache must be keyed
on the input's shape.
"""

from __future__ import annotations

from ..canon import CanonNode, GraphView
from ..canon.alias import view_family

#: factories whose values change every call (``args["kind"]`` of a ``factory`` node)
_RANDOM_FACTORIES = frozenset({"rand", "randn", "randint", "randperm", "empty", "empty_strided"})
#: ops that draw random numbers (or read uninitialised memory): never the same every call
_RANDOM_OPS = frozenset({
    "bernoulli", "bernoulli_", "normal", "normal_", "uniform_", "multinomial", "poisson", "exponential_",
    "random_", "cauchy_", "geometric_", "log_normal_", "rand_like", "randn_like", "randint_like",
    "dropout", "native_dropout", "feature_dropout", "alpha_dropout", "feature_alpha_dropout", "dropout1d",
    "dropout2d", "dropout3d", "rrelu", "empty_like", "new_empty", "new_empty_strided",
})
#: dropouts: random in training, the identity when called with ``training=False`` (``nn.Dropout`` in eval)
_DROPOUTS = frozenset({"dropout", "native_dropout", "feature_dropout", "alpha_dropout", "feature_alpha_dropout",
                       "dropout1d", "dropout2d", "dropout3d"})
#: factories shaped like a template tensor: they read its shape, dtype and device, not its data
_LIKE = frozenset({"zeros_like", "ones_like", "full_like", "new_zeros", "new_ones", "new_full"})
#: what the dependency walk gives up on (a fixed value is built in a few ops from its leaves)
_MAX_DEPTH = 64

Deps = frozenset[str]


class Fixed:
    """Memoised dependency analysis over one graph: ``deps(n)`` is what ``n``'s value depends on
    (a subset of ``{"weights", "buffers", "shape"}``; empty for constants and factories), or
    None when it is not the same every call (it reads an input's data, random numbers, or a
    parameter when ``weights`` is False)."""

    def __init__(self, view: GraphView, *, weights: bool) -> None:
        self.view = view
        self.weights = weights
        self._memo: dict[CanonNode, Deps | None] = {}

    def __call__(self, n: CanonNode) -> bool:
        return self.deps(n) is not None

    def deps(self, n: CanonNode, depth: int = 0) -> Deps | None:
        if n in self._memo:
            return self._memo[n]
        if depth > _MAX_DEPTH:
            return None
        self._memo[n] = None  # provisional: a value written from itself (a cycle through a write) is not fixed
        got = self._own(n, depth)
        if got is not None:
            got = self._writes(n, got, depth)
        self._memo[n] = got
        return got

    def _own(self, n: CanonNode, depth: int) -> Deps | None:
        if n.kind == "constant":
            return frozenset()
        if n.kind == "buffer":
            return frozenset({"buffers"})
        if n.kind == "parameter":
            return frozenset({"weights"}) if self.weights else None
        if n.kind != "op":
            return None  # a user input: its data changes every call
        if n.op in _DROPOUTS and dropout_training(n) is False:
            return self._all(n.inputs, depth)  # the identity
        if n.op in _RANDOM_OPS or "rand" in n.op:
            return None
        if n.op == "factory":
            if n.args.get("kind") in _RANDOM_FACTORIES:
                return None
            return self._all(n.inputs, depth)  # SymInt sizes, if any
        if n.op == "size":
            src = n.input
            return frozenset() if src is None else self._shape_of(src, depth)
        if n.op == "to" and n.input is not None:
            return self._all([n.input], depth)  # `.to(other)`/`.type_as(other)` reads only other's dtype and device
        if n.op in _LIKE:
            template = n.input
            rest = [i for i in n.inputs if i is not template]
            got = self._all(rest, depth)
            if got is None or template is None:
                return got
            return got | self._shape_of(template, depth)
        return self._all(n.inputs, depth)

    def _shape_of(self, n: CanonNode, depth: int) -> Deps:
        """What ``n``'s shape depends on: its own dependencies when fixed, else the input's shape."""
        own = self.deps(n, depth + 1)
        return own if own is not None else frozenset({"shape"})

    def _all(self, inputs: list[CanonNode], depth: int) -> Deps | None:
        out: Deps = frozenset()
        for i in inputs:
            d = self.deps(i, depth + 1)
            if d is None:
                return None
            out |= d
        return out

    def _writes(self, n: CanonNode, got: Deps, depth: int) -> Deps | None:
        """``got`` joined with what every in-place write into ``n``'s storage writes; None when one
        writes a value that is not fixed."""
        family = view_family(n)
        persistent = n.kind in ("buffer", "parameter")
        for w in self.view.writers:
            if w is n or not any(m in family for m in w.mutates):
                continue
            if persistent:
                return None  # state the model updates every call (a step counter, running statistics)
            if (w.op in _RANDOM_OPS or "rand" in w.op) and not (w.op in _DROPOUTS and dropout_training(w) is False):
                return None  # filled with random numbers in place (normal_, uniform_, bernoulli_...)
            d = self._all([i for i in w.inputs if i not in family], depth)
            if d is None:
                return None
            got |= d
        return got


def dropout_training(n: CanonNode) -> object:
    """A dropout's ``training`` argument as captured (third positional, or keyword; True by default)."""
    args = n.args.get("args") or []
    kwargs = n.args.get("kwargs") or {}
    return kwargs.get("training", kwargs.get("train", args[2] if len(args) > 2 else True))


def depends_text(deps: Deps) -> str:
    """``"the weights and the input's shape"`` for a dependency set (``"constants"`` when empty)."""
    words = {"weights": "the weights", "buffers": "buffers", "shape": "the input's shape"}
    parts = [words[k] for k in ("weights", "buffers", "shape") if k in deps]
    if not parts:
        return "constants"
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


__all__ = ["Deps", "Fixed", "depends_text"]
