"""fxlint in a Hugging Face ``Trainer``: ``FxlintCallback``.

::

    from fxlint.integrations.huggingface import FxlintCallback

    trainer = Trainer(model=model, args=args, train_dataset=ds, callbacks=[FxlintCallback()])
    trainer.train()   # prints fxlint's findings once, after the first training step

``TrainingArguments(torch_compile_backend="fxlint")`` does not work: accelerate checks the name
against its own list of backends (``'FXLINT' is not a valid DynamoBackend``). The callback compiles
the model in place instead (``model.compile(backend="fxlint", options=options)``, the same module
object, so the Trainer's saving and unwrapping are unchanged) when training begins. Leave
``torch_compile`` off; a model already compiled with ``model.compile(backend="fxlint")`` before it
went to the Trainer is used as it is (then pass ``compile=False``, or leave it: a compiled model is
not compiled again).

``FxlintCallback(compile=True, options=None, report_at="first_step", stream=None, on_report=None)``:
``options`` are the backend's (``{"inner": "eager"}``, ``{"rewrite": True}``, ``{"select": "FXL1"}``);
``report_at="train_end"`` prints at the end instead; ``stream`` is where it prints (default
``sys.stdout``); ``on_report(report)`` receives the ``fxlint.Report`` (every process, under
``torch.distributed`` with every rank's findings). Only the main process prints. ``callback.report``
is the report once printed, ``callback.session`` the ``fxlint.Session`` of the run.

Importing this module imports ``transformers`` (fxlint does not depend on it); it makes a
mismatched torchvision importable first (``fxlint.util.compat``), as transformers imports torchvision
when it is installed.
"""

from __future__ import annotations

from typing import Any

from ..util.compat import ensure_torchvision_importable
from ._run import ReportingCallback

ensure_torchvision_importable()

from transformers import TrainerCallback  # noqa: E402

__all__ = ["FxlintCallback"]


class FxlintCallback(ReportingCallback, TrainerCallback):
    """Compile the Trainer's model with ``backend="fxlint"`` and print the findings once per run."""

    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
        if getattr(args, "torch_compile", False) and self._run.compile:
            raise ValueError("FxlintCallback compiles the model itself: leave TrainingArguments.torch_compile off "
                             "(or pass FxlintCallback(compile=False) for a model you compiled with backend=\"fxlint\")")
        self._run.start(model)

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._run.step(state.is_world_process_zero)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._run.finish(state.is_world_process_zero)
