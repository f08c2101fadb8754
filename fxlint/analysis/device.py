"""Lint for an accelerator from a machine that has none: the target-device simulation.

``fxlint.lint(model, inputs, device="cuda")`` (``fxlint lint --device cuda``, ``device = "cuda"``
in ``[tool.fxlint]``) captures the model on the CPU as always (Dynamo runs it once), then
propagates values through every captured graph again with fake tensors
(``torch._subclasses.fake_tensor.FakeTensorMode``) whose placeholders for the inputs,
parameters and buffers are fake tensors on the target device. A fake tensor can carry a
``cuda`` device without CUDA, so each op then tells where its operands and its result would
live on the GPU run:

* inputs, parameters and buffers live on the target device, except the parameters and
  buffers the model itself keeps on the host (see "deliberately on the CPU" below);
* a factory without ``device=`` (``torch.arange(n)``) is built on the CPU, as on the GPU run;
* a device the captured code took from a tensor (``.to(x.device)``, ``device=x.device``) is
  the target device: Dynamo records ``x.device`` as the constant ``torch.device("cpu")`` on
  this machine; the simulation replaces such constants in a copy of the graph by the target
  device. A device written in the source (``"cpu"``, ``torch.device("cpu")``, ``.cpu()``) stays
  the CPU.
* a value that crosses a graph break (a local the next graph takes as input) keeps the device
  the earlier graph gave it (matched by its name); a value Python built between graphs, or the
  Python stack at a break, is taken to be on the target device.

An op whose operands then live on two devices where the GPU run would raise ("Expected all
tensors to be on the same device") is recorded as a mismatch (FXL106 reports it as an
error); indexing with a host index is not one (the kernel copies the index over: FXL107).

Deliberately on the CPU: a parameter or buffer is kept on the host when the model hands it
data it moved to the host itself (``self.table(ids.cpu())``: an offloaded embedding, a
host-side metric's buffer). The simulation first puts every parameter and buffer on the
target device; where an op then mixes such a parameter with a tensor that an explicit
device-to-host move (``.cpu()``, ``.to("cpu")``) produced, the parameter is the user's
host-side part: it is placed on the CPU and the graphs are propagated again (a few rounds at
most). The boundary is then reported once, where the data crosses it (FXL106, with bytes
per call), and the host-side ops after it are quiet.

What fake tensors cannot tell (the limits, see docs/device.md): syncs inside kernels and
libraries (cuDNN benchmark, cuBLAS workspace, a kernel that reads a size back), the caching
allocator (``cudaMalloc`` on a cold cache, fragmentation), streams and events, whether host
memory is pinned (only ``pin_memory()``/``pin_memory=True`` in the graph count as pinned), a
device chosen by Python logic the capture did not see (``if torch.cuda.is_available()``), a
device held in a variable built elsewhere (``torch.device("cpu")`` stored in ``self.dev``
reads as taken from a tensor), and values built in Python between graphs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
import torch.fx as fx

from ..canon._fx import set_value, value_of
from ..canon.values import FakeProp, run_op
from ..errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    from ..canon import GraphView
    from ..capture.graphs import Captured

#: device types the simulation accepts (fake tensors carry any of them without the hardware)
DEVICE_TYPES = ("cuda", "xpu", "mps", "hpu", "cpu")

#: ops that take a host index with operands on the device (the kernel copies the index over)
_INDEX_TARGETS = {"getitem", "setitem", "__getitem__", "__setitem__", "index", "index_put", "index_put_",
                  "_index_put_impl_"}
_EXPLICIT_CPU = re.compile(r"""torch\.device\(\s*['"]cpu""")


def parse_device(value: Any, where: str = "device") -> str | None:
    """The target device as a string (``"cuda"``, ``"cuda:1"``), None for none; ``ConfigError``
    naming ``where`` for anything else."""
    if value is None:
        return None
    if isinstance(value, torch.device):
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where} must be a device such as \"cuda\" or \"cuda:0\", not {value!r}")
    try:
        dev = torch.device(value.strip())
    except RuntimeError:
        dev = None
    if dev is None or dev.type not in DEVICE_TYPES:
        raise ConfigError(f"{where} must be a device such as \"cuda\" or \"cuda:0\" (types: "
                          f"{', '.join(DEVICE_TYPES)}), not {value!r}")
    return str(dev)


@dataclass(frozen=True)
class Mismatch:
    """An op whose operands the GPU run would find on two devices (it would raise there)."""

    graph: str
    node: str
    devices: tuple[str, ...]


