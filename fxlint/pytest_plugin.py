"""pytest plugin: opt a model's test into fxlint with one line.

Registered through the ``pytest11`` entry point, so installing fxlint is enough::

    def test_encoder(fxlint_check):
        fxlint_check(Encoder(), torch.randn(8, 80, 200))   # fails with the findings table

``@pytest.mark.fxlint(select=..., ignore=..., severity=..., config=...)`` on a test,
a class, or a whole module (``pytestmark = pytest.mark.fxlint(severity="error")``)
sets the defaults of ``fxlint_check`` there; keywords passed to the call win.
Importing this module is cheap (torch loads only when a check runs).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

OPTIONS = ("select", "ignore", "severity", "config")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "fxlint(select=None, ignore=None, severity=None, config=None): "
        "options of the fxlint_check fixture in this test, class or module",
    )


@pytest.fixture
def fxlint_check(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """``fxlint_check(model, example_inputs, **options)``: lint the model, fail the test with the
    findings table when it has findings at or above ``severity`` (see ``fxlint.testing``)."""
    marker = request.node.get_closest_marker("fxlint")
    defaults = dict(marker.kwargs) if marker is not None else {}
    unknown = sorted(set(defaults) - set(OPTIONS))
    if unknown or (marker is not None and marker.args):
        raise pytest.UsageError(
            f"@pytest.mark.fxlint takes keywords {', '.join(OPTIONS)}; got "
            f"{', '.join(unknown) or repr(marker.args)}")

    def check(model: Any, example_inputs: Any = None, **options: Any) -> Any:
        __tracebackhide__ = True
        from fxlint.testing import assert_no_findings

        return assert_no_findings(model, example_inputs, **{**defaults, **options})

    return check
