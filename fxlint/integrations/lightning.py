"""fxlint in a Lightning ``Trainer``: ``FxlintCallback``.

::

    from fxlint.integrations.lightning import FxlintCallback

    trainer = L.Trainer(max_steps=100, callbacks=[FxlintCallback()])
    trainer.fit(model, loader)   # prints fxlint's findings once, after the first training step

The callback compiles the ``LightningModule`` in place when fitting starts
(``module.compile(backend="fxlint", options=options)``): what ``self(x)`` runs in
``training_step`` (its ``forward`` and the submodules it calls) is compiled. A ``training_step``
that calls a submodule directly (``self.net(x)``) is not: compile the module yourself,
``trainer.fit(torch.compile(model, backend="fxlint"))`` (Lightning then compiles ``training_step``
too), and pass ``compile=False``. The session is open from ``setup`` to ``teardown`` of the fit,
so the sanity-check validation's graphs count too.

Same arguments as the Hugging Face callback (``fxlint.integrations.huggingface``): ``compile``,
``options`` (the backend's), ``report_at`` (``"first_step"`` or ``"train_end"``), ``stream``,
``on_report``; only the global-zero process prints; ``callback.report`` and ``callback.session``.

The base class is that of the Lightning the program uses: ``lightning.pytorch`` when it is imported
(or, when neither is imported yet, installed), else ``pytorch_lightning`` (the trainer accepts only
callbacks of its own package). Importing this module imports it; fxlint does not depend on it. It
makes a mismatched torchvision importable first (``fxlint.util.compat``): Lightning imports torchmetrics,
which imports torchvision. Where that mismatch exists, ``import pytorch_lightning`` before fxlint
raises ``operator torchvision::nms does not exist``: import this module (or call
``fxlint.util.compat.ensure_torchvision_importable()``) first.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import Any

from ..util.compat import install_torchvision_fallback
from ._run import ReportingCallback

__all__ = ["FxlintCallback"]


def _lightning() -> Any:
    install_torchvision_fallback()  # Lightning imports torchmetrics, which imports torchvision
    for name in ("lightning.pytorch", "pytorch_lightning"):
        if name in sys.modules:
            return sys.modules[name]
    for name, top in (("lightning.pytorch", "lightning"), ("pytorch_lightning", "pytorch_lightning")):
        if importlib.util.find_spec(top) is not None:
            return importlib.import_module(name)
    raise ImportError("fxlint.integrations.lightning needs Lightning: pip install lightning (or pytorch-lightning)")


_pl = _lightning()


class FxlintCallback(ReportingCallback, _pl.Callback):  # type: ignore[name-defined]  # the base is chosen at import time
    """Compile the LightningModule with ``backend="fxlint"`` and print the findings once per fit."""

    def setup(self, trainer: Any, pl_module: Any, stage: str) -> None:
        if stage == "fit":
            self._run.start(pl_module)

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        self._run.step(trainer.is_global_zero)

    def teardown(self, trainer: Any, pl_module: Any, stage: str) -> None:
        if stage == "fit":
            self._run.finish(trainer.is_global_zero)
