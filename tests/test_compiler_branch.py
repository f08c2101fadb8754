"""Code only torch.compile runs (``if is_compiling():``): the finding says so, and the audit looks for the
copy eager makes on its own branch instead of calling the finding "not-run" without a reason."""

from __future__ import annotations

import ast
import textwrap

import torch

import fxlint
from fxlint.util.source import _compiling_polarity, compiler_branch, parse_stack_trace


def _pol(test: str):
    return _compiling_polarity(ast.parse(test, mode="eval").body)


def test_which_conditions_only_torch_compile_takes():
    assert _pol("torch.compiler.is_compiling()") is True
    assert _pol("is_torchdynamo_compiling()") is True
    assert _pol("torch._dynamo.is_compiling()") is True
    assert _pol("not is_torchdynamo_compiling()") is False  # the else is compiled-only
    assert _pol("torch.jit.is_scripting() or is_compiling()") is True  # PyG's _index_select
    assert _pol("is_compiling() and x.is_cuda") is True  # the body never runs in eager
    # eager may take these too: no claim
    assert _pol("x is None or is_compiling()") is None
    assert _pol("not (is_compiling() and flag)") is False  # its else runs only when both hold
    assert _pol("not (x is None or is_compiling())") is None
    assert _pol("self.training") is None


def _write(tmp_path, body: str):
    import importlib.util

    path = tmp_path / "branchy.py"
    path.write_text(textwrap.dedent(body))
    spec = importlib.util.spec_from_file_location("branchy", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod, path


_TWIN = """
    import torch
    import torch.nn as nn


    def _safe(x):
        return x.permute(1, 0).contiguous()  # eager's copy


    class M(nn.Module):
        def forward(self, x):
            if torch.compiler.is_compiling():
                y = x.permute(1, 0).contiguous()  # what Dynamo traces
            else:
                y = _safe(x)
            return y * 2
"""


def test_a_finding_on_a_compiled_only_branch_says_so_and_the_audit_finds_eager_s_copy(tmp_path):
    mod, path = _write(tmp_path, _TWIN)
    with torch.no_grad():
        r = fxlint.lint(mod.M().eval(), torch.randn(64, 32), confirm=True, config=False)
    [f] = [f for f in r.findings if f.code == "FXL101"]
    assert f.line == 13 and f.file == str(path)
    assert f.compiled_only is not None and "`if torch.compiler.is_compiling():`" in f.compiled_only
    assert "runs only under torch.compile" in f.message and "eager takes the other branch" in f.message
    assert f.status == "confirmed"
    assert f.eager_site == (str(path), 7)  # the copy eager makes instead, in _safe
    assert not [u for u in r.unexplained if u["line"] == 7]  # explained, not listed again
    assert f.to_dict()["eager_site"] == [str(path), 7]


def test_a_compiled_only_branch_with_nothing_in_eager_stays_not_run(tmp_path):
    mod, _ = _write(tmp_path, """
        import torch
        import torch.nn as nn


        class M(nn.Module):
            def forward(self, x):
                if not torch.compiler.is_compiling():
                    return x * 2
                else:
                    return x.permute(1, 0).contiguous() * 2
    """)
    with torch.no_grad():
        r = fxlint.lint(mod.M().eval(), torch.randn(64, 32), confirm=True, config=False)
    [f] = [f for f in r.findings if f.code == "FXL101"]
    assert f.compiled_only is not None and f.line == 11
    assert f.status == "not-run" and f.eager_site is None


def test_an_ordinary_branch_is_not_compiled_only(tmp_path):
    mod, _ = _write(tmp_path, """
        import torch
        import torch.nn as nn


        class M(nn.Module):
            def forward(self, x):
                if x.shape[0] > 1:
                    return x.permute(1, 0).contiguous() * 2
                return x
    """)
    with torch.no_grad():
        r = fxlint.lint(mod.M().eval(), torch.randn(64, 32), confirm=True, config=False)
    [f] = [f for f in r.findings if f.code == "FXL101"]
    assert f.compiled_only is None and "torch.compile" not in f.message
    assert f.status == "confirmed" and f.eager_site is None


def test_a_helper_called_from_the_compiled_branch_is_compiled_only_too(tmp_path):
    """The branch may be in a caller's frame: the helper's line runs only under torch.compile as well."""
    mod, _ = _write(tmp_path, """
        import torch
        import torch.nn as nn


        def helper(x):
            return x.permute(1, 0).contiguous()


        class M(nn.Module):
            def forward(self, x):
                if torch.compiler.is_compiling():
                    return helper(x) * 2
                return x * 2
    """)
    with torch.no_grad():
        r = fxlint.lint(mod.M().eval(), torch.randn(64, 32), config=False)
    [f] = [f for f in r.findings if f.code == "FXL101"]
    assert f.line == 7 and f.compiled_only is not None and ":12`" not in f.compiled_only
    assert "branchy.py:12" in f.compiled_only


def test_unreadable_frames_are_no_branch():
    assert compiler_branch(parse_stack_trace('  File "/no/such/file.py", line 3, in f\n    x\n')) is None
    assert compiler_branch([]) is None


def test_the_text_report_says_where_eager_copies(tmp_path):
    from fxlint.renderers.text import render_text

    mod, _path = _write(tmp_path, _TWIN)
    with torch.no_grad():
        r = fxlint.lint(mod.M().eval(), torch.randn(64, 32), confirm=True, config=False)
    text = render_text(r)
    assert "runtime: 1 confirmed (eager makes the same copy at" in text and "branchy.py:7)" in text
