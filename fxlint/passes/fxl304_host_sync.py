"""`.item()`, `.tolist()`, `.numpy()`, `float(t)`: a host sync that turns a tensor into Python numbers, and the gradient of the parameters behind it stops there.

## What it does
Finds the places where a value computed from trainable parameters leaves the
tensor world as a Python number and names the parameters whose gradient stops
there. Under `torch.compile` (default settings) such a call is a graph break:
the number enters the next graph as a constant. fxlint reads the break from
Dynamo (its reason and your line), finds the tensor that was synced (an
output of the graph the break ended), and follows the parameters that reach
it. With `capture_scalar_outputs=True` the sync stays inside the graph and is
followed like any other cut.

In `fxlint.lint` the model runs once, and autograd settles the verdict:

* the synced tensor itself still reaches the returned values (`print(loss.item());
  return loss`): a read-out, nothing is cut, no finding (FXL501 still reports
  the graph break);
* **error**: parameters whose only way to the output was through the number
  never receive a gradient (autograd gives them none);
* **warning**: the others lose the share of their gradient paths that went
  through the number (a scale, a normalisation, a loss term), given as a
  fraction.

The compile backend sees one graph at a time, before anything runs: it cannot
tell whether the number feeds the loss, so it warns and names the parameters
whose gradient cannot flow through it.

An `eval()` model, or a capture with autograd off, gets no FXL304 finding
(the break itself is FXL501's).

## Why is this bad?
A loss or a scale rebuilt from `.item()` values looks right and trains wrong:
the gradient of every term that went through Python is silently zero. Each
sync also stalls the GPU until the value is ready, and breaks the compiled
graph.

## Example
```python
scale = self.gate(h).mean().item()       # gate.* never trains
return self.decoder(h) * scale
```

## Use instead
```python
scale = self.gate(h).mean()              # stays a tensor: gradient, no sync, no break
return self.decoder(h) * scale
```

## When it is intentional
A number for logging or a Python decision (early exit, a schedule) whose
gradient is not wanted: move it out of the compiled forward, or silence the
line with `# fxlint: ignore[FXL304]`.

## With a target device (`--device cuda`)
On a device every host sync stalls the pipeline: the host waits until the
device has run everything queued before it, then reads the value, whether or
not gradients flow. With a target device (`fxlint lint --device cuda`,
`fxlint.lint(..., device="cuda")`; a simulation, see docs/device.md) FXL304
also reports, **in inference too**, each place where the host reads a value
that lives on the device: `.item()`, `.tolist()`, `.numpy()`, `float(t)`,
`bool(t)` in control flow (`if t.sum() > 0:`), `nonzero()` and boolean-mask
indexing (the result's size is read back), `print(t)`. A value already on
the host (after `.cpu()`) is not a device sync: the `.cpu()` itself is the
sync, reported once by FXL106 with its bytes. In training, a sync that also
cuts a gradient is one finding that says both.

`details` with a target device: `device` (where the value waits), `sync` (the
kind: `item`, `tolist`, `numpy`, `bool`, `nonzero`, `mask`, `print`, `scalar`).

The fraction of paths cut is counted as in FXL301 (`fxlint explain FXL301`);
for a number that leaves through a graph break it is the share of the
parameter's gradient paths that end in the synced value.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import ClassVar

from ..analysis.gradflow import GradFlow, analyse
from ..canon import CanonNode, GraphView
from ..capture.program import GraphBreak, Program
from ..findings import Severity
from ..registry import Hit, RuleContext, rule
from ..util.source import Location
from ._gradient import CutText, GradientCut, cut_hits, names_text, percent, quote

_HOST_SYNC = re.compile(r"Tensor\.(item|tolist|numpy)\(\)|capture_scalar_outputs|generic_jump|data[- ]dependent",
                        re.I)


@dataclass(frozen=True)
class HostSync(GradientCut):
    """A value computed from trainable parameters that becomes a Python number: inside a graph
    (``capture_scalar_outputs``), worded as any cut, or at a graph break (``reason`` set)."""

    TEXT: ClassVar[CutText] = CutText(
        code="FXL304",
        name="`.item()`",
        what="`.item()` turns the tensor into a Python number (a host sync): no gradient flows through it",
        intent="Only for logging or a Python decision? Move it out of the model, or say so with "
               "`# fxlint: ignore[FXL304]`.",
        fix="keep the value as a tensor (e.g. `y * s` with `s = t.mean()`, not `t.mean().item()`); "
            "call `.item()` only to log, outside the compiled model",
    )

    reason: str | None = None  # the graph break Dynamo reported, its first line (None: the sync stays in a graph)
    ran: bool | None = None  # at a graph break: the model ran (fxlint.lint), so autograd settled who never trains
    device: str | None = None  # with a target device: the device the host waits for ("cuda:0")
    sync: str | None = None  # with a target device: item, tolist, numpy, bool, nonzero, mask, print, scalar

    def stall(self) -> str:
        """The device-sync sentence (with a target device), or ``""``."""
        if self.device is None:
            return ""
        return (f"On {self.device} the host waits here for the device to finish all the work queued before it "
                "(a host sync) on every call, and the pipeline drains.")

    def message(self) -> str:
        if self.device is not None and not self.cut_parameters:
            where = self.statement + (f" (line {self.line})" if self.line is not None else "")
            what = {"bool": "the host needs the value of a tensor for Python control flow",
                    "nonzero": "the host reads the number of nonzero elements (the result's size)",
                    "mask": "the host reads how many elements the mask selects (the result's size)",
                    "print": "`print` reads the tensor on the host"}.get(self.sync or "",
                                                                        "the value becomes a Python number")
            return f"{where}: {what}. {self.stall()}"
        extra = (" " + self.stall()) if self.device is not None else ""
        if self.reason is None:
            return super().message() + extra
        where = self.statement + (f" (line {self.line})" if self.line is not None else "")
        head = (f"{where}: the value becomes a Python number here (a host sync and a graph break); "
                "no gradient flows through a Python number.")
        lost, partial = self.lost_parameters, self.partial_parameters
        parts = []
        if lost:
            parts.append(f"{names_text(lost)} never receive{'s' if len(lost) == 1 else ''} a gradient: "
                         f"{'its' if len(lost) == 1 else 'their'} only way to the output is through this number "
                         "(autograd confirms it on the run)")
        if partial:
            groups: dict[str, list[str]] = {}
            for p in partial:
                groups.setdefault(percent(self.fraction_cut[p]), []).append(p)
            shares = "; ".join(f"{names_text(ns)} ({pct} of {'its' if len(ns) == 1 else 'their'} gradient paths)"
                               for pct, ns in groups.items())
            if self.ran:
                parts.append(f"{shares} lose the paths through this number and learn from the others only")
            else:
                parts.append(f"{shares}: their gradient cannot flow through this number; if it feeds the loss "
                             "(a scale, a normalisation, a loss term) those paths are cut "
                             "(`fxlint.lint` runs the model and tells)")
        return head + " " + "; ".join(parts) + ". " + self.TEXT.intent + extra

    def fix_title(self) -> str:
        if self.device is not None and not self.cut_parameters:
            return {"bool": "keep the decision on the device (`torch.where(cond, a, b)`) or take it once outside "
                            "the per-step code",
                    "nonzero": "keep the shape static (`torch.where`, `masked_fill`), or `nonzero_static(size=...)`",
                    "mask": "keep the shape static: `torch.where(mask, x, 0)` or `x.masked_fill(~mask, 0)`",
                    "print": "log outside the per-step code, or every N steps"}.get(
                self.sync or "", "keep the value a tensor on the device; read it on the host only to log, "
                                 "every N steps, outside the compiled model")
        return super().fix_title()


@rule("FXL304", "host-sync", "warning", scope="program", violation=HostSync)
def check(program: Program, ctx: RuleContext) -> Iterator[Hit]:
    device = ctx.device if ctx.device is not None and not ctx.device.startswith("cpu") else None
    done: set[int] = set()  # the synced nodes reported
    if ctx.training:
        for hit in cut_hits(program, ctx, "host_sync", HostSync):  # syncs kept inside a graph
            node = hit.node
            src = node.input if node is not None else None
            if device is not None and node is not None and src is not None and _on_device(src) \
                    and isinstance(hit.violation, HostSync):
                hit.violation = replace(hit.violation, device=device, sync=node.op)
            done.add(id(node))
            yield hit
        flow = analyse(program)
        for b in program.breaks:
            if b.graph is None or not _HOST_SYNC.search(b.reason):
                continue
            view = program.view(b.graph)
            synced = _synced_output(view, b) if view is not None else None
            if view is None or synced is None:
                continue
            params = flow.reaching(view, synced)
            if not params:
                continue  # no trainable parameter's gradient reaches the number (or it is a bool/int)
            brk = _break_hit(program, flow, view, synced, params, b)
            if brk is not None:
                if device is not None and _on_device(synced) and isinstance(brk.violation, HostSync):
                    brk.violation = replace(brk.violation, device=device, sync=_sync_kind(b))
                done.add(id(synced))
                yield brk
    if device is not None:
        yield from _device_syncs(program, device, done)


def _on_device(node: CanonNode) -> bool:
    t = node.tensor
    return t is not None and t.device.type not in ("cpu", "meta")


#: graph breaks where the host reads a tensor: the syncs of FXL304's graph-break path, and, with a
#: target device, `print(t)` and ops whose result size depends on the data
_DEVICE_SYNC = re.compile(_HOST_SYNC.pattern + r"|builtin operator .print.|Dynamic shape operator", re.I)
#: ops that read a device value on the host inside a graph (capture_scalar_outputs and friends)
_SYNC_OPS = {"item", "tolist", "numpy", "nonzero", "masked_select", "argwhere", "unique"}


def _sync_kind(b: GraphBreak) -> str:
    text = b.reason
    if "print" in text and "builtin operator" in text:
        return "print"
    if "generic_jump" in text or "data-dependent" in text.lower() or "data dependent" in text.lower():
        return "bool"
    m = re.search(r"Tensor\.(item|tolist|numpy)\(\)", text)
    if m:
        return m.group(1)
    if "Dynamic shape operator" in text:
        return "nonzero" if "nonzero" in (b.expression or "") else "mask"
    if "capture_scalar_outputs" in text:
        return "item"
    return "scalar"


def _device_syncs(program: Program, device: str, done: set[int]) -> Iterator[Hit]:
    """With a target device: every host read of a device value, in inference too."""
    for b in program.breaks:
        if not _DEVICE_SYNC.search(b.reason):
            continue
        view = program.view(b.graph) if b.graph is not None else None
        synced = _synced_output(view, b) if view is not None else _named_value(program, b)
        if synced is None and view is not None and "Dynamic shape operator" in b.reason:
            synced = _last_on_line(view, b)
        if synced is None or id(synced) in done or not _on_device(synced):
            continue
        done.add(id(synced))
        yield _device_hit(synced, b.location, b.location.code if b.location else None, device, _sync_kind(b),
                          b.headline)
    for view in program.views:
        for node in view.nodes:
            src = node.input
            if node.op not in _SYNC_OPS or id(node) in done or src is None or not _on_device(src):
                continue
            if node.op == "masked_select":
                kind = "mask"
            else:
                kind = node.op if node.op in ("item", "tolist", "numpy", "nonzero") else "nonzero"
            done.add(id(node))
            yield _device_hit(node, node.location, node.location.code if node.location else None, device, kind,
                              None)


def _named_value(program: Program, b: GraphBreak) -> CanonNode | None:
    """The tensor a break reads when no graph ended there (nothing was computed since the last
    break: ``print(x)`` of an input): the local it names, as a graph took or returned it."""
    receiver = _receiver(b.expression)
    if receiver is None:
        return None
    pattern = re.compile(rf"{re.escape(receiver)}(_\d+)?")
    for view in program.views:
        for node in view.nodes:
            if node.op == "placeholder" and node.param_name == f"L['{receiver}']":
                return node
    for view in program.views:
        for out in view.outputs:
            if pattern.fullmatch(out.name):
                return out
    return None


def _last_on_line(view: GraphView, b: GraphBreak) -> CanonNode | None:
    """The break's tensor when the expression names none (``x[x > 0]``): the last output computed on
    the break's line (the mask)."""
    if b.location is None:
        return None
    here = [o for o in view.outputs if o.tensor is not None and o.location is not None
            and (o.location.file, o.location.line) == (b.location.file, b.location.line)]
    return max(here, key=lambda o: o.position) if here else None


