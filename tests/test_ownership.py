"""One owner per copy: which rule reports a copy never depends on the selection.

Rules do not ask each other whether they report a copy; a rule declares the codes its hit replaces
on the same node (``@rule(..., supersedes=...)``) and the engine keeps one hit per copy, running the
superseding rules even when they are not selected (``Registry.owners``). The property, over the
zoo, the fuzzer's programs and hand-written overlaps of every ``supersedes`` pair: the findings of a
lint with ``ignore=[CODE]`` are exactly the findings of the full lint less CODE's, and
``select=[CODE]`` gives exactly CODE's.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn as nn
from hypothesis import HealthCheck, given, settings

import fxlint
from fxlint.capture.graphs import capture
from fxlint.cli.commands._common import zoo_models
from fxlint.project.config import resolve
from fxlint.analysis.engine import run_rules
from fxlint.kernels.probe import probing
from fxlint.registry import RuleContext, default_registry
from tests.conftest import ROOT, load_model
from tests.fuzz_programs import Program, programs


def _key(f: fxlint.Finding) -> tuple:
    return (f.code, f.file, f.line, str(f.bytes), f.message)


def _lint_keys(program, training: bool, **select) -> set[tuple]:
    s = resolve(None, config=False, **select)
    with probing(False):
        rep = run_rules(program, s.rules, RuleContext(training=training), s)
    assert not rep.errors, rep.errors
    return {_key(f) for f in rep.findings}


def _assert_ownership_is_selection_free(model, inputs) -> set[str]:
    """The property on one model; returns the codes it found."""
    captured = capture(model, inputs)
    program = captured.program()
    training = captured.training and torch.is_grad_enabled()
    full = _lint_keys(program, training)
    codes = {k[0] for k in full}
    # every code found, and every code that could take a copy over from one found
    owners = {r.code for r in default_registry().rules() if codes & set(r.supersedes)}
    for code in sorted(codes | owners):
        without = _lint_keys(program, training, ignore=[code])
        assert without == {k for k in full if k[0] != code}, (code, without ^ {k for k in full if k[0] != code})
        only = _lint_keys(program, training, select=[code])
        assert only == {k for k in full if k[0] == code}, (code, only ^ {k for k in full if k[0] == code})
    return codes


# --------------------------------------------------------------------------- overlaps of every pair


class PermuteBeforeConv(nn.Module):
    """An NHWC batch made NCHW for a conv: FXL204 owns the copy (drop it), FXL101 does not report it too."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)

    def forward(self, x):
        return self.conv(x.permute(0, 3, 1, 2).contiguous())


class PermuteBeforeConvAndRelu(nn.Module):
    """The same copy with a second, elementwise user: FXL204 does not apply (its result is not only the
    conv's), so FXL101 owns it, whatever is ignored (the issue's example)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)

    def forward(self, x):
        h = x.permute(0, 3, 1, 2).contiguous()
        return self.conv(h), h.relu()


class ContiguousOfExpand(nn.Module):
    """A broadcast made real with `.contiguous()`: a repeat in disguise, FXL104's (use expand), not FXL101's."""

    def forward(self, x):
        return x.unsqueeze(1).expand(-1, 4, -1).contiguous() * 2


class RepeatOfABuffer(nn.Module):
    """A repeat of a fixed value: FXL104 (use expand) owns it over FXL405 (cache it)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("pos", torch.randn(1, 8))

    def forward(self, x):
        return x + self.pos.repeat(x.shape[0], 1)


