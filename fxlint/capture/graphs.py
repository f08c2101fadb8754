"""Capture a lint target into canonical graph views.

Three kinds of target:

* an ``nn.Module`` or any callable: run once through Dynamo with graph breaks
  allowed; every captured graph is analysed. The model's buffers (BatchNorm
  running stats) and the RNG state are restored afterwards, so linting leaves
  the model as it found it.
* a ``torch.fx.GraphModule`` (e.g. from ``symbolic_trace``): shapes and strides
  are propagated from the example inputs with fake tensors, on a copy of the
  graph; nothing real runs.
* a ``torch.export.ExportedProgram``: its ATen graph already carries values.
"""

from __future__ import annotations

import copy
import linecache
import re
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx as fx

from ..canon import GraphView, build_view
from ..canon._fx import VALUE_KEYS, value_of
from ..errors import CaptureError, GraphBreakError, ModelError, first_line
from ..util.progress import phase
from ..util.quiet import quiet_torch_logs
from ..util.source import Location, is_internal_file, source_line
from ..util.state import _tensors, preserved_state, tensors_in
from .distributed import unwrap, wrapper_break
from .program import AutogradReach, GraphBreak, Program, link_handovers
from .roles import dynamo_roles


@dataclass
class Captured:
    views: list[GraphView] = field(default_factory=list)
    breaks: list[GraphBreak] = field(default_factory=list)
    training: bool = True
    origin: str = "dynamo"
    module: torch.nn.Module | None = None
    reach: AutogradReach | None = None  # what autograd reached from the returned values
    #: the first call's capture, when that call filled a cache the later calls read (``caches``): the
    #: views above are then the second call's, the program that runs on every call
    first_call: Captured | None = None
    caches: list[str] = field(default_factory=list)  # "blocks.0.attn.attention_bias_cache"
    #: the module's state marks just before and just after the captured call (``state_marks``)
    state_marks: tuple[dict, dict] = field(default_factory=lambda: ({}, {}), repr=False)
    #: with ``capture(..., keep_inputs=True)``: the inputs Dynamo handed the backend, per graph label
    #: (what ``fxlint.compiled`` compiles each graph on)
    example_inputs: dict[str, list[Any]] = field(default_factory=dict)
    #: how many times each graph ran in the captured call (a graph Dynamo reuses, as a helper every layer
    #: calls after a graph break, runs once per caller), per graph label
    runs: dict[str, int] = field(default_factory=dict)

    def program(self) -> Program:
        return Program(list(self.views), list(self.breaks), self.reach)


