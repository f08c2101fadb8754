"""Graph editing for rewrites: copies, emitting nodes in the graph's own dialect, values, code.

This is the one place in ``fxlint.rewrite`` that writes raw FX targets. A
rewrite decides *what* to compute from the canonical view; these helpers
spell it the way the graph already speaks: ``operator.getitem`` with slices
in Dynamo / ``symbolic_trace`` graphs, ``aten.slice``/``aten.select`` in
ATen graphs (``torch.export``). New nodes keep the replaced node's
``stack_trace`` and module stack, so findings and the runtime audit still
point at the user's line, and get fresh ``val``/``example_value`` metadata
(fake-tensor propagation through everything downstream), so Inductor's
passes see a consistent graph.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable
from typing import Any

import torch
import torch.fx as fx

from ..canon.values import FakeProp, fake_mode_of
from ..capture.graphs import copy_graph_module  # noqa: F401  (re-exported: rewrites copy graphs here)
from ..errors import first_line
from .base import NotApplied

_PROVENANCE_KEYS = ("stack_trace", "nn_module_stack", "source_fn_stack", "from_node", "seq_nr", "fwd_source_fn_stack")




def _fx(v: Any) -> Any:
    """Canonical arguments back to fx arguments (a CanonNode becomes its fx node)."""
    inner = getattr(v, "node", None)
    return inner if isinstance(inner, fx.Node) else v


def _is_aten(node: fx.Node) -> bool:
    return isinstance(node.target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket))


def retarget_as_basic_index(gm: fx.GraphModule, old: fx.Node, base: fx.Node,
                            items: list[tuple[str, Any]]) -> list[fx.Node]:
    """Make ``old`` compute ``base[items]`` with basic indexing, keeping its name and metadata.

    ``items`` are ("slice", (start, stop, step)), ("int", i) or ("newaxis", None), one per
    subscript entry, as ``fxlint.analysis.indexing.BasicIndex.items`` gives them. Returns the nodes
    that now compute the result (the last one is ``old``).
    """
    graph = gm.graph
    dead = [a for a in old.all_input_nodes if a is not base]
    if not _is_aten(old):
        index: list[slice | int | fx.Node | None] = []
        for kind, v in items:
            if kind == "slice":
                index.append(slice(_fx(v[0]), _fx(v[1]), _fx(v[2])))
            elif kind == "int":
                index.append(_fx(v))
            else:
                index.append(None)
        while len(index) > 1 and index[-1] == slice(None):  # trailing full slices are implied
            index.pop()
        old.op, old.target = "call_function", operator.getitem
        old.args, old.kwargs = (base, tuple(index)), {}
        nodes = [old]
    else:
        aten = torch.ops.aten
        steps: list[tuple[Any, tuple]] = []
        od = 0  # the output dim the next item lands on
        for kind, v in items:
            if kind == "slice":
                start, stop, step = (_fx(x) for x in v)
                if not (start in (None, 0) and stop is None and step in (None, 1)):
                    steps.append((aten.slice.Tensor, (od, 0 if start is None else start,
                                                      stop, 1 if step is None else step)))
                od += 1
            elif kind == "int":
                steps.append((aten.select.int, (od, _fx(v))))
            else:
                steps.append((aten.unsqueeze.default, (od,)))
                od += 1
        if not steps:
            steps.append((aten.alias.default, ()))
        nodes, cur = [], base
        with graph.inserting_before(old):
            for target, args in steps[:-1]:
                cur = graph.call_function(target, (cur, *args))
                copy_provenance(cur, old)
                nodes.append(cur)
        target, args = steps[-1]
        old.op, old.target = "call_function", target
        old.args, old.kwargs = (cur, *args), {}
        nodes.append(old)
    erase_if_dead(graph, dead)
    return nodes


def retarget(gm: fx.GraphModule, old: fx.Node, method: str, base: fx.Node, args: list[Any]) -> list[fx.Node]:
    """Make ``old`` compute ``base.<method>(*args)`` (``aten.<method>.default`` in an ATen graph),
    keeping its name and metadata; inputs it no longer reads are erased when dead."""
    dead = [a for a in old.all_input_nodes if a is not base]
    if _is_aten(old):
        old.op, old.target = "call_function", getattr(torch.ops.aten, method).default
    else:
        old.op, old.target = "call_method", method
    old.args, old.kwargs = (base, *args), {}
    erase_if_dead(gm.graph, dead)
    return [old]


def bypass(gm: fx.GraphModule, old: fx.Node, replacement: fx.Node) -> None:
    """Remove ``old``: its users read ``replacement`` instead; inputs left dead are erased."""
    inputs = old.all_input_nodes
    old.replace_all_uses_with(replacement)
    gm.graph.erase_node(old)
    erase_if_dead(gm.graph, inputs)


def copy_provenance(new: fx.Node, like: fx.Node) -> None:
    """Give ``new`` the user's stack trace and module stack of ``like``."""
    for key in _PROVENANCE_KEYS:
        if key in like.meta and key not in new.meta:
            new.meta[key] = like.meta[key]


