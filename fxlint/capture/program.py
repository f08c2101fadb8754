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