def normalise_inputs(example_inputs: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``example_inputs`` as (args, kwargs): a tensor, a tuple/list, or a dict of kwargs."""
    if example_inputs is None:
        return (), {}
    if isinstance(example_inputs, dict):
        return (), dict(example_inputs)
    if isinstance(example_inputs, (list, tuple)):
        return tuple(example_inputs), {}
    return (example_inputs,), {}


def capture(target: Any, example_inputs: Any = None, *, keep_inputs: bool = False) -> Captured:
    """Capture ``target`` into canonical views (see module docstring); ``keep_inputs``: keep the
    inputs Dynamo hands each graph (``Captured.example_inputs``)."""
    # Dynamo formats the stack traces it records on nodes from linecache: drop entries of files
    # edited since they were cached (a notebook, a test that rewrites a model file), or findings
    # would quote the old text of a line.
    linecache.checkcache()
    args, kwargs = normalise_inputs(example_inputs)
    target = unwrap(target)  # a DDP-wrapped model is linted as the model it wraps
    if isinstance(target, torch.export.ExportedProgram):
        return _capture_export(target)
    if isinstance(target, fx.GraphModule):
        return _capture_fx(target, args, kwargs)
    if isinstance(target, torch.nn.Module) or callable(target):
        return _capture_dynamo(target, args, kwargs, keep_inputs)
    raise CaptureError(
        f"cannot lint {type(target).__name__}: expected an nn.Module, a callable, "
        "a torch.fx.GraphModule or a torch.export.ExportedProgram"
    )


# --------------------------------------------------------------------------- dynamo


def graph_break_from_reason(reason: Any, graph: str | None = None) -> GraphBreak:
    """A ``GraphBreak`` from Dynamo's reason object (``graph_break_reasons`` entries,
    ``gm.compile_subgraph_reason``); ``graph`` is the label of the graph it ended."""
    frames = list(getattr(reason, "user_stack", None) or [])
    stack = tuple(
        Location(fs.filename, fs.lineno or 0, fs.name, (fs.line or "").strip() or None) for fs in frames
    )
    at = next((i for i in reversed(range(len(stack))) if not is_internal_file(stack[i].file)), None)
    text = str(getattr(reason, "reason", reason)).strip()
    loc = stack[at] if at is not None else None
    expression = _expression(frames[at]) if at is not None else None
    return GraphBreak(reason=text, location=loc, stack=stack, graph=graph, expression=expression)


def _expression(fs: Any) -> str | None:
    """The source text a frame points at (Python 3.11+ frames carry columns)."""
    col, end = getattr(fs, "colno", None), getattr(fs, "end_colno", None)
    if col is None or end is None or getattr(fs, "end_lineno", fs.lineno) not in (None, fs.lineno):
        return None
    import linecache

    raw = linecache.getline(fs.filename, fs.lineno or 0)
    return raw[col:end].strip() or None


def ended_by(gm: fx.GraphModule, label: str) -> GraphBreak | None:
    """The graph break that ended ``gm`` (None when it ended at a return, or at a break that is
    a distributed wrapper's own: a DDPOptimizer bucket split, a call into FSDP's hooks)."""
    reason = getattr(gm, "compile_subgraph_reason", None)
    if reason is None or not getattr(reason, "graph_break", False) or wrapper_break(reason) is not None:
        return None
    return graph_break_from_reason(reason, graph=label)


def view_from_dynamo(gm: fx.GraphModule, label: str) -> GraphView:
    """The canonical view of a graph handed to a Dynamo backend (with the graph break that ended it). Its
    values carry the strides eager gives them (``fxlint.canon.values.eager_layouts``); the graph's own
    are back once the view is built."""
    from ..canon.values import eager_layouts

    with eager_layouts(gm):
        view = build_view(
            gm,
            origin="dynamo",
            label=label,
            grad_enabled=torch.is_grad_enabled(),
            roles=dynamo_roles(gm),
        )
    view.graph_break = ended_by(gm, label)
    return view


def tracing_progress(module: torch.nn.Module | None) -> Callable[[], tuple[float | None, str | None] | None] | None:
    """How far Dynamo's trace of ``module`` got, for the progress line (``fxlint.util.progress.phase``):
    called from another thread, it looks at the frames of the thread tracing now for Dynamo's
    instruction translators and the submodule each one inlines; the furthest in the module's
    own order (``named_modules()``) is the share done. Once no translator runs (Dynamo builds
    and runs the graph), it says so, with no share. Reads Dynamo's internals: when they change,
    the line shows the phase and the time elapsed only."""
    if module is None:
        return None
    order = {id(m): (i, name) for i, (name, m) in enumerate(module.named_modules())}
    total = len(order)
    thread = threading.get_ident()
    best: list[Any] = [0, ""]

    def fraction() -> tuple[float | None, str | None] | None:
        frame = sys._current_frames().get(thread)
        tracing = False
        while frame is not None:
            code = frame.f_code
            if code.co_name == "run" and code.co_filename.endswith("symbolic_convert.py"):
                tracing = True
                tx = frame.f_locals.get("self")
                local = getattr(tx, "symbolic_locals", None)
                value = getattr(local.get("self"), "value", None) if isinstance(local, dict) else None
                hit = order.get(id(value))
                if hit is not None and hit[0] > best[0]:
                    best[:] = hit
            frame = frame.f_back
        if not tracing:
            return (None, "building and running the captured graph") if best[0] else None
        if not best[0]:
            return None
        return best[0] / total, f"tracing {best[1]} ({best[0]}/{total} modules)"

    return fraction


def _capture_dynamo(target: Callable[..., Any], args: tuple, kwargs: dict, keep_inputs: bool = False) -> Captured:
    """The program that runs on every call. The first call is captured; when it changed the module's
    own Python state in a way the next call does not change again (it filled a cache: a dict of
    attention biases, a tensor of relative indices built for this input size), the model is captured
    once more and that second call is what is linted; the first is kept in ``first_call``."""
    module = target if isinstance(target, torch.nn.Module) else getattr(target, "__self__", None)
    module = module if isinstance(module, torch.nn.Module) else None
    first = _capture_dynamo_once(target, args, kwargs, keep_inputs)
    # marks taken around the call itself, not around torch.compile (which, and libraries that wrap it,
    # set attributes of their own on the module: _is_torch_compile, Lightning's _compile_kwargs)
    before, after = first.state_marks
    changed = [k for k in after if before.get(k) != after[k]]
    if not changed or module is None:
        return first
    try:  # once more, eagerly: what changes on every call (a step counter) is not a cache
        with preserved_state(module, (args, kwargs)), quiet_torch_logs():
            target(*args, **kwargs)
    except Exception:  # noqa: BLE001 - the capture ran it; the first call's program stands
        return first
    again = state_marks(module)
    caches = [k for k in changed if again.get(k) == after[k]]
    if not caches:
        return first
    steady = _capture_dynamo_once(target, args, kwargs, keep_inputs)
    steady.first_call, steady.caches = first, caches
    return steady


#: what every nn.Module keeps in its __dict__ (hooks, parameter and buffer tables), and what torch.compile
#: itself marks a module with: not the model's own state
_MODULE_KEYS = frozenset(vars(torch.nn.Module())) | {"_is_torch_compile", "_compile_kwargs", "_compiled_call_impl"}


def state_marks(module: torch.nn.Module | None) -> dict[str, tuple[int, int | None]]:
    """A mark of each attribute a module (and its submodules) keeps in Python (not its parameters,
    buffers or submodules, which ``preserved_state`` restores): the object's identity, and the length
    of a container, so a cache a call fills (a dict that gains an entry, a tensor assigned in place of
    None) reads as a changed mark."""
    if module is None:
        return {}
    marks: dict[str, tuple[int, int | None]] = {}
    for path, m in module.named_modules():
        for key, value in vars(m).items():
            if key in _MODULE_KEYS or key.startswith(("_dynamo", "_torchdynamo")) \
                    or isinstance(value, torch.nn.Module):
                continue
            size = len(value) if isinstance(value, (dict, list, set)) else None
            marks[f"{path}.{key}" if path else key] = (id(value), size)
    return marks


def _capture_dynamo_once(target: Callable[..., Any], args: tuple, kwargs: dict,
                         keep_inputs: bool = False) -> Captured:
    import torch._dynamo
    import torch._dynamo.convert_frame as convert_frame
    import torch._dynamo.utils as dynamo_utils

    module = target if isinstance(target, torch.nn.Module) else getattr(target, "__self__", None)
    module = module if isinstance(module, torch.nn.Module) else None
    result = Captured(training=module.training if module is not None else True, origin="dynamo", module=module)
    ends: list[GraphBreak] = []
    runs = _RunRecord()

    def backend(gm: fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        label = f"graph {len(result.views)}"
        view = view_from_dynamo(gm, label)
        result.views.append(view)
        if keep_inputs:
            result.example_inputs[label] = list(example_inputs)
        end = ended_by(gm, label)
        if end is not None:
            ends.append(end)
        return runs.wrap(gm.forward, view)

    seen_codes = {id(ref()) for ref in convert_frame.input_codes.seen if ref() is not None}
    n_reasons = len(dynamo_utils.graph_break_reasons)
    unimplemented = dict(dynamo_utils.counters["unimplemented"])
    # torch 2.13's @overload signatures omit the two keywords its implementation takes
    compiled = torch.compile(  # type: ignore[call-overload]
        target, backend=backend, isolate_recompiles=True, recompile_limit=64)
    marked = state_marks(module)
    try:
        # a DDP model called inside the target: one graph per frame, not DDPOptimizer's bucket pieces;
        # allow_rnn: trace nn.LSTM/GRU/RNN to their kernel call (torch._VF.lstm...) instead of a graph
        # break, so the lint sees the sequence they are given (FXL207). Only this capture: the
        # backend leaves the user's setting alone, what their compiled program traces is theirs.
        # automatic_dynamic_shapes off: a lint captures the sizes it is given (inputs the user
        # marked dynamic stay dynamic). Left on, a second lint of the same code at another size
        # (a census, another resolution) made Dynamo turn the sizes it saw change into symbols:
        # an encoder's `(s0//4)`-sized stages could then be 1, every layout question undecided,
        # and its copies went unreported where the first size's lint reported them
        with preserved_state(module, (args, kwargs)), quiet_torch_logs(), \
                torch._dynamo.config.patch(optimize_ddp=False, allow_rnn=True, automatic_dynamic_shapes=False), \
                phase("capturing with Dynamo", tracing_progress(module)):
            returned = compiled(*args, **kwargs)
            for label, _ in runs.outputs:
                result.runs[label] = result.runs.get(label, 0) + 1
            require_tensor_output(returned)
            result.reach = runs.safe_reach(returned)
    except ModelError:
        raise
    except Exception as exc:
        from .model_errors import explain_failure

        # one line: the model's own error and its line (run eagerly), or Dynamo's when it runs fine
        raise explain_failure(exc, target, args, kwargs, module) from exc
    finally:
        _forget_new_codes(seen_codes)
        runs.clear()
    result.state_marks = (marked, state_marks(module))
    reasons = [r for r in dynamo_utils.graph_break_reasons[n_reasons:] if wrapper_break(r) is None]
    skipped = _skipped_frames(unimplemented, dict(dynamo_utils.counters["unimplemented"]))
    if _has_fsdp(module):
        # FSDP2's hooks run under torch._dynamo.disable: calling a sharded block in a loop makes
        # Dynamo skip the loop's frame; that is FSDP's break, not the model's
        skipped = [b for b in skipped if "`disable`" not in b.reason]
    result.breaks = _merge_breaks([graph_break_from_reason(r) for r in reasons], ends) + skipped
    link_handovers(result.views)
    return result


def _has_fsdp(module: torch.nn.Module | None) -> bool:
    """Does ``module`` hold a module sharded with ``fully_shard`` (FSDP2)?"""
    if module is None or "torch.distributed.fsdp" not in sys.modules:
        return False
    fsdp_module = getattr(sys.modules["torch.distributed.fsdp"], "FSDPModule", None)
    return fsdp_module is not None and any(isinstance(m, fsdp_module) for m in module.modules())


_SKIPPED_RE = re.compile(r"frame skipped: (?P<func>[^\s(]+) \((?P<file>.+) line (?P<line>\d+)\)")


def _skipped_frames(before: dict[str, int], after: dict[str, int]) -> list[GraphBreak]:
    """Functions Dynamo gave up on during this run (a graph break inside a loop):
    they run eagerly and nothing in them is captured. Dynamo records these only
    in its ``unimplemented`` counters, with the function's ``def`` line."""
    out = []
    for reason, count in after.items():
        if count <= before.get(reason, 0):
            continue
        m = _SKIPPED_RE.search(reason)
        if m is None:
            continue
        file, line = m["file"], int(m["line"])
        loc = None if is_internal_file(file) else Location(file, line, m["func"], source_line(file, line))
        out.append(GraphBreak(reason=reason.strip(), location=loc, skipped_frame=m["func"]))
    return out


