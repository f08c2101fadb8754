"""The trainer callbacks (fxlint.integrations): a real Hugging Face Trainer and a real Lightning Trainer
train a tiny model for a few steps on the CPU; the findings of the graphs the callback compiled with
backend="fxlint" are printed once per run.

The inner backend is "eager" (options={"inner": "eager"}): what is tested is the callback, not Inductor.
"""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn as nn

ROOT = Path(__file__).resolve().parent.parent
EAGER = {"inner": "eager"}
HEADING = "fxlint: 1 finding in the 1 graph compiled"


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()  # every test compiles new instances of the same classes: no recompile limit
    yield
    torch._dynamo.reset()


def _body(lin: nn.Linear, head: nn.Linear, x: torch.Tensor) -> torch.Tensor:
    h = lin(x)
    h = h[:, None, :].expand(-1, 4, -1).contiguous().mean(1)  # FXL101: a copy nothing needs
    return head(h)


# --- Hugging Face --------------------------------------------------------------------------------

def _hf():
    from transformers import Trainer, TrainingArguments

    from fxlint.integrations.huggingface import FxlintCallback

    return FxlintCallback, Trainer, TrainingArguments


class HFModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin, self.head = nn.Linear(8, 8), nn.Linear(8, 2)

    def forward(self, x, labels=None):
        logits = _body(self.lin, self.head, x)
        return {"loss": nn.functional.cross_entropy(logits, labels), "logits": logits}


class HFData(torch.utils.data.Dataset):
    def __len__(self) -> int:
        return 16

    def __getitem__(self, i: int):
        return {"x": torch.randn(8), "labels": torch.tensor(i % 2)}


def _train_hf(tmp_path, model, callback, **args):
    _, Trainer, TrainingArguments = _hf()
    targs = TrainingArguments(output_dir=str(tmp_path / "out"), max_steps=3, per_device_train_batch_size=4,
                              use_cpu=True, report_to=[], save_strategy="no", logging_strategy="no",
                              disable_tqdm=True, **args)
    trainer = Trainer(model=model, args=targs, train_dataset=HFData(), callbacks=[callback])
    trainer.train()
    return trainer


def test_hf_callback_compiles_the_model_and_reports_once(tmp_path):
    FxlintCallback, _, _ = _hf()
    out = io.StringIO()
    model = HFModel()
    cb = FxlintCallback(options=EAGER, stream=out)
    trainer = _train_hf(tmp_path, model, cb)
    text = out.getvalue()
    assert text.count("fxlint: ") == 1 and text.startswith(HEADING + " after the first training step")
    assert "FXL101" in text and "test_integrations.py" in text
    assert cb.report is not None and cb.report.codes() == {"FXL101"}
    assert trainer.state.global_step == 3
    assert trainer.model is model and type(model) is HFModel  # compiled in place: saving, unwrapping unchanged


def test_hf_precompiled_model_and_report_at_train_end(tmp_path):
    """The documented way around accelerate's backend list: model.compile(backend="fxlint") first."""
    FxlintCallback, _, _ = _hf()
    out = io.StringIO()
    seen = []
    model = HFModel()
    model.compile(backend="fxlint", options=EAGER)
    cb = FxlintCallback(compile=False, report_at="train_end", stream=out, on_report=seen.append)
    _train_hf(tmp_path, model, cb)
    assert out.getvalue().startswith(HEADING + " at the end of training")
    assert out.getvalue().count("fxlint: ") == 1
    assert len(seen) == 1 and seen[0] is cb.report and seen[0].codes() == {"FXL101"}


def test_hf_by_hand_compile_first_and_a_session(tmp_path):
    """docs/trainers.md without the callback: model.compile(backend="fxlint") (in place), then a session."""
    import fxlint

    _, Trainer, TrainingArguments = _hf()
    model = HFModel()
    model.compile(backend="fxlint", options=EAGER)
    targs = TrainingArguments(output_dir=str(tmp_path / "out"), max_steps=2, per_device_train_batch_size=4,
                              use_cpu=True, report_to=[], save_strategy="no", disable_tqdm=True)
    with fxlint.collect() as session:
        Trainer(model=model, args=targs, train_dataset=HFData()).train()
    assert session.report().codes() == {"FXL101"}
    assert "FXL101 warning" in str(session.report())


