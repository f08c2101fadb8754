"""The compile backend: entry point, options, logging, collect(), and never breaking a compile."""

from __future__ import annotations

import logging
import subprocess
import sys

import warnings

import pytest
import torch
import torch.nn as nn

import fxlint
from fxlint.errors import FxlintWarning
from tests.conftest import ROOT, line_of


class Sep(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x):
        output = self.lin(x)
        return output[:, [i for i in range(0, output.size(1), 2)]]  # the seed's line


def _compile(m, **options):
    torch._dynamo.reset()
    return torch.compile(m, backend="fxlint", options={"inner": "eager", **options})


def test_fresh_interpreter_without_import_finds_the_seed_line(write_module, tmp_path):
    path = write_module(
        """
        import sys
        import torch, torch.nn as nn

        class Sep(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(16, 16)

            def forward(self, x):
                output = self.lin(x)
                return output[:, [i for i in range(0, output.size(1), 2)]]

        torch.manual_seed(0)
        m = Sep()
        x = torch.randn(4, 16)
        compiled = torch.compile(m, backend="fxlint", options={"inner": "eager"})
        out = compiled(x)
        print("EQUAL", torch.equal(out, m(x)))
        """,
        name="fresh.py",
    )
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, cwd=str(tmp_path),
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "EQUAL True" in proc.stdout
    line = line_of(path, "output[:, [i for i")
    assert f"fresh.py:{line} FXL401" in proc.stderr, proc.stderr


def test_collect_gathers_findings_and_output_equals_eager():
    m = Sep()
    x = torch.randn(4, 16)
    compiled = _compile(m)
    with fxlint.collect() as session:
        out = compiled(x)
    assert torch.equal(out, m(x))
    [f] = session.findings
    assert f.code == "FXL401" and f.line == line_of(__file__, "# the seed's line")
    assert f.bytes == 4 * 8 * 4


def test_findings_deduplicated_across_recompiles():
    m = Sep()
    compiled = _compile(m)
    with fxlint.collect() as session:
        for batch in (2, 3, 5):  # new shapes force recompiles
            compiled(torch.randn(batch, 16))
    assert session.graphs >= 2
    assert [f.code for f in session.findings] == ["FXL401"]


def test_select_ignore_options():
    m = Sep()
    with fxlint.collect() as session:
        _compile(m, ignore="FXL4")(torch.randn(4, 16))
    assert session.findings == []
    with fxlint.collect() as session:
        _compile(m, select=["FXL401"])(torch.randn(4, 16))
    assert len(session.findings) == 1


def test_summary_logged_per_graph_and_details_at_info(caplog):
    m = Sep()
    with caplog.at_level(logging.INFO, logger="fxlint"):
        _compile(m)(torch.randn(4, 16))
    records = [r for r in caplog.records if r.name == "fxlint"]
    summaries = [r for r in records if r.levelno == logging.WARNING]
    assert len(summaries) == 1 and "1 finding (FXL401)" in summaries[0].getMessage()
    details = [r for r in records if r.levelno == logging.INFO]
    assert any("[warning]" in r.getMessage() and "::2" in r.getMessage() for r in details)


def test_inner_callable_receives_graph_and_passthrough_options():
    seen = {}

    def inner(gm, example_inputs, **kwargs):
        seen["kwargs"] = kwargs
        seen["gm"] = gm
        return gm.forward

    torch._dynamo.reset()
    m = Sep()
    out = torch.compile(m, backend="fxlint", options={"inner": inner, "my_flag": 3})(torch.randn(4, 16))
    assert seen["kwargs"] == {"options": {"my_flag": 3}}
    assert isinstance(seen["gm"], torch.fx.GraphModule)
    assert out.shape == (4, 8)