@dataclass
class Simulation:
    """What the simulation did (``Report.extras["device"]``)."""

    device: str
    host_parameters: list[str] = field(default_factory=list)  # kept on the CPU: the model's host-side parts
    mismatches: list[Mismatch] = field(default_factory=list)
    rounds: int = 1
    failed_ops: int = 0  # ops fake tensors could not run on the device (propagated on the CPU, placed after)
    errors: list[str] = field(default_factory=list)  # graphs the simulation failed on (analysed as captured)

    def describe(self) -> dict[str, Any]:
        return {"device": self.device, "host_parameters": list(self.host_parameters),
                "mismatches": [{"graph": m.graph, "node": m.node, "devices": list(m.devices)}
                               for m in self.mismatches],
                "rounds": self.rounds, "failed_ops": self.failed_ops, "errors": list(self.errors)}


def simulate(captured: Captured, device: str) -> Simulation:
    """Re-propagate every graph of ``captured`` as if its inputs, parameters and buffers lived on
    ``device``; replaces ``captured.views`` by views of the simulated copies."""
    from ..canon import build_view

    target = torch.device(device)
    if target.type == "cuda" and target.index is None:
        target = torch.device("cuda", 0)  # what a real CUDA tensor reports
    sim = Simulation(device=str(target))
    originals = list(captured.views)
    host: set[str] = set()
    results: list[_Result] = []
    for rnd in range(1, 5):
        sim.rounds = rnd
        results = _propagate_all(originals, target, host)
        new_host = set()
        for r in results:
            new_host |= r.host_candidates
        if not new_host - host:
            break
        host |= new_host
    views = []
    sim.mismatches, sim.failed_ops = [], 0
    for view, r in zip(originals, results):
        if r.error is not None:
            import warnings

            from ..errors import FxlintWarning

            sim.errors.append(r.error)
            warnings.warn(FxlintWarning(f"fxlint: the device simulation failed on {r.error}; that graph is "
                                        "analysed on the devices it was captured on"), stacklevel=3)
            views.append(view)
            continue
        sim.mismatches.extend(r.mismatches)
        sim.failed_ops += r.failed
        new = build_view(r.gm, origin=view.origin, label=view.label, grad_enabled=view.entry_grad_enabled,
                         roles=_roles(view), constants=dict(view._constants))
        new.graph_break = view.graph_break
        new.requires_grad_known = view.requires_grad_known
        new.device_mismatches = {m.node for m in r.mismatches}  # read by FXL106/FXL107 (`mismatched`)
        views.append(new)
    captured.views = views
    sim.host_parameters = sorted(host)
    return sim


def mismatched(view: GraphView, node_name: str) -> bool:
    """Would the GPU run raise at this node of a simulated view (operands on two devices)?"""
    return node_name in getattr(view, "device_mismatches", ())


def pinned(node: Any, depth: int = 0) -> bool:
    """Is the host tensor of canonical ``node`` in pinned memory? Only what the graph shows counts:
    a ``pin_memory()`` call or a factory with ``pin_memory=True`` on the way (views pass)."""
    if node is None or depth > 8:
        return False
    if node.op == "pin_memory" or (node.op == "factory" and node.args.get("pin_memory")):
        return True
    fx_node = getattr(node, "node", None)
    if fx_node is not None and fx_node.kwargs.get("pin_memory") is True:
        return True
    return bool(node.is_view) and pinned(node.input, depth + 1)


#: the rules whose findings describe the simulated device's copies (the audit here runs on the CPU)
DEVICE_CODES = ("FXL106", "FXL107")


def unmeasured(report: Any) -> Any:
    """After the runtime audit of a simulated lint: the audit ran on this machine's CPU, where the
    simulated device's copies do not happen, so FXL106/FXL107 findings are ``not-run`` (neither
    confirmed nor refuted); ``bench/gpu_check.py`` checks them on a real GPU."""
    from dataclasses import replace

    report.findings = [replace(f, status="not-run", time_ns=None) if f.code in DEVICE_CODES else f
                       for f in report.findings]
    return report


def _roles(view: GraphView) -> dict[str, tuple[str, str | None]]:
    return {n.name: (n.kind, n.param_name) for n in view.nodes if n.op == "placeholder"}


@dataclass
class _Result:
    gm: fx.GraphModule
    mismatches: list[Mismatch]
    host_candidates: set[str]
    failed: int
    outputs: dict[str, Any]  # output node name -> simulated value (for the next graphs' locals)
    host_moved: set[str]  # output node names whose value an explicit device-to-host move produced
    error: str | None = None  # the simulation failed on this graph: it is analysed as captured


def _propagate_all(views: list[GraphView], target: torch.device, host: set[str]) -> list[_Result]:
    results: list[_Result] = []
    for view in views:
        try:
            results.append(_propagate(view, target, host, results))
        except Exception as exc:  # noqa: BLE001 - a graph the simulation cannot handle stays as captured
            first = str(exc).splitlines()[0] if str(exc) else ""
            results.append(_Result(view.gm, [], set(), 0, {}, set(),
                                   error=f"{view.label}: {type(exc).__name__}: {first}"))
    return results


