"""What the trainer callbacks share: a ``fxlint.collect()`` session open for the run, the model
compiled with ``backend="fxlint"``, and the findings printed once.

The callbacks only say when: the run starts (``start``, with the model), the first optimizer step
ended (``step``), the run ended (``finish``). The report goes out at the first of the moments
``report_at`` names that comes ("first_step" by default, else "train_end"; a run with no step
reports at its end), on the main process only; under ``torch.distributed`` every rank's findings
are gathered first (``Session.gather``: every rank calls it at the same moment).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Mapping
from typing import Any, TextIO

from ..findings import Report
from ..session import Session, collect

#: when the report is printed
MOMENTS = ("first_step", "train_end")


class RunReporter:
    """One training run's fxlint session (see the module docstring)."""

    def __init__(self, *, compile: bool = True, options: Mapping[str, Any] | None = None,
                 report_at: str = "first_step", stream: TextIO | None = None,
                 on_report: Callable[[Report], None] | None = None) -> None:
        if report_at not in MOMENTS:
            raise ValueError(f"report_at must be one of {', '.join(map(repr, MOMENTS))}, not {report_at!r}")
        self.compile = compile
        self.options = dict(options or {})
        self.report_at = report_at
        self.stream = stream
        self.on_report = on_report
        self.session: Session | None = None
        self.report: Report | None = None  #: what was reported (None until then)
        self._stack: contextlib.ExitStack | None = None
        self._compiled: list[Any] = []

    def start(self, model: Any) -> None:
        """Open the session and compile ``model`` in place (``nn.Module.compile``) unless it is already."""
        if self._stack is not None:  # a second fit() with the same callback: a new run
            self._close()
        self.report = None
        self._stack = contextlib.ExitStack()
        self.session = self._stack.enter_context(collect())
        if self.compile and model is not None and not _compiled_with_fxlint(model):
            model.compile(backend="fxlint", options=self.options or None)
            self._compiled.append(model)

    def step(self, is_main: bool) -> None:
        if self.report_at == "first_step":
            self._report("after the first training step", is_main)

    def finish(self, is_main: bool) -> None:
        self._report("at the end of training", is_main)
        self._close()

    def _report(self, when: str, is_main: bool) -> None:
        if self.report is not None or self.session is None:
            return
        report = _gathered(self.session)
        self.report = report
        if self.on_report is not None:
            self.on_report(report)
        if is_main:
            print(render(report, when, compiled=bool(self._compiled)), file=self.stream or sys.stdout, flush=True)

    def _close(self) -> None:
        if self._stack is not None:
            self._stack.close()
            self._stack = None


def _gathered(session: Session) -> Report:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        return session.gather()
    return session.report()


def _compiled_with_fxlint(model: Any) -> bool:
    """The model is compiled already, by ``model.compile(...)`` or ``torch.compile(model)`` (any
    backend: compiling it again would nest the two)."""
    return getattr(model, "_compiled_call_impl", None) is not None or hasattr(model, "_orig_mod")


def render(report: Report, when: str, *, compiled: bool) -> str:
    """The report as printed by a callback: one heading line, then the text report."""
    from ..renderers.text import render_text

    if report.graphs == 0:
        how = ("" if compiled else "; pass compile=True, or compile the model with "
               "model.compile(backend=\"fxlint\") before training")
        return f"fxlint: no graph was compiled with backend=\"fxlint\" {when}{how}"
    n = len(report.findings)
    head = (f"fxlint: {n} finding{'s' if n != 1 else ''} in the {report.graphs} graph"
            f"{'s' if report.graphs != 1 else ''} compiled {when}")
    return head + "\n" + render_text(report)


class ReportingCallback:
    """What both trainers' callbacks share: the options, the ``RunReporter`` and its ``report``/``session``
    (mixed in before the trainer's own callback base)."""

    def __init__(self, *, compile: bool = True, options: Mapping[str, Any] | None = None,
                 report_at: str = "first_step", stream: TextIO | None = None,
                 on_report: Callable[[Report], None] | None = None) -> None:
        super().__init__()
        self._run = RunReporter(compile=compile, options=options, report_at=report_at, stream=stream,
                                on_report=on_report)

    @property
    def report(self) -> Report | None:
        return self._run.report

    @property
    def session(self) -> Session | None:
        return self._run.session