def _device_hit(node: CanonNode, location: Location | None, code: str | None, device: str, kind: str,
                reason: str | None) -> Hit:
    name = {"bool": "`bool(t)`", "print": "`print(t)`", "nonzero": "`nonzero()`", "mask": "`x[mask]`"}.get(
        kind, f"`.{kind}()`" if kind in ("item", "tolist", "numpy") else "`.item()`")
    violation = HostSync(
        kind="host_sync",
        statement=quote(code, name),
        line=location.line if location is not None else None,
        cut_parameters=[], lost_parameters=[], fraction_cut={}, cut_by={}, cut_nodes=[node.name],
        reason=reason, ran=None, device=device, sync=kind,
    )
    return Hit(node, violation, location=location, severity=Severity.WARNING)


def _synced_output(view: GraphView, b: GraphBreak) -> CanonNode | None:
    """The tensor the host sync read: an output of the graph the break ended.

    Dynamo returns the values on the Python stack at the break (and the live
    locals) as graph outputs, so the tensor is among them; which one is read
    from the expression Dynamo stopped at (``aux_loss.item()``): a local's name
    is the name Dynamo gave its node, an expression computed on the break's
    line is the last output computed there. None when it cannot be told.
    """
    outs = [o for o in view.outputs if o.tensor is not None]
    if not outs:
        return None
    receiver = _receiver(b.expression)
    if receiver is not None:
        named = [o for o in outs if re.fullmatch(rf"{re.escape(receiver)}(_\d+)?", o.name)]
        if named:
            return max(named, key=lambda o: o.position)
    if b.location is not None:
        here = [o for o in outs if o.location is not None and o.location.file == b.location.file
                and o.location.line == b.location.line]
        if here:
            return max(here, key=lambda o: o.position)
    return outs[0] if len(outs) == 1 else None