def test_hf_uncompiled_model_says_so(tmp_path):
    FxlintCallback, _, _ = _hf()
    out = io.StringIO()
    _train_hf(tmp_path, HFModel(), FxlintCallback(compile=False, stream=out))
    assert out.getvalue().strip().startswith("fxlint: no graph was compiled with backend=\"fxlint\" after the first")
    assert "model.compile(backend=\"fxlint\")" in out.getvalue()


def test_hf_callback_refuses_torch_compile_and_a_bad_moment(tmp_path):
    FxlintCallback, _, _ = _hf()
    with pytest.raises(ValueError, match="report_at must be one of 'first_step', 'train_end'"):
        FxlintCallback(report_at="epoch")
    with pytest.raises(ValueError, match=r"leave TrainingArguments\.torch_compile off"):
        _train_hf(tmp_path, HFModel(), FxlintCallback(), torch_compile=True)


def test_accelerate_still_rejects_the_backend_name(tmp_path):
    """Why the callback exists (docs/trainers.md): if accelerate learns the name, the docs change."""
    _, Trainer, TrainingArguments = _hf()
    targs = TrainingArguments(output_dir=str(tmp_path), torch_compile_backend="fxlint", use_cpu=True, report_to=[])
    with pytest.raises(ValueError, match="'FXLINT' is not a valid DynamoBackend"):
        Trainer(model=HFModel(), args=targs)


# --- Lightning -----------------------------------------------------------------------------------

def _pl():
    import pytorch_lightning as pl

    from fxlint.integrations.lightning import FxlintCallback

    return FxlintCallback, pl


def _lit_module(pl):
    class Lit(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.lin, self.head = nn.Linear(8, 8), nn.Linear(8, 2)

        def forward(self, x):
            return _body(self.lin, self.head, x)

        def training_step(self, batch, batch_idx):
            x, y = batch
            return nn.functional.cross_entropy(self(x), y)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    return Lit()


def _fit(tmp_path, pl, model, callback):
    data = torch.utils.data.TensorDataset(torch.randn(16, 8), torch.randint(0, 2, (16,)))
    trainer = pl.Trainer(max_steps=3, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False, default_root_dir=str(tmp_path),
                         callbacks=[callback])
    trainer.fit(model, torch.utils.data.DataLoader(data, batch_size=4))
    return trainer


def test_lightning_callback_compiles_and_reports_once(tmp_path):
    FxlintCallback, pl = _pl()
    out = io.StringIO()
    cb = FxlintCallback(options=EAGER, stream=out)
    assert isinstance(cb, pl.Callback)
    trainer = _fit(tmp_path, pl, _lit_module(pl), cb)
    text = out.getvalue()
    assert text.count("fxlint: ") == 1 and text.startswith(HEADING + " after the first training step")
    assert cb.report is not None and cb.report.codes() == {"FXL101"}
    assert trainer.global_step == 3


def test_lightning_torch_compiled_module(tmp_path):
    """trainer.fit(torch.compile(model, backend="fxlint")) with compile=False (Lightning unwraps it)."""
    FxlintCallback, pl = _pl()
    out = io.StringIO()
    cb = FxlintCallback(compile=False, report_at="train_end", stream=out)
    _fit(tmp_path, pl, torch.compile(_lit_module(pl), backend="fxlint", options=EAGER), cb)
    assert out.getvalue().startswith(HEADING + " at the end of training")
    assert cb.report is not None and cb.report.codes() == {"FXL101"}


# --- fxlint does not need them -------------------------------------------------------------------

def test_fxlint_imports_no_trainer():
    code = ("import sys, fxlint, fxlint.integrations, fxlint.integrations._run\n"
            "bad = [m for m in ('transformers', 'accelerate', 'lightning', 'pytorch_lightning') if m in sys.modules]\n"
            "assert not bad, bad\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