def _merge_breaks(reasons: list[GraphBreak], ends: list[GraphBreak]) -> list[GraphBreak]:
    """Dynamo's list of break reasons, each tagged with the graph it ended when one did."""
    out: list[GraphBreak] = []
    pending = list(ends)
    seen: set[tuple] = set()
    for b in reasons:
        key = (b.headline, b.location)
        if key in seen:  # Dynamo records a break again when it restarts the analysis
            continue
        seen.add(key)
        match = next((e for e in pending if (e.headline, e.location) == key), None)
        if match is not None:
            pending.remove(match)
            b = match
        out.append(b)
    out.extend(e for e in pending if (e.headline, e.location) not in seen)
    return out


class _RunRecord:
    """The tensors each captured graph took and returned while the model ran once,
    so that autograd itself can say what the returned values reach.

    Dynamo calls a compiled graph with one value per placeholder, in order; the
    parameters among them are named by the canonical view.
    """

    def __init__(self) -> None:
        self.outputs: list[tuple[str, Any]] = []  # (graph label, returned tuple), kept alive until reach()
        self.param_names: dict[int, str] = {}
        self.params: list[torch.Tensor] = []  # keeps ids stable

    def wrap(self, forward: Callable[..., Any], view: GraphView) -> Callable[..., Any]:
        placeholders = [n for n in view.nodes if n.op == "placeholder" and n.node.op == "placeholder"]

        def run(*a: Any) -> Any:
            for cn, value in zip(placeholders, a):
                if cn.kind == "parameter" and isinstance(value, torch.Tensor) and cn.param_name:
                    self.param_names.setdefault(id(value), cn.param_name)
                    self.params.append(value)
            out = forward(*a)
            self.outputs.append((view.label, out))
            return out

        return run

    def reach(self, returned: Any) -> AutogradReach | None:
        """Walk the autograd graph from the returned tensors (None when the model
        returned no floating-point tensor: then nothing can be said)."""
        roots = [t for t in _tensors(returned) if t.is_floating_point() or t.is_complex()]
        if not roots:
            return None
        names = dict(self.param_names)
        if not names:
            return AutogradReach(frozenset(), frozenset(), frozenset())
        out_of: dict[int, list[tuple[str, int]]] = {}
        keep: list[Any] = []
        for label, out in self.outputs:
            for k, t in enumerate(out if isinstance(out, (list, tuple)) else [out]):
                fn = t.grad_fn if isinstance(t, torch.Tensor) else None
                if fn is not None:
                    keep.append(fn)
                    out_of.setdefault(id(fn), []).append((label, k))
        params: set[str] = set()
        outputs: set[tuple[str, int]] = set()
        seen: dict[int, Any] = {}
        stack = [t.grad_fn for t in roots if t.grad_fn is not None]
        for t in roots:  # a parameter returned as it is
            if t.grad_fn is None and id(t) in names:
                params.add(names[id(t)])
        while stack:
            fn = stack.pop()
            if fn is None or id(fn) in seen:
                continue
            seen[id(fn)] = fn
            outputs.update(out_of.get(id(fn), ()))
            var = getattr(fn, "variable", None)  # AccumulateGrad: a leaf
            if var is not None and id(var) in names:
                params.add(names[id(var)])
            stack.extend(nxt for nxt, _ in fn.next_functions if nxt is not None)
        return AutogradReach(frozenset(params), frozenset(outputs), frozenset(names.values()))

    def safe_reach(self, returned: Any) -> AutogradReach | None:
        """``reach``, or None if walking the autograd graph fails: fxlint then says
        what the graphs alone show, as the backend does."""
        try:
            return self.reach(returned)
        except Exception:  # noqa: BLE001 - never blame the user's model for fxlint's walk
            return None

    def clear(self) -> None:
        self.outputs.clear()
        self.params.clear()


