"""What the gradient rules (FXL301-304, FXL109) share: turning a cut site of
``fxlint.analysis.gradflow`` into a finding that names the parameters, says how much of
their gradient is cut, and gives the usual intent and the fix.

``GradientCut`` is the violation type they share: its fields are the site's
facts, its ``message()`` the one wording; each rule subclasses it with its
``CutText`` (what the cut is, the usual intent, the fix)."""

from __future__ import annotations

import io
import tokenize
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

from ..analysis.gradflow import CutSite, GradFlow, ParamFlow, analyse
from ..capture.program import Program
from ..findings import Severity, Violation
from ..registry import Hit, RuleContext
from ..util.source import Location

_MAX_NAMES = 12
_MAX_MODULES = 8


@dataclass(frozen=True)
class CutText:
    """How one rule speaks about its kind of cut."""

    code: str
    name: str  # "`.detach()`": what the cut is, when the source line is unknown
    what: str  # "`.detach()` stops the gradient here": the headline
    intent: str  # the usual intentional case and how to say so
    fix: str


def names_text(names: Sequence[str]) -> str:
    """Parameter names for a message: all of them when few, grouped by module when
    more (``backbone.0.{weight, bias}``), summarised under their common root when many."""
    names = list(names)
    if len(names) <= _MAX_NAMES:
        return ", ".join(names)
    modules: dict[str, list[str]] = {}
    for n in names:
        mod, _, leaf = n.rpartition(".")
        modules.setdefault(mod, []).append(leaf)
    grouped = [f"{m}.{{{', '.join(leaves)}}}" if m and len(leaves) > 1 else (f"{m}.{leaves[0]}" if m else leaves[0])
               for m, leaves in modules.items()]
    if len(grouped) <= _MAX_MODULES:
        return ", ".join(grouped)
    tops = {n.split(".", 1)[0] for n in names}
    root = f" of {next(iter(tops))}" if len(tops) == 1 else ""
    return f"{len(names)} parameters{root} ({', '.join(grouped[:3])}, ... {grouped[-1]})"


def percent(f: Fraction | float) -> str:
    p = float(f) * 100
    if 0 < p < 1:
        return "<1%"
    if 99 < p < 100:
        return ">99%"
    return f"{round(p)}%"


def code_only(text: str) -> str:
    """A source line without its trailing comment."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return text.strip()
    for tok in tokens:
        if tok.type == tokenize.COMMENT:
            return text[: tok.start[1]].rstrip()
    return text.strip()


def quote(site_source: str | None, fallback: str) -> str:
    """The user's code in backticks (comment dropped, shortened), or ``fallback``."""
    if site_source:
        text = code_only(site_source)
        text = text if len(text) <= 70 else text[:67] + "..."
        return f"`{text}`"
    return fallback


def effect(flow: GradFlow, params: Sequence[str]) -> tuple[list[ParamFlow], list[ParamFlow]]:
    """(parameters that lose every path, parameters that lose some)."""
    lost, partial = [], []
    for name in params:
        pf = flow.params.get(name)
        if pf is None:
            continue
        if pf.lost:
            lost.append(pf)
        elif pf.fraction_cut > 0:
            partial.append(pf)
    return lost, partial


def _others(cut_by: int) -> str:
    """``, by this and 2 other cuts`` when other cut sites stop the same parameters (``cut_by``: the most
    cut sites that stop one of them, this one included)."""
    n = cut_by - 1
    return f", by this and {n} other cut{'s' if n != 1 else ''}" if n > 0 else ""


def partial_text(partial: Sequence[str], fraction_cut: Mapping[str, float], cut_by: Mapping[str, int]) -> str:
    """``a, b (40% of their gradient paths to the output cut); c (10% ...)``: grouped by fraction."""
    groups: dict[str, list[str]] = {}
    for name in partial:
        groups.setdefault(percent(fraction_cut[name]), []).append(name)
    parts = []
    for pct, names in groups.items():
        whose = "its" if len(names) == 1 else "their"
        parts.append(f"{names_text(names)} ({pct} of {whose} gradient paths to the output cut"
                     f"{_others(max(cut_by.get(n, 1) for n in names))})")
    return "; ".join(parts)


