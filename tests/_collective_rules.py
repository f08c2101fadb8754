"""What the FXL6xx rule tests share: a one-rank process group for the module, and the fixture's
positive and negative lines (``tests/fixtures/rules/fxl60N.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

import fxlint
from tests.dist_pool import one_rank_group
from tests.rule_snapshots import FIXTURES, load_fixture


@pytest.fixture(scope="module")
def group():
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_gloo_available()):
        pytest.skip("torch.distributed with gloo is not available")
    with one_rank_group():
        yield


def fixture_lines(code: str, kind: str) -> set[int]:
    """Lines of the rule's fixture whose comment starts with ``kind`` (positive or negative)."""
    path = Path(FIXTURES / f"{code.lower()}.py")
    return {i for i, text in enumerate(path.read_text().splitlines(), 1) if f"# {kind}" in text}


def lint_fixture(code: str, select: str | None = None):
    model, inputs = load_fixture(code).make()
    return fxlint.lint(model, inputs, select=select or code, config=False)


__all__ = ["group", "fixture_lines", "lint_fixture", "one_rank_group"]