def require_tensor_output(returned: Any) -> None:
    """A model must return tensors: fxlint follows what it computes into them (``ModelError``)."""
    if tensors_in(returned):
        return
    if returned is None:
        what = "None"
    elif isinstance(returned, torch.SymInt):
        what = "an int (a size)"
    else:
        kind = type(returned).__name__
        text = repr(returned)
        article = "an" if kind[:1].lower() in "aeiou" else "a"
        what = f"{article} {kind} ({text[:40] + '...' if len(text) > 40 else text})"
    raise ModelError(
        f"the model returned {what}, with no tensor in it; fxlint follows what a model computes into the "
        "tensors it returns: return them (a tensor, or a tuple, list, dict or dataclass of tensors)"
    )


def _forget_new_codes(seen_before: set[int]) -> None:
    """Drop Dynamo cache entries made for code objects no one had compiled before.

    Without this, linting the same model class again and again would pile up
    cache entries until Dynamo's recompile limits stopped capturing anything.
    Code the user compiled themselves keeps its entries.
    """
    try:
        import torch._dynamo.convert_frame as convert_frame
        from torch._dynamo.eval_frame import reset_code

        for ref in list(convert_frame.input_codes.seen):
            code = ref()
            if code is not None and id(code) not in seen_before:
                reset_code(code)
    except Exception:  # noqa: BLE001 - cache hygiene must never fail a lint
        pass


