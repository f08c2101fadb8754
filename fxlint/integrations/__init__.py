"""Training-loop integrations: one callback per trainer that compiles the model with
``backend="fxlint"`` and prints fxlint's findings once per run.

* ``fxlint.integrations.huggingface.FxlintCallback``: a ``transformers.TrainerCallback``;
* ``fxlint.integrations.lightning.FxlintCallback``: a Lightning ``Callback`` (``lightning.pytorch``
  or ``pytorch_lightning``, whichever the program uses).

Importing ``fxlint`` or this package imports neither library: each module imports its own
trainer when it is imported itself, so fxlint does not require them.
"""
