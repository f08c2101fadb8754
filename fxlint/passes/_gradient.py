"""What the gradient rules (FXL301-304, FXL109) share: turning a cut site of
``fxlint.gradflow`` into a finding that names the parameters, says how much of
their gradient is cut, and gives the usual intent and the fix."""

from __future__ import annotations

import io
import tokenize
from dataclasses import dataclass
from fractions import Fraction
from typing import Iterator, Sequence

from ..findings import Severity
from ..gradflow import GradFlow, ParamFlow, Site, analyse
from ..program import Program
from ..registry import Hit, RuleContext
from ..source import Location

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


def percent(f: Fraction) -> str:
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


def _others(pfs: Sequence[ParamFlow]) -> str:
    """``, by this and 2 other cuts`` when other cut sites stop the same parameters."""
    n = max((pf.cut_by for pf in pfs), default=1) - 1
    return f", by this and {n} other cut{'s' if n != 1 else ''}" if n > 0 else ""


def partial_text(partial: list[ParamFlow]) -> str:
    """``a, b (40% of their gradient paths to the output cut); c (10% ...)``: grouped by fraction."""
    groups: dict[str, list[ParamFlow]] = {}
    for pf in partial:
        groups.setdefault(percent(pf.fraction_cut), []).append(pf)
    parts = []
    for pct, pfs in groups.items():
        whose = "its" if len(pfs) == 1 else "their"
        parts.append(f"{names_text([p.name for p in pfs])} ({pct} of {whose} gradient paths to the output cut"
                     f"{_others(pfs)})")
    return "; ".join(parts)


def site_hit(flow: GradFlow, site: Site, text: CutText, anchors: tuple[Location, ...] = (),
             extra: str = "") -> Hit | None:
    """The finding for one cut site, or None when it stops no parameter's gradient."""
    lost, partial = effect(flow, site.params)
    if not lost and not partial:
        return None
    node = site.first.node
    line = node.location.line if node.location is not None else None
    where = quote(node.source, text.name) + (f" (line {line})" if line is not None else "")
    parts = []
    if lost:
        one = len(lost) == 1
        parts.append(
            f"{names_text([p.name for p in lost])} never receive{'s' if one else ''} a gradient: "
            f"every path from {'it' if one else 'them'} to the output is cut{_others(lost)}, "
            f"so training never updates {'it' if one else 'them'}"
        )
    if partial:
        parts.append(partial_text(partial) + ": "
                     + ("it learns" if len(partial) == 1 else "they learn") + " from the remaining paths only")
    message = f"{where}: {text.what}. " + "; ".join(parts) + f". {extra}{text.intent}"
    severity = Severity.ERROR if lost else Severity.WARNING
    return Hit(
        node=node,
        message=message,
        fix=text.fix,
        severity=severity,
        anchors=anchors,
        details={
            "kind": site.kind,
            "cut_parameters": list(site.params),
            "lost_parameters": [p.name for p in lost],
            "fraction_cut": {p.name: float(p.fraction_cut) for p in lost + partial},
            "cut_nodes": [c.node.name for c in site.cuts],
            "dedup": ",".join(site.params),
        },
    )


def cut_hits(program: Program, ctx: RuleContext, kind: str, text: CutText,
             anchors_of=None) -> Iterator[Hit]:
    """One hit per site of ``kind`` that stops a trainable parameter's gradient.

    Gradient rules speak only about training: an ``eval()`` model, or a
    capture with autograd off, gets nothing from them.
    """
    if not ctx.training:
        return
    flow = analyse(program)
    for site in flow.sites(kind):
        anchors = tuple(anchors_of(site)) if anchors_of is not None else ()
        hit = site_hit(flow, site, text, anchors)
        if hit is not None:
            yield hit
