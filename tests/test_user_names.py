"""The user's names everywhere a user reads: every identifier a message or a fix quotes in backticks
is one the user's file spells (or torch's, or Python's), never Dynamo's (``x_13``, ``l__self___``,
``floordiv``), and no placeholder phrase is left in the text. The whole text report of every zoo
model and of the census's quick subset (timm, torchvision, transformers) is read for generated names
and broken phrases (``generated_names``, ``broken_text``)."""

from __future__ import annotations

import builtins
import keyword
import re
import sys
import warnings
from pathlib import Path

import pytest
import torch

import fxlint
from fxlint.renderers.text import render_text
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


#: what only Dynamo writes, wherever it appears in the text: its names for `self.x` (``l__self___x``), for
#: an input ``x`` (``l_x_``), for `x[i]`, `a // b`, a chain of ops named after their op
_GENERATED = (re.compile(r"l__self___\w*"), re.compile(r"\bl_[A-Za-z]\w*?_(?!\w)"),
              re.compile(r"\bgetitem\b"), re.compile(r"\bfloordiv\b"), re.compile(r"\bunsqueeze\.repeat\b"),
              re.compile(r"L\['"), re.compile(r"__dict__[.\[]"))
#: a local's counter (``x_13``, ``hidden_states_7``): generated unless the user's files spell the name
_COUNTED = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*?_\d+\b")
#: text left broken by an unknown value: a size of `?`, `2.9 MB+?`, a cell with nothing before its comma
_BROKEN_TEXT = (re.compile(r"\? B\b"), re.compile(r"\+\?"), re.compile(r" +,"), re.compile(r"copy an unknown"),
                re.compile(r"<expression of"), re.compile(r"\bNone (?:B|bytes|per call)\b"))
_DTYPE = re.compile(r"^u?(?:int|float|bfloat|complex)\d+")


def spelled_names(report: fxlint.Report, model: torch.nn.Module | None = None) -> set[str]:
    """Every identifier the user can have written: the files the findings point at (their own lines, the
    lines their messages quote), their paths, the module paths and the model's parameter names."""
    out: set[str] = set()
    files = {f.file for f in report.findings if f.file}
    for file in files:
        out |= set(_IDENT.findall(file))
        if Path(file).exists():
            out |= set(_IDENT.findall(Path(file).read_text()))
    for f in report.findings:
        out |= set(_IDENT.findall(f.module_path or "")) | set(_IDENT.findall(" ".join(f.via or ())))
    if model is not None:
        out |= {part for name, _ in model.named_parameters() for part in _IDENT.findall(name)}
        out |= {part for name, _ in model.named_buffers() for part in _IDENT.findall(name)}
        out |= {part for name, _ in model.named_modules() for part in _IDENT.findall(name)}
    return out


def generated_names(text: str, spelled: set[str]) -> list[tuple[str, str]]:
    """(name, line) of every name in the text report that Dynamo made up: its own spellings anywhere,
    and a counted local (``x_13``) that no file of the findings spells (``conv_1`` in the source is fine)."""
    out = []
    for line in text.splitlines():
        for pat in _GENERATED:
            out += [(m.group(0), line.strip()) for m in pat.finditer(line) if m.group(0) not in spelled]
        out += [(m.group(0), line.strip()) for m in _COUNTED.finditer(line)
                if m.group(0) not in spelled and not _DTYPE.match(m.group(0))]
    return out


def broken_text(text: str) -> list[tuple[str, str]]:
    """(phrase, line) of every broken phrase in the text report."""
    return [(m.group(0), line.strip()) for line in text.splitlines() for pat in _BROKEN_TEXT
            for m in pat.finditer(line)]


def _check_text(report: fxlint.Report, model: torch.nn.Module | None) -> list[tuple[str, str]]:
    text = render_text(report, width=120)
    return generated_names(text, spelled_names(report, model)) + broken_text(text)