_SYNC_METHODS = {"item", "tolist", "numpy", "cpu"}
_SYNC_BUILTINS = {"float", "int", "bool", "complex", "print"}


def _receiver(expression: str | None) -> str | None:
    """The local variable a host sync reads, when the expression names one:
    ``aux_loss.item()`` -> ``aux_loss``; ``float(loss)`` -> ``loss``."""
    if not expression:
        return None
    try:
        tree = ast.parse(expression, mode="eval").body
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        target = None
        if isinstance(func, ast.Attribute) and func.attr in _SYNC_METHODS:
            target = func.value
        elif isinstance(func, ast.Name) and func.id in _SYNC_BUILTINS and node.args:
            target = node.args[0]
        while isinstance(target, ast.Call) and isinstance(target.func, ast.Attribute) \
                and target.func.attr in _SYNC_METHODS:
            target = target.func.value  # x.cpu().item()
        if isinstance(target, ast.Name):
            return target.id
        if target is not None:
            return None
    return None


def _break_hit(program: Program, flow: GradFlow, view: GraphView, synced: CanonNode, params: list[str],
               b: GraphBreak) -> Hit | None:
    reach = program.reach
    position = view.outputs.index(synced)
    if reach is not None and (view.label, position) in reach.outputs:
        return None  # the tensor itself goes on to the output: the number is a read-out
    through = flow.paths_to(view, synced)
    share = {}
    for p in params:
        total = flow.params[p].paths if p in flow.params else 0
        share[p] = Fraction(min(through.get(p, 0), total), total) if total else Fraction(1)
    lost = [p for p in params if reach.lost(p)] if reach is not None else []
    violation = HostSync(
        kind="host_sync",
        statement=quote(b.location.code if b.location else None, HostSync.TEXT.name),
        line=b.location.line if b.location is not None else None,
        cut_parameters=list(params),
        lost_parameters=lost,
        fraction_cut={p: float(share[p]) for p in params},
        cut_by={},  # a graph break is not one of the in-graph cut sites gradflow counts
        cut_nodes=[synced.name],
        reason=b.headline,
        ran=reach is not None,
    )
    return Hit(synced, violation, location=b.location, severity=Severity.ERROR if lost else Severity.WARNING,
               dedup=",".join(params))
