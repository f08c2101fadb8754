"""Gradient flow: which trainable parameters reach the outputs, and which cuts stop them.

One analysis shared by the gradient rules (FXL301-304, FXL109), computed once
per ``Program`` on the canonical views' data-flow graphs (``view.graph``).

A **cut** is a node whose output carries no gradient although its inputs could:
``detach`` (FXL301), ``.data`` (FXL302), any op run with autograd off
(``no_grad``, ``set_grad_enabled(False)``, ``inference_mode``; FXL303),
``torch.tensor`` built from tensors (FXL109), a host sync inside the graph
(``.item()`` with ``capture_scalar_outputs``; FXL304). Some ops stop gradients
by nature and are not cuts: integer and boolean results (``argmax``, ``>``),
sizes, and, where Dynamo's fake values say so, ops autograd does not
differentiate (``zeros_like``). A path through those was never a gradient path.

**Paths.** For every node, two counts of the distinct paths from it to a graph
output in the data-flow DAG: ``paths`` treats the cuts as if they were not
there (the program's gradient paths had nobody cut them), ``uncut`` stops at
every cut. A trainable parameter's numbers are summed over every graph of the
program that uses it (a parameter placeholder is one use; in ``symbolic_trace``
graphs an ``nn.Module`` call uses the module's parameters).

* the parameter **loses every path** when ``paths > 0`` and ``uncut == 0``: it
  never receives a gradient (unless autograd, where the model really ran, shows
  that it does: then fxlint does not claim it);
* otherwise the **fraction cut** is ``1 - uncut / paths``: the share of its
  gradient paths to the outputs that some cut stops, all cuts together. In an
  RNN unrolled over T steps whose output is read after the last step, a weight
  used once per step has T paths (one per step, along the hidden state); with
  the hidden state detached after step k, only the T - k later steps' paths
  remain, so the fraction cut is k / T: the share of time steps whose gradient
  is dropped. Paths are counted in the canonical data-flow graph, where several
  uses of one value by one op are one edge.

Outputs that no trainable parameter reaches uncut carry no gradient (a
metric computed under ``no_grad``, ``logits.detach()`` returned for logging,
the detached hidden state handed to the next chunk): when some other output
does carry one, the way to them is not counted as a gradient path, so
returning such values is not reported as a cut.

Each cut also knows the parameters whose gradient reaches it on an uncut path
(a bit set propagated forward), so a finding names the parameters *this* cut
stops, not every parameter an earlier cut already stopped.

Both passes are linear in the graph size: one forward pass in topological
order (bit sets), one backward pass (path counts, exact integers).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING

import networkx as nx

from ..tensor.info import TensorInfo

if TYPE_CHECKING:  # pragma: no cover
    from ..canon import CanonNode, GraphView
    from ..capture.program import Program

#: cut kind -> the rule that reports it
CUT_RULES = {
    "detach": "FXL301",
    "data": "FXL302",
    "no_grad": "FXL303",
    "host_sync": "FXL304",
    "tensor_from_tensors": "FXL109",
}
_HOST_SYNC_OPS = {"item", "tolist", "numpy"}
_NOT_COMPUTE = {"set_grad_enabled", "output", "placeholder", "grad_region"}


def cut_kind(node: CanonNode) -> str | None:
    """The kind of gradient cut ``node`` is, or None."""
    if node.kind != "op" or node.op in _NOT_COMPUTE:
        return None
    if not node.grad_enabled:
        return "no_grad"
    if node.op == "detach":
        return "detach"
    if node.op == "data":
        return "data"
    if node.op in _HOST_SYNC_OPS:
        return "host_sync"
    if node.op == "factory" and node.args.get("kind") in ("tensor", "as_tensor") and tensor_operands(node):
        return "tensor_from_tensors"
    return None


def tensor_operands(node: CanonNode) -> list[CanonNode]:
    """The tensors in the (nested) list given to a ``torch.tensor``-like factory."""
    from ..canon import CanonNode

    return [a for a in _flat(node.args.get("args", []))
            if isinstance(a, CanonNode) and a.tensor is not None]


def _flat(x: object) -> Iterable[object]:
    if isinstance(x, (list, tuple)):
        for v in x:
            yield from _flat(v)
    else:
        yield x


@dataclass
class ParamFlow:
    """One trainable parameter's gradient paths to the outputs, over the program."""

    name: str
    paths: int = 0  # paths to an output with the cuts ignored
    uncut: int = 0  # paths that avoid every cut
    cut_by: int = 0  # how many cut sites stop some of its paths (filled by sites())
    reached_at_runtime: bool | None = None  # autograd's verdict when the model ran

    @property
    def lost(self) -> bool:
        """It never receives a gradient: every path to every output is cut."""
        if self.reached_at_runtime:
            return False  # autograd reached it after all (a path fxlint cannot see)
        return self.paths > 0 and self.uncut == 0

    @property
    def fraction_cut(self) -> Fraction:
        if self.paths == 0:
            return Fraction(0)
        return 1 - Fraction(self.uncut, self.paths)