# --------------------------------------------------------------------------- fx


def _has_values(gm: fx.GraphModule) -> bool:
    return any(
        any(k in n.meta for k in VALUE_KEYS)
        for n in gm.graph.nodes
        if n.op not in ("output", "get_attr")
    )


def _capture_fx(gm: fx.GraphModule, args: tuple, kwargs: dict) -> Captured:
    work = with_values(gm, args, kwargs)
    view = build_view(work, origin="fx", label="graph 0", grad_enabled=torch.is_grad_enabled(), roles=fx_roles(work))
    return Captured(views=[view], training=gm.training, origin="fx", module=gm)


def with_values(gm: fx.GraphModule, args: tuple, kwargs: dict) -> fx.GraphModule:
    """A copy of ``gm`` (same submodules, private graph and node metadata) whose nodes carry
    values: fake tensors propagated from the example inputs when the graph has none."""
    from ..canon.values import FakeProp

    work = copy_graph_module(gm)
    if not _has_values(work):
        placeholders = [n for n in work.graph.nodes if n.op == "placeholder"]
        flat = list(args) + [kwargs[n.target] for n in placeholders[len(args):] if n.target in kwargs]
        if len(flat) < len(placeholders):
            missing = [n.target for n in placeholders[len(flat):]]
            raise CaptureError(f"the GraphModule needs inputs for {', '.join(map(str, missing))}")
        try:
            FakeProp(work).propagate(*flat)
        except Exception as exc:
            raise ModelError(
                f"shape propagation through the GraphModule failed: {type(exc).__name__}: {exc}"
            ) from exc
    return work


