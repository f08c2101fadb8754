"""What one capture produced, as a whole: every graph, the graph breaks between
them, and (when the model really ran) what autograd reached from its outputs.

Most rules look at one graph at a time (``scope="graph"``). Some questions are
about the program: a graph break is in no graph (FXL501); a ``.item()`` ends
one graph and its Python number enters the next (FXL304); a parameter cut in
one graph may still train through another. Rules registered with
``scope="program"`` get a ``Program``: the canonical views in capture order,
the breaks with the user's line, and the runtime facts when there are some.
"""

from __future__ import annotations

import functools
import os
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..util.source import Location

if TYPE_CHECKING:  # pragma: no cover
    from ..canon import CanonNode, GraphView


@dataclass(frozen=True)
class GraphBreak:
    """A Dynamo graph break: the reason and the user's line.

    ``graph`` is the label of the captured graph this break ended, when Dynamo
    compiled one (a break before any traced op ends no graph).
    ``skipped_frame`` names the function Dynamo gave up on and runs eagerly
    (a graph break inside a loop): nothing in it was captured; ``location`` is
    then the function's ``def`` line. ``expression`` is the source text of the
    expression Dynamo stopped at (``aux_loss.item()``), from the frame's columns.
    """

    reason: str
    location: Location | None
    stack: tuple[Location, ...] = ()
    graph: str | None = None
    skipped_frame: str | None = None
    expression: str | None = None

    @property
    def headline(self) -> str:
        """The first line of Dynamo's reason."""
        return self.reason.strip().splitlines()[0].strip() if self.reason.strip() else "graph break"

    @property
    def hint(self) -> str | None:
        """Dynamo's own ``Hint:`` line, when the reason has one."""
        for line in self.reason.splitlines():
            text = line.strip()
            if text.startswith("Hint:"):
                return text.removeprefix("Hint:").strip() or None
        return None


@dataclass(frozen=True)
class AutogradReach:
    """What autograd reaches from the values the model returned (``fxlint.lint`` on a
    module or callable, where the model really runs once).

    ``parameters``: dotted names of the trainable parameters with a path from
    the returned values (the ones ``backward()`` would give a gradient).
    ``outputs``: (graph label, output position) of every graph output on such
    a path: an output that is not there left the graph only through Python.
    ``known``: the parameters the run could name (those passed to a graph as
    inputs); only about these can ``parameters`` say "not reached".
    """

    parameters: frozenset[str]
    outputs: frozenset[tuple[str, int]]
    known: frozenset[str] = frozenset()

    def lost(self, name: str) -> bool:
        """True when autograd proves ``name`` gets no gradient from the returned values."""
        return name in self.known and name not in self.parameters


@dataclass
class Program:
    """Every graph of one capture, the breaks between them, and runtime facts."""

    views: list[GraphView]
    breaks: list[GraphBreak] = field(default_factory=list)
    reach: AutogradReach | None = None  # None when the model did not run (backend, fx, export)
    cache: dict[str, Any] = field(default_factory=dict)  # shared analyses, computed once per program

    def __iter__(self) -> Iterator[GraphView]:
        return iter(self.views)

    def __len__(self) -> int:
        return len(self.views)

    def view(self, label: str) -> GraphView | None:
        return next((v for v in self.views if v.label == label), None)

    def view_of(self, node: CanonNode) -> GraphView | None:
        for v in self.views:
            if v.by_name.get(node.name) is node:
                return v
        return None

    @classmethod
    def of(cls, views: Sequence[GraphView] | Program) -> Program:
        return views if isinstance(views, Program) else cls(list(views))


_LOCAL = re.compile(r"L\['([A-Za-z_]\w*)'\]")
_IDENT = re.compile(r"[A-Za-z_]\w*")