@dataclass
class Cut:
    """One cut node, and the trainable parameters whose gradient it stops."""

    node: CanonNode
    view: GraphView
    kind: str
    params: tuple[str, ...]
    region: int | None = None  # grad-disabled region (position of its first node) for no_grad cuts


@dataclass
class CutSite:
    """The cuts of one kind at one place in the user's source (an unrolled loop's
    ``detach`` on every step, every op of one ``no_grad`` block)."""

    kind: str
    cuts: list[Cut]
    params: list[str]  # in first-seen order

    @property
    def first(self) -> Cut:
        return min(self.cuts, key=lambda c: (c.node.location is None, c.node.position))


@dataclass
class GradFlow:
    params: dict[str, ParamFlow] = field(default_factory=dict)
    cuts: list[Cut] = field(default_factory=list)
    masks: dict[tuple[str, str], int] = field(default_factory=dict)  # (view label, node) -> bits
    bits: dict[str, list[str]] = field(default_factory=dict)  # view label -> param name per bit
    _sites: dict[str, list[CutSite]] | None = None

    def names(self, label: str, mask: int) -> list[str]:
        names = self.bits.get(label, [])
        return [names[i] for i in range(len(names)) if mask >> i & 1]

    def reaching(self, view: GraphView, node: CanonNode) -> list[str]:
        """Trainable parameters whose gradient reaches ``node`` on an uncut path."""
        return self.names(view.label, self.masks.get((view.label, node.name), 0))

    def sites(self, kind: str) -> list[CutSite]:
        """Cuts of ``kind`` that stop some parameter, grouped by source line (and
        by region for ``no_grad``), in program order."""
        if self._sites is None:
            self._sites = self._group()
        return self._sites.get(kind, [])

    def _group(self) -> dict[str, list[CutSite]]:
        groups: dict[tuple, CutSite] = {}
        for cut in self.cuts:
            if not cut.params:
                continue
            loc = cut.node.location
            where = (loc.file, loc.line) if loc is not None else (cut.view.label, cut.node.name)
            key = (cut.kind, cut.view.label, cut.region) if cut.kind == "no_grad" else (cut.kind, where)
            site = groups.get(key)
            if site is None:
                site = groups[key] = CutSite(cut.kind, [], [])
            site.cuts.append(cut)
            site.params.extend(p for p in cut.params if p not in site.params)
        out: dict[str, list[CutSite]] = {}
        for site in groups.values():
            out.setdefault(site.kind, []).append(site)
            for p in site.params:
                if p in self.params:
                    self.params[p].cut_by += 1
        return out

    def paths_to(self, view: GraphView, target: CanonNode) -> dict[str, int]:
        """Uncut paths from each trainable parameter to ``target`` (one extra
        backward pass); used for a value that leaves the graph through Python."""
        info = _analyse_view(view, sink=target)
        return info.param_uncut


# --------------------------------------------------------------------------- the passes


@dataclass
class _ViewFlow:
    bits: list[str]
    masks: dict[str, int]
    cuts: list[Cut]
    param_paths: dict[str, int]
    param_uncut: dict[str, int]


def _param_key(node: CanonNode) -> str:
    return node.param_name or node.name