def copy_graph_module(gm: fx.GraphModule) -> fx.GraphModule:
    """A copy with its own graph (node metadata shallow-copied) sharing parameters and submodules."""
    import warnings

    with warnings.catch_warnings():  # deep-copying a pytree spec warns about LeafSpec in torch 2.13
        warnings.simplefilter("ignore", FutureWarning)
        graph = copy.deepcopy(gm.graph)
    for a, b in zip(gm.graph.nodes, graph.nodes):  # attributes Dynamo sets on nodes (_dynamo_source)
        for key, value in getattr(a, "__dict__", {}).items():
            if key not in b.__dict__:
                b.__dict__[key] = value
    new = fx.GraphModule(gm, graph, class_name=type(gm).__name__)
    _keep_plain_attributes(gm, new)
    for key, value in gm.__dict__.items():  # Dynamo's bookkeeping (compile ids, param sources...)
        if key not in new.__dict__:
            new.__dict__[key] = value
    new.meta = dict(getattr(gm, "meta", {}))
    return new


def _keep_plain_attributes(old: fx.GraphModule, new: fx.GraphModule) -> None:
    """GraphModule's constructor registers every copied tensor attribute as a buffer; a constant
    that was a plain attribute (export's ``lifted_tensor_0``) stays one, so it still reads as a constant."""
    for node in new.graph.nodes:
        if node.op != "get_attr":
            continue
        *path, name = str(node.target).split(".")
        try:
            src = old.get_submodule(".".join(path)) if path else old
            dst = new.get_submodule(".".join(path)) if path else new
        except AttributeError:
            continue
        if name in dst._buffers and name not in src._buffers and name not in src._parameters:
            value = dst._buffers.pop(name)
            setattr(dst, name, value)


def fx_roles(gm: fx.GraphModule) -> dict[str, tuple[str, str | None]]:
    """Roles of the ``get_attr`` nodes of a GraphModule: parameters and buffers by their dotted names."""
    roles: dict[str, tuple[str, str | None]] = {}
    params = {id(p): n for n, p in gm.named_parameters(remove_duplicate=False)}
    buffers = {id(b): n for n, b in gm.named_buffers(remove_duplicate=False)}
    for node in gm.graph.nodes:
        if node.op == "get_attr":
            obj: Any = gm
            for part in str(node.target).split("."):
                obj = getattr(obj, part, None)
            if id(obj) in params:
                roles[node.name] = ("parameter", str(node.target))
            elif id(obj) in buffers and not str(node.target).rsplit(".", 1)[-1].startswith("_tensor_constant"):
                roles[node.name] = ("buffer", str(node.target))
    return roles


# --------------------------------------------------------------------------- export


