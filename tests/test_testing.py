"""The pytest helper (fxlint.testing.assert_no_findings) and the plugin (fixture fxlint_check,
marker fxlint), the plugin tested through pytest's own pytester."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch

from fxlint.errors import ConfigError
from fxlint.testing import assert_no_findings
from tests.conftest import line_of, load_model

pytest_plugins = ["pytester"]


class Gather(torch.nn.Module):
    def forward(self, x):
        return x[:, [0, 2, 4, 6]] * 2  # the gather


class Clean(torch.nn.Module):
    def forward(self, x):
        return x[:, ::2] * 2


def test_passes_on_a_clean_model_and_returns_the_report():
    report = assert_no_findings(Clean(), torch.randn(3, 8), config=False)
    assert report.findings == [] and report.graphs == 1


def test_fails_with_a_readable_findings_table():
    with pytest.raises(AssertionError) as exc:
        assert_no_findings(Gather(), torch.randn(3, 8), config=False)
    msg = str(exc.value)
    lines = msg.splitlines()
    assert lines[0] == "fxlint: 1 finding at or above warning in Gather:"
    row = next(line for line in lines if line.startswith("FXL401"))
    assert "warning" in row and f"test_testing.py:{line_of(__file__, '# the gather')}" in row and "48 B" in row
    assert "fix: index with [:, ::2]" in msg
    assert "1 finding (1 warning), 48 B copied per call, 1 graph analysed." in msg
    assert "# fxlint: ignore[CODE]" in msg and "fxlint explain CODE" in msg
    assert max(len(line) for line in lines) <= 130  # readable in a test log, whatever the terminal


def test_severity_select_ignore():
    x = torch.randn(3, 8)
    assert_no_findings(Gather(), x, severity="error", config=False)  # a warning does not fail at error
    assert_no_findings(Gather(), x, ignore="FXL4", config=False)
    assert_no_findings(Gather(), x, severity="never", config=False)
    with pytest.raises(AssertionError, match="at or above info"):
        assert_no_findings(Gather(), x, select=["FXL401"], severity="info", config=False)
    with pytest.raises(ConfigError, match="unknown severity"):
        assert_no_findings(Gather(), x, severity="warn", config=False)


def test_project_config_decides_the_default_threshold(make_project):
    model = make_project('fail-on = "error"\n')
    m, x = load_model(model)
    assert_no_findings(m, x)  # fail-on error: the warning passes
    model = make_project('fail-on = "error"\nseverity = { FXL401 = "error" }\n')
    m, x = load_model(model)
    with pytest.raises(AssertionError, match="1 finding at or above error") as exc:
        assert_no_findings(m, x)
    assert any(line.split()[:2] == ["FXL401", "error"] for line in str(exc.value).splitlines() if line.strip())


# --------------------------------------------------------------------------- the plugin


PLUGIN_TESTS = """
import pytest
import torch


class Gather(torch.nn.Module):
    def forward(self, x):
        return x[:, [0, 2, 4, 6]] * 2


class Clean(torch.nn.Module):
    def forward(self, x):
        return x[:, ::2]


def test_clean(fxlint_check):
    fxlint_check(Clean(), torch.randn(3, 8))


def test_gather(fxlint_check):
    fxlint_check(Gather(), torch.randn(3, 8))


@pytest.mark.fxlint(severity="error")
def test_gather_at_error(fxlint_check):
    fxlint_check(Gather(), torch.randn(3, 8))


@pytest.mark.fxlint(ignore=["FXL401"])
def test_call_keywords_win(fxlint_check):
    fxlint_check(Gather(), torch.randn(3, 8), ignore=[])


@pytest.mark.fxlint(sevrity="error")
def test_bad_marker(fxlint_check):
    pass
"""


def test_plugin_is_registered_as_a_pytest11_entry_point():
    from importlib.metadata import entry_points

    assert [e.value for e in entry_points(group="pytest11") if e.name == "fxlint"] == ["fxlint.pytest_plugin"]


def test_plugin_importing_is_cheap():
    """pytest loads every installed plugin at startup: ours must not import torch."""
    code = "import sys, fxlint.pytest_plugin; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_plugin_fixture_and_marker(lint_pytester):
    pytester = lint_pytester
    pytester.makepyfile(test_models=PLUGIN_TESTS)
    pytester.makeini("[pytest]\nfilterwarnings = ignore\n")  # no [tool.fxlint] here: defaults apply
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=2, errors=1)
    out = result.stdout.str()
    assert "test_gather " in out or "test_models.py::test_gather" in out
    result.stdout.fnmatch_lines([
        "*fxlint: 1 finding at or above warning in Gather:*",
        "*1 finding (1 warning), 48 B copied per call, 1 graph analysed.*",
        "*FXL401*warning*test_models.py:*",
    ])
    assert "@pytest.mark.fxlint takes keywords select, ignore, severity, config; got sevrity" in out
    assert "FAILED test_models.py::test_call_keywords_win" in out
    assert "FAILED test_models.py::test_gather - AssertionError" in out


def test_plugin_module_level_marker(lint_pytester):
    pytester = lint_pytester
    pytester.makepyfile(test_m=textwrap.dedent("""
        import pytest, torch
        pytestmark = pytest.mark.fxlint(severity="error")

        class Gather(torch.nn.Module):
            def forward(self, x):
                return x[[1, 2]]

        def test_it(fxlint_check):
            fxlint_check(Gather(), torch.randn(4, 4))
    """))
    pytester.runpytest("-p", "no:cacheprovider", "-W", "ignore").assert_outcomes(passed=1)


def test_a_failing_check_prints_fxlint_message_without_torch_trace_lines(lint_pytester):
    """pytest attaches its log capture to torch's non-propagating structured-trace logger (always at DEBUG):
    without fxlint.util.quiet, each Dynamo compile of the check added hundreds of empty `DEBUG torch.__trace`
    lines under "Captured log call", after fxlint's message. No log_level here: pytest's default captures all."""
    pytester = lint_pytester
    pytester.makepyfile(test_m=textwrap.dedent("""
        import logging, torch

        class Gather(torch.nn.Module):
            def forward(self, x):
                return x[:, [0, 2, 4, 6]] * 2

        def test_it(fxlint_check):
            logging.getLogger("user").warning("the user's own line")
            fxlint_check(Gather(), torch.randn(3, 8))

        def test_trace_handlers_are_back(fxlint_check):
            trace = logging.getLogger("torch.__trace")
            before = list(trace.handlers)
            fxlint_check(torch.nn.Linear(4, 4), torch.randn(2, 4))
            assert trace.handlers == before and any("_pytest" in type(h).__module__ for h in before)
    """))
    pytester.makeini("[pytest]\nfilterwarnings = ignore\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert "fxlint: 1 finding at or above warning in Gather:" in out
    assert "torch.__trace" not in out and "DEBUG" not in out
    result.stdout.fnmatch_lines(["*Captured log call*", "WARNING  user:test_m.py:* the user's own line"])