def erase_if_dead(graph: fx.Graph, nodes: Iterable[fx.Node]) -> None:
    """Erase nodes left without users (an index constant, its ``arange``), and their dead inputs.

    Only attribute reads and calls without side effects go; an in-place call stays."""
    stack = list(nodes)
    while stack:
        n = stack.pop()
        if n.graph is not graph or n.users or n.op not in ("get_attr", "call_function", "call_method"):
            continue
        name = getattr(n.target, "__name__", str(n.target))
        if (n.op == "call_function" and n.is_impure()) or name.endswith("_") or name == "setitem":
            continue
        inputs = n.all_input_nodes
        graph.erase_node(n)
        stack.extend(inputs)


# --------------------------------------------------------------------------- values


def refresh_values(gm: fx.GraphModule, changed: Iterable[fx.Node],
                   grad_enabled: Callable[[fx.Node], bool] | None = None) -> None:
    """Recompute the fake value of every changed node and of everything downstream of it
    (``fxlint.canon.values.FakeProp.update``, in the graph's own fake mode, so dynamic sizes stay
    symbolic). An op that rejects the new value (a ``view`` that needs contiguous memory) raises
    ``NotApplied``: the rewrite would break the program. A graph without values is left as it is."""
    mode = fake_mode_of(gm)
    if mode is None:
        return  # the graph carries no values; nothing to keep consistent

    def rejected(node: fx.Node, exc: Exception) -> None:
        raise NotApplied(f"a later op (`{node.name}`) does not accept the rewritten value: "
                         f"{type(exc).__name__}: {first_line(exc)}") from exc

    FakeProp(gm, mode).update(changed, grad_enabled, on_error=rejected)


def finish(gm: fx.GraphModule) -> None:
    """Check the graph and regenerate its code."""
    gm.graph.lint()
    gm.recompile()


# --------------------------------------------------------------------------- code for people


_ASSIGN_RE = r"^\s*{name}\s*=\s*(?P<rhs>.*?)(?:;\s+.*)?$"
_LONG_LIST = re.compile(r"\[(-?\d+)((?:, -?\d+){3})((?:, -?\d+){3,})\]")


_SLICE = re.compile(r"slice\(([^(),]+), ([^(),]+), ([^(),]+)\)")


def shorten(code: str) -> str:
    """Generated code as people write it: ``x[:, 0:63:2]`` for ``x[(slice(None, None, None),
    slice(0, 63, 2))]``, ``[0, 2, 4, 6, ..., 62]`` for long literal lists."""

    def short(m: re.Match) -> str:
        last = m.group(3).rsplit(", ", 1)[-1]
        return f"[{m.group(1)}{m.group(2)}, ..., {last}]"

    def as_slice(m: re.Match) -> str:
        start, stop, step = (("" if v == "None" else v) for v in m.groups())
        start = "" if start == "0" else start
        return f"{start}:{stop}" + (f":{step}" if step not in ("", "1") else "")

    code = _LONG_LIST.sub(short, code)
    code = _SLICE.sub(as_slice, code)
    return _untuple_subscripts(code)


def _untuple_subscripts(code: str) -> str:
    """``x[(a, b)]`` -> ``x[a, b]`` and ``x[(a,)]`` -> ``x[a]``: FX writes subscripts as tuples."""
    out: list[str] = []
    i = 0
    while True:
        j = code.find("[(", i)
        if j < 0:
            return "".join(out) + code[i:]
        depth, k = 0, j + 1
        while k < len(code):
            depth += code[k] in "([{"
            depth -= code[k] in ")]}"
            if depth == 0:
                break
            k += 1
        if k + 1 < len(code) and code[k] == ")" and code[k + 1] == "]":
            inner = code[j + 2:k].rstrip()
            out.append(code[i:j] + "[" + (inner[:-1] if inner.endswith(",") else inner) + "]")
            i = k + 2
        else:
            out.append(code[i:j + 2])
            i = j + 2


def node_code(gm: fx.GraphModule, names: Iterable[str]) -> str:
    """The generated Python lines that compute the named nodes, without FX's ``x = None`` clean-ups."""
    wanted = list(names)
    lines = gm.code.splitlines()
    out = []
    for name in wanted:
        pat = re.compile(_ASSIGN_RE.format(name=re.escape(name)))
        for text in lines:
            m = pat.match(text)
            if m:
                out.append(f"{name} = {m.group('rhs').strip()}")
                break
    return shorten("\n".join(out))