def _capture_export(ep: torch.export.ExportedProgram) -> Captured:
    from torch.export.graph_signature import InputKind

    kinds = {
        InputKind.USER_INPUT: "input",
        InputKind.PARAMETER: "parameter",
        InputKind.BUFFER: "buffer",
        InputKind.CONSTANT_TENSOR: "constant",
        InputKind.CUSTOM_OBJ: "constant",
        InputKind.TOKEN: "constant",
    }
    roles: dict[str, tuple[str, str | None]] = {}
    constants: dict[str, Any] = {}
    for spec in ep.graph_signature.input_specs:
        name = getattr(spec.arg, "name", None)
        if name is None:
            continue
        kind = kinds.get(spec.kind, "input")
        roles[name] = (kind, spec.target)
        if kind == "constant" and spec.target in ep.constants:
            constants[name] = ep.constants[spec.target]
    view = build_view(ep.graph_module, origin="export", label="exported program", grad_enabled=True,
                      roles=roles, constants=constants)
    return Captured(views=[view], training=True, origin="export", module=None)


# --------------------------------------------------------------------------- one callable graph


def capture_graph_module(target: Any, example_inputs: Any = None) -> tuple[fx.GraphModule, str]:
    """``target`` as one callable GraphModule with values on its nodes, and its origin.

    What ``fxlint.rewrite`` rewrites: a module or callable is captured whole by Dynamo
    (``torch._dynamo.export``: torch-level ops, the user's stack traces, parameters as
    attributes shared with the model, called like the model; shapes static, those of the example
    inputs, as in ``fxlint.lint``); a GraphModule is copied; an
    ExportedProgram gives its ATen-level ``module()``. A graph break is a ``CaptureError``.
    """
    args, kwargs = normalise_inputs(example_inputs)
    if isinstance(target, torch.export.ExportedProgram):
        return target.module(), "export"
    if isinstance(target, fx.GraphModule):
        return with_values(target, args, kwargs), "fx"
    if not (isinstance(target, torch.nn.Module) or callable(target)):
        raise CaptureError(
            f"cannot rewrite {type(target).__name__}: expected an nn.Module, a callable, "
            "a torch.fx.GraphModule or a torch.export.ExportedProgram"
        )
    from torch._dynamo import convert_frame
    from torch._dynamo.eval_frame import export as dynamo_export

    module = target if isinstance(target, torch.nn.Module) else getattr(target, "__self__", None)
    module = module if isinstance(module, torch.nn.Module) else None
    seen_codes = {id(ref()) for ref in convert_frame.input_codes.seen if ref() is not None}
    try:
        with preserved_state(module, (args, kwargs)):
            with quiet_torch_logs():
                # static shapes, as the backend's first compile and the lint see them: under export's
                # default (every dim dynamic) a rule that needs a concrete layout (channels_last
                # strides, FXL204) finds nothing, and the sites the lint reports are not even seen
                with torch._dynamo.config.patch(allow_rnn=True):  # as the lint's capture (FXL207)
                    gm, _guards = dynamo_export(target, assume_static_by_default=True)(*args, **kwargs)
    except Exception as exc:
        # Dynamo reports the user's own exceptions, unsupported constructs and its own tracing
        # limits (a data-dependent size it cannot reason about) alike: the eager model decides
        _raise_if_the_model_raises(target, args, kwargs, module)  # the model's error, not Dynamo's
        first = first_line(exc)
        raise GraphBreakError(
            f"Dynamo cannot capture the model as one graph ({type(exc).__name__}: {first}); rewrite each "
            "graph with torch.compile(model, backend='fxlint', options={'rewrite': True}) instead"
        ) from exc
    finally:
        _forget_new_codes(seen_codes)
    outputs = [n for n in gm.graph.nodes if n.op == "output"]
    returned = [value_of(v) if isinstance(v, fx.Node) else v
                for n in outputs for v in _flat(n.args)]
    require_tensor_output(returned[0] if len(returned) == 1 else returned)
    return gm, "fx"


def _flat(x: Any) -> list[Any]:
    if isinstance(x, (list, tuple)):
        return [v for item in x for v in _flat(item)]
    if isinstance(x, dict):
        return [v for item in x.values() for v in _flat(item)]
    return [x]


def _raise_if_the_model_raises(target: Any, args: tuple, kwargs: dict, module: torch.nn.Module | None) -> None:
    """Dynamo reports an exception the user's code raised as an unsupported construct ("Observed
    exception"); run the model eagerly once to tell a model that raises from a capture problem."""
    from .model_errors import eager_exception, model_error

    exc = eager_exception(target, args, kwargs, module)
    if exc is not None:
        raise model_error(exc) from exc