def _local_name(source: str | None) -> str | None:
    m = re.fullmatch(r"L\['([^']*)'\]", source or "")
    return m.group(1) if m else None


def _propagate(view: GraphView, target: torch.device, host: set[str], earlier: list[_Result]) -> _Result:
    from ..capture.graphs import copy_graph_module

    sim = _Simulation(copy_graph_module(view.gm), view, target, host, earlier)
    for node in sim.gm.graph.nodes:
        if node.op != "output":
            sim.env[node] = sim.run_node(node)
    return sim.result()


class _Simulation(FakeProp):
    """The graph's ops again on fake tensors, with the inputs placed on the target device (the module
    docstring), each op falling back to the CPU where fake tensors cannot run it there."""

    def __init__(self, gm: fx.GraphModule, view: GraphView, target: torch.device, host: set[str],
                 earlier: list[_Result]) -> None:
        super().__init__(gm)
        self.view, self.target, self.host, self.earlier = view, target, host, earlier
        self.by_name = {n.name: n for n in view.nodes}
        self.origin: dict[fx.Node, str | None] = {}  # node -> parameter/buffer it is a view/alias of
        self.host_moved: set[fx.Node] = set()
        self.mismatches: list[Mismatch] = []
        self.candidates: set[str] = set()
        self.failed = 0

    def place(self, value: Any, dev: torch.device) -> Any:
        if not isinstance(value, torch.Tensor):
            return value
        with self.mode, torch.no_grad():
            out = torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device=dev)
        return _with_grad(out, value)

    def earlier_value(self, local: str) -> tuple[Any, bool] | None:
        pattern = re.compile(rf"{re.escape(local)}(_\d+)?")
        for r in reversed(self.earlier):
            for name, value in reversed(list(r.outputs.items())):
                if pattern.fullmatch(name):
                    return value, name in r.host_moved
        return None

    def run_node(self, node: fx.Node) -> Any:
        if node.op in ("placeholder", "get_attr"):
            value = self._input(node)
        else:
            value = _with_grad(self._op(node), value_of(node))
        _set_value(node, value)
        return value

    def _input(self, node: fx.Node) -> Any:
        old = value_of(node)
        cn = self.by_name.get(node.name)
        kind = cn.kind if cn is not None else "input"
        pname = cn.param_name if cn is not None else None
        value = old
        if isinstance(old, torch.Tensor) and old.device.type == "cpu":
            if kind in ("parameter", "buffer"):
                value = self.place(old, torch.device("cpu") if pname in self.host else self.target)
                self.origin[node] = pname
            elif kind == "input":
                found = self.earlier_value(_local_name(pname) or "") if _local_name(pname) else None
                if found is not None and isinstance(found[0], torch.Tensor):
                    value = self.place(old, found[0].device)
                    if found[1]:
                        self.host_moved.add(node)
                else:
                    value = self.place(old, self.target)
        elif node.op == "get_attr" and isinstance(old, torch.Tensor) and kind in ("parameter", "buffer"):
            self.origin[node] = pname
        return value

    def _op(self, node: fx.Node) -> Any:
        env = self.env
        _retarget(node, self.target)
        args = fx.node.map_arg(node.args, lambda n: env.get(n))
        kwargs = fx.node.map_arg(node.kwargs, lambda n: env.get(n))
        tensors = [t for t in (env.get(n) for n in node.all_input_nodes) if isinstance(t, torch.Tensor)]
        devices = sorted({str(t.device) for t in tensors if t.ndim > 0})
        try:
            # autograd off: recording a graph for a fake `cuda` tensor asks for a CUDA device guard,
            # which a CPU build aborts on; requires_grad is copied from the captured value instead
            with self.mode, torch.no_grad():
                value = run_op(self.gm, node, args, kwargs)
        except Exception as exc:  # noqa: BLE001 - a fake-tensor gap: propagate on the CPU, place after
            if len(devices) > 1 and _raw_name(node) not in _INDEX_TARGETS:
                self.mismatches.append(Mismatch(self.view.label, node.name, tuple(devices)))
                # which parameters does the model feed host data it moved there itself?
                if any(n in self.host_moved for n in node.all_input_nodes):
                    for n in node.all_input_nodes:
                        v, pname = env.get(n), self.origin.get(n)
                        if pname and isinstance(v, torch.Tensor) and v.device.type != "cpu":
                            self.candidates.add(pname)
            else:
                self.failed += 1 if not _is_mismatch(exc) else 0
            value = _fallback(self.gm, node, args, kwargs, self.mode, tensors, self.place)
        # provenance: views of a parameter stay "the parameter"; host moves mark their result
        cn = self.by_name.get(node.name)
        if node.all_input_nodes and (cn is not None and (cn.is_view or cn.op in ("reshape", "contiguous"))):
            first = node.all_input_nodes[0]
            if first in self.origin:
                self.origin[node] = self.origin[first]
        if isinstance(value, torch.Tensor) and value.device.type == "cpu":
            srcs = [env.get(n) for n in node.all_input_nodes]
            if any(isinstance(s, torch.Tensor) and s.device.type != "cpu" for s in srcs) or \
                    any(n in self.host_moved for n in node.all_input_nodes):
                self.host_moved.add(node)
        return value

    def result(self) -> _Result:
        outputs: dict[str, Any] = {}
        moved: set[str] = set()
        out_node = next((n for n in self.gm.graph.nodes if n.op == "output"), None)
        if out_node is not None:
            for n in _flat(out_node.args):
                if isinstance(n, fx.Node):
                    outputs[n.name] = self.env.get(n)
                    if n in self.host_moved:
                        moved.add(n.name)
        self.gm.recompile()
        return _Result(self.gm, self.mismatches, self.candidates, self.failed, outputs, moved)