def _analyse_view(view: GraphView, sink: CanonNode | None = None) -> _ViewFlow:
    g = view.graph
    order = [g.nodes[name]["cn"] for name in nx.topological_sort(g)]
    bit_of: dict[str, int] = {}
    bits: list[str] = []

    def bit(name: str) -> int:
        if name not in bit_of:
            bit_of[name] = len(bits)
            bits.append(name)
        return 1 << bit_of[name]

    masks: dict[str, int] = {}
    flows_all: dict[str, bool] = {}
    flows_uncut: dict[str, bool] = {}
    scalar: set[str] = set()  # non-tensor values carried on from a host sync
    kinds: dict[str, str] = {}
    cut_in: dict[str, int] = {}
    module_uses: dict[str, list[str]] = {}  # node -> params of the nn.Module it calls (symbolic_trace)
    region: dict[str, int] = {}
    current_region: int | None = None

    for n in view.nodes:  # grad-disabled regions: maximal runs in program order
        if n.grad_enabled:
            current_region = None
        elif n.kind == "op" and n.op not in _NOT_COMPUTE:
            if current_region is None:
                current_region = n.position
            region[n.name] = current_region

    for n in order:
        name = n.name
        if n.kind == "parameter":
            masks[name] = bit(_param_key(n)) if n.is_trainable else 0
            flows_all[name] = flows_uncut[name] = True
            continue
        if n.kind != "op":
            masks[name] = 0
            flows_all[name] = flows_uncut[name] = n.kind != "output"
            continue
        m_in = 0
        for i in n.inputs:
            m_in |= masks.get(i.name, 0)
        if n.module_params:
            module_uses[name] = list(n.module_params)
            for p in n.module_params:
                m_in |= bit(p)
        kind = cut_kind(n)
        diff = _differentiable(view, n, kind, scalar)
        if diff and (kind == "host_sync" or (not isinstance(n.value, (TensorInfo, tuple))
                                           and any(i.name in scalar for i in n.inputs))):
            scalar.add(name)
        flows_all[name] = diff
        flows_uncut[name] = diff and kind is None
        masks[name] = m_in if flows_uncut[name] else 0
        if kind is not None and diff:
            kinds[name] = kind
            cut_in[name] = m_in

    # Outputs no trainable parameter reaches uncut (a metric computed under no_grad,
    # `logits.detach()` returned for logging, the detached hidden state handed to the
    # next chunk) carry no gradient: nobody trains through them, so the way to them is
    # not a gradient path, as long as some other output does carry one.
    out_node = next((n.name for n in view.nodes if n.kind == "output"), None)
    carrying = [o for o in view.outputs if masks.get(o.name, 0)]
    inert = {o.name for o in view.outputs if not masks.get(o.name, 0)} if carrying else set()

    # backward pass: exact path counts to the outputs (or to ``sink``)
    paths: dict[str, int] = {}
    uncut: dict[str, int] = {}
    for n in reversed(order):
        name = n.name
        if (sink is not None and n is sink) or (sink is None and n.kind == "output"):
            paths[name] = uncut[name] = 1
            continue
        a = u = 0
        skip_out = sink is None and name in inert
        if flows_all.get(name):
            for succ in g.successors(name):
                if not (skip_out and succ == out_node):
                    a += paths.get(succ, 0)
        if flows_uncut.get(name):
            for succ in g.successors(name):
                if not (skip_out and succ == out_node):
                    u += uncut.get(succ, 0)
        paths[name], uncut[name] = a, u

    param_paths: dict[str, int] = {}
    param_uncut: dict[str, int] = {}
    for n in view.nodes:
        if n.kind == "parameter" and n.is_trainable:
            key = _param_key(n)
            param_paths[key] = param_paths.get(key, 0) + paths.get(n.name, 0)
            param_uncut[key] = param_uncut.get(key, 0) + uncut.get(n.name, 0)
    for name, owned in module_uses.items():  # nn.Module calls own their parameters
        for key in owned:
            param_paths[key] = param_paths.get(key, 0) + paths.get(name, 0)
            param_uncut[key] = param_uncut.get(key, 0) + uncut.get(name, 0)

    cuts: list[Cut] = []
    for n in view.nodes:
        if n.name in kinds and paths.get(n.name, 0) > 0:
            params = tuple(bits[i] for i in range(len(bits)) if cut_in[n.name] >> i & 1)
            cuts.append(Cut(n, view, kinds[n.name], params, region.get(n.name)))
    return _ViewFlow(bits, masks, cuts, param_paths, param_uncut)


def _differentiable(view: GraphView, n: CanonNode, kind: str | None, scalar: set[str]) -> bool:
    """Could a gradient pass through ``n`` at all (cuts aside)?"""
    if kind == "host_sync":
        return True  # the Python number carries the value on; the cut is the sync itself
    v = n.value
    if isinstance(v, TensorInfo):
        if not (v.dtype.is_floating_point or v.dtype.is_complex):
            return False  # integer / boolean results have no gradient
        if (view.requires_grad_known and kind is None and n.grad_enabled and not v.requires_grad
                and any(i.tensor is not None and i.tensor.requires_grad for i in n.inputs)):
            return False  # autograd itself does not differentiate this op
        return True
    if v is None or isinstance(v, tuple):
        return True  # unknown, or a tuple whose items are judged where they are taken
    # an int or a size expression: shapes carry no gradient, numbers from a host sync do
    return any(i.name in scalar for i in n.inputs)


def analyse(program: Program) -> GradFlow:
    """The gradient flow of ``program`` (cached on it)."""
    cached = program.cache.get("gradflow")
    if cached is not None:
        return cached
    flow = GradFlow()
    for view in program.views:
        vf = _analyse_view(view)
        flow.bits[view.label] = vf.bits
        for node_name, m in vf.masks.items():
            if m:
                flow.masks[(view.label, node_name)] = m
        flow.cuts.extend(vf.cuts)
        for key, count in vf.param_paths.items():
            pf = flow.params.setdefault(key, ParamFlow(key))
            pf.paths += count
            pf.uncut += vf.param_uncut.get(key, 0)
    reach = program.reach
    if reach is not None:
        for pf in flow.params.values():
            if pf.name in reach.known:
                pf.reached_at_runtime = pf.name in reach.parameters
    program.cache["gradflow"] = flow
    return flow