@dataclass(frozen=True)
class GradientCut(Violation):
    """Trainable parameters whose gradient one cut site stops: the wording FXL301-FXL304 (and FXL109)
    share. A rule subclasses it and sets ``TEXT``, how it speaks about its kind of cut."""

    TEXT: ClassVar[CutText]

    kind: str  # the cut: detach, data, no_grad, host_sync, tensor_from_tensors
    statement: str  # the user's code at the cut, in backticks (the cut's name when the source is unknown)
    line: int | None  # its line
    cut_parameters: list[str]  # the trainable parameters whose paths to the output pass through the cut
    lost_parameters: list[str]  # those that lose every path: they never receive a gradient
    fraction_cut: dict[str, float]  # per parameter that loses some paths: the share of its paths cut
    cut_by: dict[str, int]  # per such parameter: how many cut sites stop its paths, this one included
    cut_nodes: list[str]  # the graph nodes of the cut

    @property
    def partial_parameters(self) -> list[str]:
        """The parameters that lose some paths and keep others, in ``cut_parameters`` order."""
        return [p for p in self.cut_parameters if p in self.fraction_cut and p not in self.lost_parameters]

    def wording(self) -> CutText:
        return type(self).TEXT

    def headline(self) -> str:
        """What the cut does (the rule's ``what``)."""
        return self.wording().what

    def cost(self) -> str:
        """A sentence on what the site costs besides the gradient (FXL109's host reads), or ``""``."""
        return ""

    def message(self) -> str:
        where = self.statement + (f" (line {self.line})" if self.line is not None else "")
        lost, partial = self.lost_parameters, self.partial_parameters
        parts = []
        if lost:
            one = len(lost) == 1
            parts.append(
                f"{names_text(lost)} never receive{'s' if one else ''} a gradient: "
                f"every path from {'it' if one else 'them'} to the output is cut"
                f"{_others(max(self.cut_by.get(n, 1) for n in lost))}, "
                f"so training never updates {'it' if one else 'them'}"
            )
        if partial:
            parts.append(partial_text(partial, self.fraction_cut, self.cut_by) + ": "
                         + ("it learns" if len(partial) == 1 else "they learn") + " from the remaining paths only")
        cost = self.cost()
        return (f"{where}: {self.headline()}. " + "; ".join(parts) + ". "
                + (cost + " " if cost else "") + self.wording().intent)

    def fix_title(self) -> str:
        return self.wording().fix

    def gain(self) -> str | None:
        """No bytes: the parameters it cuts off get their gradient again."""
        lost, partial = self.lost_parameters, self.partial_parameters
        if lost:
            return f"{names_text(lost)} train{'s' if len(lost) == 1 else ''} again"
        if partial:
            return f"{names_text(partial)} learn{'s' if len(partial) == 1 else ''} through every path again"
        return None


def site_facts(flow: GradFlow, site: CutSite) -> dict[str, Any] | None:
    """A ``GradientCut``'s fields for one cut site, or None when it stops no parameter's gradient."""
    lost, partial = effect(flow, site.params)
    if not lost and not partial:
        return None
    node = site.first.node
    return {
        "kind": site.kind,
        "statement": quote(node.source, ""),
        "line": node.location.line if node.location is not None else None,
        "cut_parameters": list(site.params),
        "lost_parameters": [p.name for p in lost],
        "fraction_cut": {p.name: float(p.fraction_cut) for p in lost + partial},
        "cut_by": {p.name: p.cut_by for p in lost + partial},
        "cut_nodes": [c.node.name for c in site.cuts],
    }


def cut_hit(flow: GradFlow, site: CutSite, violation: type[GradientCut], anchors: tuple[Location, ...] = (),
            **fields: Any) -> Hit | None:
    """The finding for one cut site (a ``violation``, with ``fields`` besides the site's facts), or None
    when it stops no parameter's gradient. Error when a parameter never trains, else warning."""
    facts = site_facts(flow, site)
    if facts is None:
        return None
    if not facts["statement"]:
        facts["statement"] = violation.TEXT.name
    v = violation(**facts, **fields)
    return Hit(site.first.node, v, severity=Severity.ERROR if v.lost_parameters else Severity.WARNING,
               anchors=anchors, dedup=",".join(site.params))


def cut_hits(program: Program, ctx: RuleContext, kind: str, violation: type[GradientCut],
             anchors_of: Callable[[CutSite], Iterable[Location]] | None = None,
             fields_of: Callable[[CutSite, tuple[Location, ...]], dict[str, Any]] | None = None) -> Iterator[Hit]:
    """One hit per site of ``kind`` that stops a trainable parameter's gradient: a ``violation`` with
    the site's facts and what ``fields_of(site, anchors)`` adds (a rule's own fields).

    Gradient rules speak only about training: an ``eval()`` model, or a
    capture with autograd off, gets nothing from them.
    """
    if not ctx.training:
        return
    flow = analyse(program)
    for site in flow.sites(kind):
        anchors = tuple(anchors_of(site)) if anchors_of is not None else ()
        fields = fields_of(site, anchors) if fields_of is not None else {}
        hit = cut_hit(flow, site, violation, anchors, **fields)
        if hit is not None:
            yield hit