def _flat(x: Any) -> list[Any]:
    if isinstance(x, (list, tuple)):
        return [v for item in x for v in _flat(item)]
    if isinstance(x, dict):
        return [v for item in x.values() for v in _flat(item)]
    return [x]


def _raw_name(node: fx.Node) -> str:
    t = node.target
    if isinstance(t, str):
        return t
    if isinstance(t, torch._ops.OpOverload):
        return t.overloadpacket.__name__
    return getattr(t, "__name__", str(t))


def _is_mismatch(exc: Exception) -> bool:
    text = str(exc)
    return "same device" in text or "Device Propagation" in text or "two different devices" in text


def _source_text(node: fx.Node) -> str:
    from ..util.source import user_frame

    loc = user_frame(node.meta.get("stack_trace"))
    if loc is None:
        return ""
    if loc.code:
        return loc.code
    from ..util.source import source_line

    return source_line(loc.file, loc.line) or ""


def _retarget(node: fx.Node, target: torch.device) -> None:
    """Replace the ``torch.device("cpu")`` constants Dynamo recorded for ``x.device`` by the target
    device, unless the source line writes the CPU explicitly (``torch.device("cpu")``)."""
    def has_cpu_device(a: Any) -> bool:
        return isinstance(a, torch.device) and a.type == "cpu"

    found = [a for a in _flat(list(node.args) + list(node.kwargs.values())) if has_cpu_device(a)]
    if not found or _EXPLICIT_CPU.search(_source_text(node)):
        return

    def swap(a: Any) -> Any:
        if has_cpu_device(a):
            return target
        if isinstance(a, tuple):
            return tuple(swap(x) for x in a)
        if isinstance(a, list):
            return [swap(x) for x in a]
        return a

    node.args = tuple(swap(a) for a in node.args)
    node.kwargs = {k: swap(v) for k, v in node.kwargs.items()}


def _fallback(gm: fx.GraphModule, node: fx.Node, args: Any, kwargs: Any, mode: Any, tensors: list[torch.Tensor],
              place: Callable[[Any, torch.device], Any]) -> Any:
    """Run the op with every tensor on the CPU, then place the result on its operands' device."""
    dev = next((t.device for t in tensors if t.device.type != "cpu" and t.ndim > 0), None) \
        or next((t.device for t in tensors if t.device.type != "cpu"), None) or torch.device("cpu")

    def to_cpu(v: Any) -> Any:
        if isinstance(v, torch.Tensor) and v.device.type != "cpu":
            return place(v, torch.device("cpu"))
        return v

    def cpu_device(a: Any) -> Any:
        return torch.device("cpu") if isinstance(a, torch.device) else a

    cargs = torch.utils._pytree.tree_map(lambda v: cpu_device(to_cpu(v)), args)
    ckwargs = torch.utils._pytree.tree_map(lambda v: cpu_device(to_cpu(v)), kwargs)
    try:
        with mode, torch.no_grad():
            value = run_op(gm, node, cargs, ckwargs)
    except Exception:  # noqa: BLE001 - keep what Dynamo recorded
        value = value_of(node)
    if dev.type == "cpu":
        return value
    return torch.utils._pytree.tree_map(lambda v: place(v, dev) if isinstance(v, torch.Tensor) else v, value)


def _with_grad(value: Any, old: Any) -> Any:
    """``value`` with the ``requires_grad`` of the captured value ``old`` (both a tensor)."""
    if isinstance(value, torch.Tensor) and isinstance(old, torch.Tensor) and old.requires_grad \
            and not value.requires_grad and (value.is_floating_point() or value.is_complex()):
        try:
            value.requires_grad_(True)
        except RuntimeError:
            pass
    return value


def _set_value(node: fx.Node, value: Any) -> None:
    if value is not None:
        set_value(node, value)