@pytest.mark.parametrize("options,needle", [
    ({"selct": ["FXL401"], "inner": "aot_eager"}, "'selct' (did you mean 'select'?)"),
    ({"selct": ["FXL401"]}, "'selct' (did you mean 'select'?): expected fxlint's options or a torch._inductor.config"),
    ({"fallback_random": True, "inner": "eager"}, "the 'eager' backend takes no options"),
    ({"cpp.no_such_flag": 1}, "'cpp.no_such_flag'"),
])
def test_an_unknown_option_is_one_error_naming_the_valid_keys(options, needle):
    """Never handed on to Inductor (its own error names only its config) nor dropped under an eager inner
    backend; Inductor's own keys still pass (the benchmark relies on fallback_random)."""
    from fxlint.backend import BackendOptions
    from fxlint.errors import ConfigError

    opts = BackendOptions.parse(options)
    with pytest.raises(ConfigError) as err:
        opts.check_passthrough(opts.inner or "inductor")
    assert needle in str(err.value) and "fxlint's options are inner, rewrite" in str(err.value)
    torch._dynamo.reset()
    with pytest.raises(Exception, match="unknown backend option"):
        torch.compile(Sep(), backend="fxlint", options=options)(torch.randn(4, 16))


def test_inductor_config_keys_and_a_custom_backends_options_pass():
    from fxlint.backend import BackendOptions

    BackendOptions.parse({"fallback_random": True, "cpp.enable_kernel_profile": False}).check_passthrough("inductor")
    BackendOptions.parse({"my_flag": 3}).check_passthrough(lambda gm, inputs, **kw: gm.forward)


def test_inner_registered_name_and_bad_options():
    torch._dynamo.reset()
    out = torch.compile(Sep(), backend="fxlint", options={"inner": "aot_eager"})(torch.randn(4, 16))
    assert out.shape == (4, 8)
    torch._dynamo.reset()
    with pytest.raises(Exception, match="no_such_backend"):
        torch.compile(Sep(), backend="fxlint", options={"inner": "no_such_backend"})(torch.randn(4, 16))
    torch._dynamo.reset()
    with pytest.raises(Exception, match="rewrite"):
        torch.compile(Sep(), backend="fxlint", options={"inner": "eager", "rewrite": "yes"})(torch.randn(4, 16))


def test_a_rule_that_raises_does_not_break_the_compile():
    from fxlint import registry

    def boom(view, ctx):
        raise RuntimeError("injected failure")

    reg = registry.default_registry()
    reg = reg.replacing(registry.with_check(reg.get("FXL401"), boom))
    m = Sep()
    x = torch.randn(4, 16)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with fxlint.collect() as session:
            out = _compile(m, registry=reg)(x)
    assert torch.equal(out, m(x))
    fx_warnings = [w for w in caught if issubclass(w.category, FxlintWarning)]
    assert len(fx_warnings) == 1 and "injected failure" in str(fx_warnings[0].message)
    assert session.errors and "FXL401" in session.errors[0]


def test_a_failing_canonical_view_does_not_break_the_compile(monkeypatch):
    import fxlint.capture.graphs as capture

    def boom(gm, label):
        raise ValueError("view exploded")

    monkeypatch.setattr(capture, "view_from_dynamo", boom)
    m = Sep()
    x = torch.randn(4, 16)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = _compile(m)(x)
    assert torch.equal(out, m(x))
    msgs = [str(w.message) for w in caught if issubclass(w.category, FxlintWarning)]
    assert len(msgs) == 1 and "view exploded" in msgs[0] and "untouched" in msgs[0]


@pytest.mark.inductor
def test_default_inner_is_inductor_and_results_match():
    torch._dynamo.reset()
    m = Sep()
    x = torch.randn(4, 16)
    with fxlint.collect() as session:
        out = torch.compile(m, backend="fxlint")(x)
    torch.testing.assert_close(out, m(x))
    assert [f.code for f in session.findings] == ["FXL401"]


def test_entry_point_is_declared():
    from importlib.metadata import entry_points

    eps = entry_points(group="torch_dynamo_backends")
    assert "fxlint" in eps.names
    assert eps["fxlint"].load() is fxlint.backend.fxlint_backend
    assert (ROOT / "pyproject.toml").read_text().count("torch_dynamo_backends") == 1

