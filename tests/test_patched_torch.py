"""A library that replaces a torch function (PyG assigns ``torch.index_select = _new_index_select`` when it is
imported): the user's ``torch.index_select(...)`` runs the library's wrapper, and the finding stays at the
user's line, whether Dynamo inlines the wrapper or keeps it as one call in the graph."""

from __future__ import annotations

import importlib
import sys
import textwrap

import pytest
import torch
import torch.fx as fx
import torch.nn as nn

import fxlint
from fxlint.canon.builder import _target_name
from fxlint.util.source import patched_torch_name
from tests.conftest import line_of

WRAPPER = textwrap.dedent('''
    import torch

    _old_index_select = torch.index_select


    def _new_index_select(input, dim, index, *, out=None):
        index = index.to(torch.long)
        return _old_index_select(input, dim, index)


    torch.index_select = _new_index_select
''')


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x):
        return torch.index_select(self.lin(x), 1, torch.tensor([2, 3, 4, 5])) * 2  # PATCHED CALL


@pytest.fixture
def patched(tmp_path, monkeypatch):
    (tmp_path / "fxlint_patchlib.py").write_text(WRAPPER)
    monkeypatch.syspath_prepend(str(tmp_path))
    original = torch.index_select
    try:
        mod = importlib.import_module("fxlint_patchlib")
        yield mod
    finally:
        torch.index_select = original
        sys.modules.pop("fxlint_patchlib", None)


def test_the_finding_is_at_the_users_line_not_in_the_wrapper(patched):
    assert torch.index_select is patched._new_index_select
    report = fxlint.lint(Head(), (torch.randn(8, 16),))
    [f] = report.by_code("FXL401")
    assert f.line == line_of(__file__, "# PATCHED CALL") and f.file == __file__


def test_a_wrapper_kept_as_one_call_is_read_as_the_torch_function(patched):
    assert patched_torch_name(patched._new_index_select) == ("torch", "index_select")
    g = fx.Graph()
    x = g.placeholder("x")
    node = g.call_function(patched._new_index_select, (x, 1, x))
    assert _target_name(node, fx.GraphModule(nn.Module(), g)) == ("index_select", "torch.index_select")


def test_the_runtime_audit_puts_the_copy_at_the_users_line_too(patched):
    audit = fxlint.audit(Head(), (torch.randn(8, 16),))
    line = line_of(__file__, "# PATCHED CALL")
    [copy] = [c for c in audit.copies if c.kernel == "aten::index_select"]
    assert (copy.file, copy.line) == (__file__, line) and copy.bytes == 8 * 4 * 4
    assert not any("fxlint_patchlib" in (c.file or "") for c in audit.copies)


def test_torchs_own_functions_are_not_patched_ones():
    # (another test's import may have patched torch.index_select itself, as PyG does: ATen's binding is torch's own)
    assert patched_torch_name(torch._C._VariableFunctions.index_select) is None
    assert patched_torch_name(torch.nn.functional.relu) is None
    assert patched_torch_name(lambda t: t) is None