def test_the_text_checks_catch_what_they_are_for():
    spelled = {"x", "conv_1", "hidden_states"}
    text = ("FXL110 warning  a.py:3\n    `x_13[:, 1:] += y` writes back; fix: `x_13[:, 1:].add_(y)`\n"
            "    use hidden_states_7.index_select(0, floordiv); l__self___scale and l_x_ are Dynamo's\n"
            "    `unsqueeze.repeat()` copies; conv_1 is the user's; float32 (2, 3) is a dtype")
    found = {name for name, _ in generated_names(text, spelled)}
    assert found == {"x_13", "hidden_states_7", "floordiv", "l__self___scale", "l_x_", "unsqueeze.repeat"}, found
    broken = {p for p, _ in broken_text("Top lines: a.py:3 (FXL101, ? B); b.py:4 (FXL102, 2.9 MB+?).\n"
                                        "loop.py:650  , 0.13 ms\n a subscript write into `mask` copy an unknown")}
    assert broken == {"? B", "+?", "  ,", "copy an unknown"}, broken
    assert broken_text("x[:, 1:] (2, 3), 49.2 kB per call; a, b") == []


def test_a_module_read_through_its_dict_keeps_its_path():
    """transformers' Swin reads a block's submodule as `self.__dict__['_modules']['attention']`; Dynamo's
    source for its parameter then names `__dict__`: the path is the module's, as named_parameters says."""
    from fxlint.util.source import clean_path

    raw = ("L['self'].encoder.layers[2].blocks[0].__dict__['_modules']['attention'].relative_position_bias"
           "._parameters['relative_position_bias_table']")
    assert clean_path(raw) == "encoder.layers.2.blocks.0.attention.relative_position_bias.relative_position_bias_table"


class _Bias(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.bias_table = torch.nn.Parameter(torch.randn(50, 8))
        self.register_buffer("bias_index", torch.randint(0, 50, (5, 6)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        bias = self.bias_table[
            self.bias_index.view(-1)].view(5, 6, 8)  # a subscript over two lines, as timm's BEiT writes it
        return x + bias


class _Blocks(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = torch.nn.ModuleList([_Bias(), _Bias()])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for b in self.blocks:
            x = b(x)
        return x


def test_a_subscript_over_several_lines_is_quoted_as_written():
    """The reported line is one line of a statement written over two: the names come from the whole
    statement (`self.bias_index.view(-1)`), never Dynamo's (`view_2`), and the parameter as the line
    spells it (`self.bias_table`, one message for both blocks)."""
    model = _Blocks().eval()
    with torch.no_grad():
        r = fxlint.lint(model, torch.randn(5, 6, 8), config=False)
    gathers = [f for f in r.findings if f.code == "FXL402"]
    assert len(gathers) == 2, [f.code for f in r.findings]
    for f in gathers:
        assert f.fix == "use self.bias_table.index_select(0, self.bias_index.view(-1)) (the indices must be non-negative)"
    assert not _check_text(r, model), _check_text(r, model)


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
    assert not _check_text(r, model), _check_text(r, model)


@pytest.mark.parametrize("path", ZOO, ids=[p.stem for p in ZOO])
def test_every_zoo_message_speaks_in_the_users_names(path):
    model, inputs = load_model(path)
    r = fxlint.lint(model, inputs, config=False)
    assert not unknown_names(r), unknown_names(r)
    assert not broken_phrases(str(r)), broken_phrases(str(r))
    found = _check_text(r, model)  # the whole text report: summary, Top lines, every block
    assert not found, found


sys.path.insert(0, str(ROOT / "bench"))
import census_models  # noqa: E402


@pytest.mark.slow
@pytest.mark.parametrize("name", census_models.QUICK)
def test_the_census_models_text_speaks_in_the_users_names(name):
    """The census's quick subset (one small model per library, ~55 s for the six on a 2-core machine):
    linted as the census lints them (eval, no grad), without the audit, and the whole text report read."""
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            model, inputs = census_models.REGISTRY[name].build()
        except Exception as exc:  # noqa: BLE001 - a library missing or changed: the census records it too
            pytest.skip(f"{name} not built here: {type(exc).__name__}: {exc}")
    model.eval()
    with torch.no_grad():
        r = fxlint.lint(model, inputs, config=False)
    # (not unknown_names: a fix may propose code of its own, FXL205's `if any(widths): x = F.pad(x, widths)`)
    found = _check_text(r, model)
    assert not found, found