class TiledTable(nn.Module):
    """A weight-only value tiled over the batch for a bmm: FXL112 (fold the tile) owns it over FXL405."""

    def __init__(self):
        super().__init__()
        self.pos = nn.Parameter(torch.randn(2, 6, 8))

    def forward(self, q):
        k = self.pos.repeat(q.size(0) // 2, 1, 1)
        return torch.bmm(q, k.transpose(-1, -2))


class GatherIntoNodes(nn.Module):
    """A subscript gather summed into nodes: FXL406 (a sparse matmul, no gather) owns it over FXL402
    (index_select for the subscript)."""

    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        keys = torch.randperm(64, generator=g)[:24]
        self.register_buffer("src", keys // 8)
        self.register_buffer("dst", keys % 8)

    def forward(self, x):
        return torch.zeros_like(x).index_add_(0, self.dst, x[self.src])


class FixedGraphTable(GatherIntoNodes):
    """The same message passing from a parameter table in inference: FXL404 (compute it once) owns the gather
    over FXL406 (a sparse matmul every call)."""

    def __init__(self):
        super().__init__()
        self.h = nn.Parameter(torch.randn(8, 4))

    def forward(self, x):
        return x + torch.zeros_like(x).index_add_(0, self.dst, self.h.index_select(0, self.src))


OVERLAPS = [
    (PermuteBeforeConv, (2, 9, 9, 3), {"FXL204"}),
    (PermuteBeforeConvAndRelu, (2, 16, 16, 3), {"FXL101"}),
    (ContiguousOfExpand, (3, 8), {"FXL104"}),
    (RepeatOfABuffer, (4, 8), {"FXL104"}),
    (TiledTable, (6, 5, 8), {"FXL112"}),
    (GatherIntoNodes, (8, 4), {"FXL406"}),
    (FixedGraphTable, (8, 4), {"FXL404"}),
]


@pytest.mark.parametrize("cls,shape,owner", OVERLAPS, ids=[c.__name__ for c, _, _ in OVERLAPS])
def test_each_overlap_has_one_owner_whatever_the_selection(cls, shape, owner):
    torch.manual_seed(0)
    with torch.no_grad():
        codes = _assert_ownership_is_selection_free(cls().eval(), (torch.randn(*shape),))
    assert codes & {"FXL101", "FXL104", "FXL112", "FXL204", "FXL402", "FXL404", "FXL405", "FXL406"} == owner


class PermutedQkvPieces(nn.Module):
    """In training, q, k, v taken after a permute of a reshape: FXL114 (unbind before the permute) owns the
    reshape's backward copy over FXL121 (which would name the unbind as the gradient's cause)."""

    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(16, 48)

    def forward(self, x):
        q, k, v = self.qkv(x).reshape(2, 6, 3, 2, 8).permute(2, 0, 3, 1, 4).unbind(0)
        return (q @ k.transpose(-1, -2)).softmax(-1) @ v


TRAINING_OVERLAPS = [(PermutedQkvPieces, (2, 6, 16), {"FXL114"})]


@pytest.mark.parametrize("cls,shape,owner", TRAINING_OVERLAPS, ids=[c.__name__ for c, _, _ in TRAINING_OVERLAPS])
def test_each_training_overlap_has_one_owner_whatever_the_selection(cls, shape, owner):
    torch.manual_seed(0)
    codes = _assert_ownership_is_selection_free(cls().train(), (torch.randn(*shape, requires_grad=True),))
    assert codes & {"FXL114", "FXL121"} == owner


def test_every_supersedes_pair_is_exercised_above():
    """A new `supersedes` entry needs an overlap program here, so the property covers it."""
    pairs = {(r.code, s) for r in default_registry().rules() for s in r.supersedes}
    covered = {("FXL204", "FXL101"), ("FXL104", "FXL101"), ("FXL104", "FXL405"), ("FXL112", "FXL405"),
               ("FXL406", "FXL402"), ("FXL404", "FXL406"), ("FXL114", "FXL121")}
    assert pairs == covered, pairs ^ covered


def test_the_issues_example_gets_a_finding_the_runtime_confirms_with_or_without_ignore():
    torch.manual_seed(0)
    model, x = PermuteBeforeConvAndRelu().eval(), torch.randn(2, 16, 16, 3)
    for ignore in (None, ["FXL204"]):
        with torch.no_grad():
            rep = fxlint.lint(model, (x,), ignore=ignore, config=False, confirm=True)
        [f] = [f for f in rep.findings if f.line == PermuteBeforeConvAndRelu.forward.__code__.co_firstlineno + 1]
        assert f.code == "FXL101" and f.bytes == 2 * 16 * 16 * 3 * 4 and f.status == "confirmed", f


def test_an_ignored_owner_does_not_hand_its_copy_to_another_code():
    """FXL104 owns the repeat: ignoring it removes that finding, and FXL405 does not take the copy over."""
    with torch.no_grad():
        full = fxlint.lint(RepeatOfABuffer().eval(), (torch.randn(4, 8),), config=False)
        ignored = fxlint.lint(RepeatOfABuffer().eval(), (torch.randn(4, 8),), config=False, ignore=["FXL104"])
    assert "FXL104" in full.codes() and "FXL405" not in full.codes()
    assert not ({"FXL104", "FXL405"} & ignored.codes())


def test_supersedes_is_validated():
    from fxlint.registry import make_rule

    with pytest.raises(ValueError, match="supersedes"):
        make_rule(lambda v, c: iter(()), "FXL990", "x", supersedes="FXL101")  # a string, not a list
    with pytest.raises(ValueError, match="supersedes"):
        make_rule(lambda v, c: iter(()), "FXL990", "x", supersedes=["FXL990"])  # itself
    with pytest.raises(ValueError, match="supersedes"):
        make_rule(lambda v, c: iter(()), "FXL990", "x", supersedes=["nope"])


# --------------------------------------------------------------------------- the zoo and the fuzzer

MODELS = zoo_models(str(ROOT / "models"))


@pytest.mark.parametrize("path", MODELS, ids=[Path(p).stem for p in MODELS])
def test_zoo_ownership_is_selection_free(path):
    model, inputs = load_model(path)
    _assert_ownership_is_selection_free(model, inputs)


@settings(max_examples=25, derandomize=True, database=None, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
                                 HealthCheck.large_base_example])
@given(programs())
def test_fuzzed_programs_ownership_is_selection_free(program: Program) -> None:
    model, inputs = program.load()
    _assert_ownership_is_selection_free(model, inputs)
