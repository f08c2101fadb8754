"""One finding per copy when a line runs several times per call: ``merge_repeats`` says how often the
line ran and how many of those runs make the copy it describes, and ``apart`` keeps the findings of
different graphs on one line (different copies) instead of the first graph's alone."""

from __future__ import annotations

import torch

import fxlint
from fxlint.analysis.engine import apart, merge_repeats
from fxlint.findings import Finding, Severity
from tests.copy_helpers import line_with


def nchw(x, i):
    y = (x * i).permute(0, 3, 1, 2).contiguous()  # helper
    torch._dynamo.graph_break()  # its own frame: one graph per value of i (a specialised int)
    return y


def four_calls(a, b):
    return [nchw(a, 1), nchw(a, 2), nchw(a, 3), nchw(b, 4)]


def test_a_helper_called_four_times_says_four_and_keeps_the_fourth_copy():
    """Three calls copy `a` (the same finding, three graphs), the fourth copies `b`: the merged finding
    said "runs 3 times per call (a loop)" and the fourth's finding was dropped (its copy unexplained)."""
    a, b = torch.randn(2, 4, 4, 8), torch.randn(2, 2, 2, 16)
    with torch.no_grad():
        rep = fxlint.lint(four_calls, (a, b), select="FXL101", confirm=True, config=False)
    line = line_with(nchw, "# helper")
    got = sorted(rep.findings, key=lambda f: -(f.bytes or 0))
    assert [(f.line, f.bytes, f.repeats, f.status) for f in got] == [(line, 3 * 1024, 3, "confirmed"),
                                                                     (line, 512, 1, "confirmed")]
    assert "This line runs 4 times per call; 3 of them make this copy" in got[0].message
    assert "times per call" not in got[1].message
    assert rep.unexplained == []


def _finding(message: str, bytes_: int, graph: str = "graph 0") -> Finding:
    return Finding(code="FXL101", name="contiguous-copy", severity=Severity.WARNING, message=message, fix="",
                   file="m.py", line=3, bytes=bytes_, graph=graph)


def test_merge_repeats_of_a_loop_and_apart_of_different_copies():
    loop = merge_repeats([_finding("copies 1 kB.", 1024, f"graph {i}") for i in range(3)])
    assert [f.bytes for f in loop] == [3072] and loop[0].message.endswith(
        "This line makes this copy 3 times per call; the bytes are the total.")
    kept = apart([_finding("copies 1 kB.", 1024), _finding("copies 512 B.", 512, "graph 1"),
                  _finding("copies 1 kB.", 1024, "graph 2")])
    assert [f.dedup for f in kept] == ["", "~1", ""]
    assert len({f.key() for f in kept}) == 2  # the repeated one still dedupes with the first
