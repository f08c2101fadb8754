"""Real architectures nobody on the team wrote: Hugging Face transformers model families built from
small configs with random weights (no download: ``HF_HUB_OFFLINE=1``).

For each family (encoder: BERT; decoders: GPT-2, Llama; vision: ViT; encoder-decoder: T5), in
training mode: ``fxlint.lint(..., confirm=True)`` does not crash, reports no internal error and no
error-severity finding (these models train: a backward step reaches every parameter, checked
here), every copy-type finding is confirmed by the runtime audit; and the backend (inner
``eager``, rewrites on) gives eager's outputs without an fxlint warning.

Skipped when transformers is not installed (requirements-dev.txt pins it, so CI runs it).
"""

from __future__ import annotations

import os
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # before transformers is imported: never download

import pytest  # noqa: E402
import torch  # noqa: E402

transformers = pytest.importorskip("transformers")

import fxlint  # noqa: E402
from fxlint.errors import FxlintWarning  # noqa: E402
from fxlint.registry import COPY_FAMILIES  # noqa: E402

T = transformers
VOCAB = 96


def bert():
    cfg = T.BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                       intermediate_size=64, max_position_embeddings=32, hidden_dropout_prob=0.0,
                       attention_probs_dropout_prob=0.0)
    ids = torch.randint(0, VOCAB, (2, 12))
    return T.BertModel(cfg), {"input_ids": ids, "attention_mask": torch.ones_like(ids)}


def gpt2():
    cfg = T.GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=32, resid_pdrop=0.0,
                       embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0)
    ids = torch.randint(0, VOCAB, (2, 12))
    return T.GPT2LMHeadModel(cfg), {"input_ids": ids, "labels": ids}


def llama():
    cfg = T.LlamaConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        num_key_value_heads=2, intermediate_size=64, max_position_embeddings=32,
                        bos_token_id=0, eos_token_id=0, pad_token_id=0)
    ids = torch.randint(0, VOCAB, (2, 12))
    return T.LlamaForCausalLM(cfg), {"input_ids": ids, "labels": ids}


def vit():
    cfg = T.ViTConfig(image_size=16, patch_size=4, num_channels=3, hidden_size=32, num_hidden_layers=2,
                      num_attention_heads=4, intermediate_size=64, hidden_dropout_prob=0.0,
                      attention_probs_dropout_prob=0.0, num_labels=3)
    return T.ViTForImageClassification(cfg), {"pixel_values": torch.randn(2, 3, 16, 16),
                                              "labels": torch.tensor([0, 2])}


def t5():
    cfg = T.T5Config(vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4, dropout_rate=0.0,
                     decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
    ids = torch.randint(2, VOCAB, (2, 10))
    return T.T5ForConditionalGeneration(cfg), {"input_ids": ids, "labels": ids[:, :6].clone()}


FAMILIES = {"bert": bert, "gpt2": gpt2, "llama": llama, "vit": vit, "t5": t5}


def _build(name: str):
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, inputs = FAMILIES[name]()
    return model.train(), inputs


def _tensors(out) -> list[torch.Tensor]:
    import torch.utils._pytree as pytree

    values = out.to_tuple() if hasattr(out, "to_tuple") else out
    return [t for t in pytree.tree_leaves(values) if isinstance(t, torch.Tensor)]


@pytest.mark.parametrize("name", list(FAMILIES))
def test_lint_confirms_every_copy_and_finds_no_error(name):
    model, inputs = _build(name)
    # it trains: one backward step reaches every parameter
    out = model(**inputs)
    loss = out.loss if getattr(out, "loss", None) is not None else sum(t.float().sum() for t in _tensors(out))
    loss.backward()
    untouched = [n for n, p in model.named_parameters() if p.requires_grad and p.grad is None]
    assert not untouched, untouched
    model.zero_grad(set_to_none=True)

    torch._dynamo.reset()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = fxlint.lint(model, inputs, confirm=True)
    assert not report.errors, report.errors
    assert not [w for w in caught if issubclass(w.category, FxlintWarning)]
    errors = [f for f in report.findings if f.severity == "error"]
    assert not errors, "\n".join(f"{f.code} {f.location}: {f.message}" for f in errors)
    copies = [f for f in report.findings if f.code.startswith(COPY_FAMILIES)]
    unconfirmed = [f for f in copies if f.status != "confirmed"]
    assert not unconfirmed, "\n".join(f"{f.code} {f.location} ({f.source}): {f.status}, {f.bytes} B"
                                      for f in unconfirmed)


@pytest.mark.parametrize("name", ["bert", "llama"])
def test_backend_with_rewrites_matches_eager(name):
    model, inputs = _build(name)
    torch.manual_seed(0)
    expected = _tensors(model(**inputs))
    torch._dynamo.reset()
    with warnings.catch_warnings(record=True) as caught, fxlint.collect() as session:
        warnings.simplefilter("always")
        compiled = torch.compile(model, backend="fxlint", options={"inner": "eager", "rewrite": True})
        torch.manual_seed(0)
        got = _tensors(compiled(**inputs))
    torch._dynamo.reset()
    assert not [w for w in caught if issubclass(w.category, FxlintWarning)], [str(w.message) for w in caught]
    assert not session.errors and not [s for s in session.skipped if s.rolled_back]
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e)