def link_handovers(views: Sequence[GraphView]) -> None:
    """Follow the user's locals over graph breaks: a value a graph returns to Python because the code after
    the break reads it (``loop_index = arange(N).repeat(2, 1)`` before a break, ``torch.cat([e, loop_index])``
    after it) is the input ``L['loop_index']`` of a later graph Dynamo resumes the same function in
    (``torch_dynamo_resume_in_<function>_at_<line>``), possibly after more breaks whose graphs do not read it.
    Sets ``CanonNode.handed_to`` of the returned node.

    A local is followed only while nothing else may read or change it: the walk stops at a statement that
    broke and reads it (that statement runs eagerly, outside every graph) and at a resumed graph that returns
    a new value under its name. The returned node must be the value of that local: Dynamo names a node after
    the local it is stored in, or the line assigns it."""
    from ..canon.text import user_name

    for i, view in enumerate(views):
        loc = getattr(view.graph_break, "location", None)
        if loc is None:
            continue
        for out in view.outputs:
            if out.kind != "op":
                continue
            names = {n for n in (out.name, re.sub(r"_\d+$", "", out.name), user_name(out)) if n}
            if not any(_returns_last(view, out, n) for n in names):
                continue
            for name in names:
                target = _received(views, i, loc.function, loc.file, name)
                if target is None or target in out.handed_to:
                    continue
                # every read of the local in the function must be a read by the graph that receives it: a
                # `return loop`, `cache.append(loop)` or a later `loop.add_(1)` reads it where no graph shows
                used = Counter(u.location.line for u in target.users if u.location is not None)
                reads = _local_reads(loc.file, loc.function, name, out.location.line if out.location else None)
                if reads is not None and all(used[line] >= k for line, k in reads.items()):
                    out.handed_to.append(target)


def _returns_last(view: GraphView, node: CanonNode, name: str) -> bool:
    """Is ``node`` the last value ``view`` returns under the local ``name``?"""
    from ..canon.text import user_name

    later = view.outputs[view.outputs.index(node) + 1:]
    return not any(o.kind == "op" and name in (o.name, re.sub(r"_\d+$", "", o.name), user_name(o)) for o in later)


def _received(views: Sequence[GraphView], i: int, function: str, file: str, name: str) -> CanonNode | None:
    """The input ``L['name']`` of the first graph after ``views[i]`` resumed in ``function`` of ``file`` that reads
    the local, when no statement that broke on the way reads it and no graph on the way returns a new value of it."""
    from ..canon.text import user_name

    prefix = f"torch_dynamo_resume_in_{function}_at_"
    brk = views[i].graph_break
    if name in _IDENT.findall(getattr(brk, "expression", None) or getattr(brk.location, "code", None) or ""):
        return None
    for later in views[i + 1:]:
        resumed = [n for n in later.nodes if _resumed_in(n, prefix, file)]
        if not resumed:
            if any(n.location is not None and n.location.function == function and n.location.file == file
                   for n in later.nodes):
                return None  # the function is called anew: its locals are another call's
            continue
        hit = next((n for n in resumed if n.kind == "input" and _LOCAL.fullmatch(n.param_name or "")
                    and _LOCAL.fullmatch(n.param_name or "").group(1) == name), None)  # type: ignore[union-attr]
        if hit is not None:
            return hit
        if any(o.kind == "op" and name in (o.name, user_name(o)) for o in later.outputs):
            return None  # the resumed code assigns the local anew
        nxt = later.graph_break
        if nxt is None or nxt.location is None or not nxt.location.function == function:
            return None
        if name in _IDENT.findall(nxt.expression or nxt.location.code or ""):
            return None
    return None


def _resumed_in(node: CanonNode, prefix: str, file: str) -> bool:
    """Is ``node`` in, or read by, the code of a resume function of ``file`` whose name starts with ``prefix``?"""
    places = [node.location] + [u.location for u in node.users]
    return any(p is not None and p.function.startswith(prefix) and p.file == file for p in places)


def _local_reads(file: str, function: str, name: str, line: int | None) -> Counter[int] | None:
    """How many times each line of ``function`` (the ``def`` in ``file`` that spans ``line``) reads the local
    ``name``; None when the source cannot be read."""
    import ast

    try:
        tree = _parsed(file, os.path.getmtime(file))
    except OSError:
        return None
    if tree is None or line is None:
        return None
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.name == function \
                and fn.lineno <= line <= (fn.end_lineno or fn.lineno):
            return Counter(n.lineno for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == name
                           and isinstance(n.ctx, ast.Load))
    return None


@functools.lru_cache(maxsize=64)
def _parsed(file: str, mtime: float) -> Any:
    import ast

    try:
        with open(file, encoding="utf-8") as fh:
            return ast.parse(fh.read())
    except (OSError, SyntaxError, ValueError):
        return None
