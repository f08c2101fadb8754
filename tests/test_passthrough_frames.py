"""Attribution to the line the user can change: a copy made inside a pass-through helper library
(einops; ``passthrough = [...]`` in ``[tool.fxlint]``) is reported, and audited, at the line that
called it, with the frames inside in ``Finding.via``; a copy inside torch's own Python functions
(``F.multi_head_attention_forward``) is listed unexplained at the user's line with the torch frames
that made it."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn as nn

import fxlint
from fxlint.util.source import is_passthrough_file, passthrough_libraries, user_frame
from tests.copy_helpers import line_with

einops = pytest.importorskip("einops")


def flat_tokens(x):
    y = einops.rearrange(x, "b c h w -> b (h w) c")
    return einops.rearrange(y, "b n c -> b (n c)")  # the copy


X = torch.randn(2, 4, 3, 3)


def test_a_copy_inside_einops_is_reported_and_confirmed_at_the_calling_line():
    rep = fxlint.lint(flat_tokens, (X,), select="FXL102", confirm=True, config=False)
    [f] = rep.findings
    assert (f.file, f.line) == (__file__, line_with(flat_tokens, "# the copy")), f.location
    assert f.status == "confirmed" and f.bytes == 2 * 9 * 4 * 4
    assert f.via is not None and f.via[0].startswith("einops/einops.py:") and "rearrange" in f.via[0]
    assert any(v.startswith("einops/_backends.py:") for v in f.via), f.via
    assert json.loads(json.dumps(f.to_dict()))["via"] == list(f.via)
    assert rep.unexplained == []
    audit = fxlint.audit(flat_tokens, (X,))  # the audit alone attributes through einops too
    [c] = [c for c in audit.copies if c.avoidable]
    assert c.line == f.line and c.via and "rearrange" in c.via[0]


def test_the_list_is_the_projects(tmp_path):
    cfg = tmp_path / "fxlint.toml"
    cfg.write_text("passthrough = []\n")
    [f] = fxlint.lint(flat_tokens, (X,), select="FXL102", config=str(cfg)).findings
    assert "einops" in f.file and f.via is None  # einops' own line, as before
    cfg.write_text('passthrough = ["not a package"]\n')
    with pytest.raises(fxlint.ConfigError, match="passthrough"):
        fxlint.lint(flat_tokens, (X,), config=str(cfg))


def test_user_frame_skips_pass_through_frames_and_keeps_the_chain():
    import os

    lib = os.path.join(os.path.dirname(einops.__file__), "einops.py")
    trace = (f'  File "{__file__}", line 10, in forward\n    y = rearrange(x)\n'
             f'  File "{lib}", line 600, in rearrange\n    return reduce(x)\n')
    assert is_passthrough_file(lib) and not is_passthrough_file(__file__)
    loc = user_frame(trace)
    assert (loc.file, loc.line, loc.via) == (__file__, 10, ("einops/einops.py:600 in rearrange",))
    with passthrough_libraries(()):
        assert user_frame(trace).file == lib
    only_lib = f'  File "{lib}", line 600, in rearrange\n    return reduce(x)\n'
    assert user_frame(only_lib).file == lib  # nothing else: the library's line


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(16, 2)

    def forward(self, x):
        y, _ = self.attn(x, x, x, need_weights=False)  # attention
        return y * 2


def test_a_copy_inside_torchs_own_functions_names_them():
    rep = fxlint.lint(Attention(), (torch.randn(5, 2, 16),), confirm=True, config=False, train=True)
    rows = [u for u in rep.unexplained if u["line"] == line_with(Attention.forward, "# attention")]
    assert rows, rep.unexplained
    assert any("multi_head_attention_forward" in v for v in rows[0]["via"]), rows[0]["via"]
