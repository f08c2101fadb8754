"""The user's names everywhere a user reads: every identifier a message or a fix quotes in backticks
is one the user's file spells (or torch's, or Python's), never Dynamo's (``x_13``, ``l__self___``,
``floordiv``), and no placeholder phrase is left in the text."""

from __future__ import annotations

import builtins
import keyword
import re
from pathlib import Path

import pytest
import torch

import fxlint
from tests.conftest import load_model

ROOT = Path(__file__).resolve().parent.parent
ZOO = sorted(p for p in (ROOT / "models").glob("*.py") if not p.name.startswith("_"))

_CODE = re.compile(r"`([^`]+)`")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_BROKEN = ("<expression of", "l__self___", "L['", "__dict__.", "copy an unknown")

TORCH_NAMES = (set(dir(torch)) | set(dir(torch.Tensor)) | set(dir(torch.nn)) | set(dir(torch.nn.functional))
               | set(dir(builtins)) | set(keyword.kwlist)
               | {"F", "nn", "self", "y", "v", "a", "b", "s", "t", "dim", "dims"})  # torch's, Python's, and the
#: placeholders the fixes use for "any value" (`v += y`)


def _names(code: str) -> list[str]:
    """The identifiers a quoted piece of code names, except an inline suppression comment, a shell line
    and the attributes of a `torch.` path (torch's own configuration, not the user's names)."""
    if code.lstrip().startswith(("#", "export ")):
        return []
    code = re.sub(r"\btorch(\.\w+)+", "torch", code)
    return _IDENT.findall(code)


def unknown_names(report: fxlint.Report) -> list[tuple[str, str, str]]:
    """(code, name, text) of every backticked identifier no file of the finding spells."""
    out = []
    for f in report.findings:
        spelled = set(_IDENT.findall(Path(f.file).read_text())) if f.file and Path(f.file).exists() else set()
        for text in (f.message, f.fix or ""):
            for code in _CODE.findall(text):
                for name in _names(code):
                    if name not in spelled and name not in TORCH_NAMES:
                        out.append((f.code, name, code))
    return out


def broken_phrases(text: str) -> list[str]:
    return [p for p in _BROKEN if p in text]


def test_dynamo_names_do_not_reach_the_messages():
    from tests.fixtures.user_names import make

    model, inputs = make()
    r = fxlint.lint(model, inputs, config=False)
    text = str(r)
    assert "`x[:, 1:] = x[:, 1:] + self.tok_bias`" in text
    assert "`x[:, 1:] += self.tok_bias`" in text
    assert "hidden_states.index_select(0, perm // num_top_k)" in text
    assert not re.search(r"\bx_\d+\b|\bfloordiv\b|hidden_states_\d", text), text
    assert not unknown_names(r) and not broken_phrases(text)


@pytest.mark.parametrize("path", ZOO, ids=[p.stem for p in ZOO])
def test_every_zoo_message_speaks_in_the_users_names(path):
    model, inputs = load_model(path)
    r = fxlint.lint(model, inputs, config=False)
    assert not unknown_names(r), unknown_names(r)
    assert not broken_phrases(str(r)), broken_phrases(str(r))
