"""The architectures of the real-zoo census (``bench/census.py``): timm, torchvision and Hugging Face
transformers models, built with random weights and no download, with small example inputs.

Each entry is a builder ``() -> (model, inputs)``; ``inputs`` is what ``fxlint.lint`` takes (a
tensor, a tuple of positional inputs or a dict of keyword inputs). Sizes are small where the
architecture allows (batch 2, 64x64 images for most vision models) and the architecture itself is
the library's own configuration, except where a depth or width override is named in the entry
(transformers models are built from small configs: 2 layers, hidden size 32 to 64).

``QUICK`` is the fast subset (one model or more per library) that ``--quick`` and the test suite
run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # before transformers is imported: never download

Builder = Callable[[], tuple[Any, Any]]


@dataclass(frozen=True)
class Arch:
    name: str  # unique id, "<library>/<model>"
    library: str  # timm | torchvision | transformers
    build: Builder
    note: str = ""  # what the entry exercises, or why it is configured as it is


REGISTRY: dict[str, Arch] = {}


def _add(library: str, name: str, build: Builder, note: str = "") -> None:
    key = f"{library}/{name}"
    assert key not in REGISTRY, key
    REGISTRY[key] = Arch(key, library, build, note)


def _img(size: int = 64, batch: int = 2, channels: int = 3) -> Any:
    import torch

    return torch.randn(batch, channels, size, size)


# --------------------------------------------------------------------------- timm


def _timm(name: str, size: int = 64, **kwargs: Any) -> Builder:
    def build() -> tuple[Any, Any]:
        import timm

        kw = {"num_classes": 10, **kwargs}
        try:  # models with position tables take the input size; fully convolutional ones refuse it
            model = timm.create_model(name, pretrained=False, img_size=size, **kw)
        except TypeError as exc:
            if "img_size" not in str(exc):
                raise
            model = timm.create_model(name, pretrained=False, **kw)
        return model, _img(size)

    return build


_TIMM = [
    # (model name, size, overrides, note)
    ("cait_xxs24_224", 64, {}, "class attention, talking heads"),
    ("swin_tiny_patch4_window7_224", 64, {}, "window attention; 64px makes the 7x7 windows pad"),
    ("swinv2_tiny_window8_256", 64, {}, "cosine window attention, continuous position bias"),
    ("maxvit_tiny_tf_224", 64, {}, "block and grid attention, MBConv"),
    ("coat_lite_tiny", 64, {}, "conv-attentional factorized attention"),
    ("pvt_v2_b0", 64, {}, "spatial-reduction attention (issue 14's FXL204 sites)"),
    ("vit_tiny_patch16_224", 64, {}, "plain ViT, fused SDPA"),
    ("deit_tiny_patch16_224", 64, {}, "DeiT"),
    ("beit_base_patch16_224", 64, {"depth": 2}, "relative position bias table gather (2 of 12 blocks)"),
    ("eva02_tiny_patch14_224", 56, {}, "rotary embeddings, SwiGLU"),
    ("convnext_atto", 64, {}, "depthwise conv, permuted LayerNorm"),
    ("efficientnet_b0", 64, {}, "MBConv, squeeze-excite"),
    ("mobilenetv3_small_100", 64, {}, "hard-swish, SE"),
    ("regnety_002", 64, {}, "RegNetY"),
    ("levit_128s", 64, {}, "attention biases gathered by index"),
    ("xcit_nano_12_p16_224", 64, {}, "cross-covariance attention, LPI conv"),
    ("poolformer_s12", 64, {}, "avg-pool token mixer"),
    ("crossvit_tiny_240", 240, {}, "two-branch cross attention (needs its 240/224 sizes)"),
    ("mobilevit_xxs", 64, {}, "unfold/fold of patches around a transformer"),
    ("edgenext_xx_small", 64, {}, "split depthwise transposed attention"),
    ("davit_tiny", 64, {}, "dual (spatial window / channel) attention"),
    ("gcvit_xxtiny", 64, {}, "global context attention"),
    ("tiny_vit_5m_224", 64, {}, "local window attention with padding"),
    ("fastvit_t8", 64, {}, "reparameterisable conv mixer"),
    ("focalnet_tiny_srf", 64, {}, "focal modulation"),
    ("hiera_tiny_224", 64, {}, "hierarchical mask-unit attention"),
    ("sequencer2d_s", 64, {}, "bidirectional LSTMs along H and W"),
    ("inception_next_tiny", 64, {}, "inception depthwise conv on channel splits"),
    ("volo_d1_224", 64, {}, "outlook attention (unfold/fold)"),
    ("halonet26t", 256, {}, "halo attention (local blocks with unfold; its blocks need 256px)"),
    ("convit_tiny", 64, {}, "gated positional self-attention"),
    ("mvitv2_tiny", 64, {}, "pooling attention with relative positions"),
    ("efficientvit_m0", 64, {}, "cascaded group attention"),
]
for _name, _size, _kw, _note in _TIMM:
    _add("timm", _name, _timm(_name, _size, **_kw), _note)


# --------------------------------------------------------------------------- torchvision


def _tv(fn: str, size: int = 64, video: tuple[int, int] | None = None, **kwargs: Any) -> Builder:
    def build() -> tuple[Any, Any]:
        import torch
        import torchvision

        factory = getattr(torchvision.models, fn, None)
        for sub in ("video", "segmentation", "detection"):
            if factory is None:
                factory = getattr(getattr(torchvision.models, sub), fn, None)
        model = factory(weights=None, **kwargs)
        if video is not None:  # (frames, side): clips (B, C, T, H, W)
            return model, torch.randn(2, 3, video[0], video[1], video[1])
        return model, _img(size)

    return build


def _tv_override(fn: str, module: str, builder: str, inputs: Callable[[], Any], **override: Any) -> Builder:
    """``torchvision.models.<fn>``'s own configuration with some of the arguments its factory fixes
    replaced (it passes them to ``<module>.<builder>`` itself, so they cannot be given as kwargs)."""

    def build() -> tuple[Any, Any]:
        import importlib

        mod = importlib.import_module(module)
        orig = getattr(mod, builder)

        def patched(*args: Any, **kwargs: Any) -> Any:
            kwargs.update(override)
            return orig(*args, **kwargs)

        setattr(mod, builder, patched)
        try:
            model = getattr(mod, fn)(weights=None, num_classes=10)
        finally:
            setattr(mod, builder, orig)
        return model, inputs()

    return build


def _tv_vit() -> tuple[Any, Any]:
    from torchvision.models.vision_transformer import VisionTransformer

    return VisionTransformer(image_size=64, patch_size=16, num_layers=2, num_heads=2, hidden_dim=64, mlp_dim=128,
                             num_classes=10), _img(64)


_TV = [
    ("resnet18", {}, "basic blocks"),
    ("resnext50_32x4d", {}, "grouped bottlenecks"),
    ("mobilenet_v2", {}, "inverted residuals"),
    ("mobilenet_v3_small", {}, "SE, hard-swish"),
    ("efficientnet_b0", {}, "MBConv, stochastic depth"),
    ("efficientnet_v2_s", {}, "fused MBConv"),
    ("shufflenet_v2_x0_5", {}, "channel shuffle (view, transpose, contiguous, view), chunk"),
    ("squeezenet1_0", {}, "fire modules, concat"),
    ("densenet121", {}, "dense concatenation"),
    ("convnext_tiny", {}, "permuted LayerNorm"),
    ("regnet_y_400mf", {}, "RegNetY"),
    ("swin_t", {}, "shifted windows, F.pad to the window size"),
    ("swin_v2_t", {}, "cosine window attention, F.pad"),
    ("googlenet", {"aux_logits": False, "init_weights": True}, "inception branches, concat"),
    ("mnasnet0_5", {}, "MnasNet"),
    ("inception_v3", {"aux_logits": False, "init_weights": True, "size": 96}, "inception v3 (96px: its minimum is 75)"),
    ("alexnet", {}, "adaptive avg pool, classifier"),
    ("lraspp_mobilenet_v3_large", {"weights_backbone": None, "num_classes": 4}, "segmentation head, F.interpolate"),
    ("deeplabv3_mobilenet_v3_large", {"weights_backbone": None, "num_classes": 4, "aux_loss": False},
     "ASPP, F.interpolate"),
]
for _name, _kw, _note in _TV:
    _kw = dict(_kw)
    _size = _kw.pop("size", 64)
    if _name not in ("lraspp_mobilenet_v3_large", "deeplabv3_mobilenet_v3_large"):
        _kw.setdefault("num_classes", 10)
    _add("torchvision", _name, _tv(_name, _size, **_kw), _note)
_add("torchvision", "vit_small_config", _tv_vit, "VisionTransformer(image_size=64, patch 16, 2 layers, hidden 64)")
_add("torchvision", "maxvit_t", _tv_override("maxvit_t", "torchvision.models.maxvit", "_maxvit", _img,
                                            input_size=(64, 64), partition_size=2),
     "maxvit_t's blocks at 64px with 2x2 partitions (its factory fixes 7x7, which needs 224px)")
_add("torchvision", "mvit_v2_s", _tv_override("mvit_v2_s", "torchvision.models.video.mvit", "_mvit",
                                             lambda: __import__("torch").randn(2, 3, 4, 64, 64),
                                             spatial_size=(64, 64), temporal_size=4),
     "video MViT v2 (attn[:, :, 1:, 1:] += rel_pos) on clips (2, 3, 4, 64, 64)")
_add("torchvision", "r3d_18", _tv("r3d_18", video=(4, 32), num_classes=10), "video 3-D ResNet; clips (2, 3, 4, 32, 32)")
_add("torchvision", "r2plus1d_18", _tv("r2plus1d_18", video=(4, 32), num_classes=10),
     "video (2+1)-D convs; clips (2, 3, 4, 32, 32)")


# --------------------------------------------------------------------------- transformers

VOCAB = 96
SEQ = 16


def _ids(seq: int = SEQ, low: int = 3) -> Any:
    import torch

    return torch.randint(low, VOCAB, (2, seq))


def _text(ids: Any) -> dict[str, Any]:
    import torch

    return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}


def _hf(cls: str, cfg_cls: str, inputs: Callable[[], Any], **cfg: Any) -> Builder:
    def build() -> tuple[Any, Any]:
        import transformers

        config = getattr(transformers, cfg_cls)(**cfg)
        return getattr(transformers, cls)(config), inputs()

    return build


_DEC = dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
            max_position_embeddings=64, bos_token_id=0, eos_token_id=1, pad_token_id=2)
_ENC = dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
            max_position_embeddings=64, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, pad_token_id=2)
_SEQ2SEQ = dict(vocab_size=VOCAB, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64,
                bos_token_id=0, eos_token_id=1, pad_token_id=2, decoder_start_token_id=0, dropout=0.0)


def _seq2seq_inputs() -> dict[str, Any]:
    d = _text(_ids())
    d["decoder_input_ids"] = _ids(8)
    return d


def _clip() -> tuple[Any, Any]:
    import transformers

    cfg = transformers.CLIPConfig(
        text_config=dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                         intermediate_size=64, max_position_embeddings=32, bos_token_id=0, eos_token_id=1,
                         pad_token_id=2),
        vision_config=dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                           image_size=32, patch_size=8),
        projection_dim=16)
    return transformers.CLIPModel(cfg), {**_text(_ids()), "pixel_values": _img(32)}


def _whisper() -> tuple[Any, Any]:
    import torch
    import transformers

    cfg = transformers.WhisperConfig(vocab_size=VOCAB, num_mel_bins=16, d_model=32, encoder_layers=2,
                                     decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
                                     encoder_ffn_dim=64, decoder_ffn_dim=64, max_source_positions=16,
                                     max_target_positions=32, pad_token_id=2, bos_token_id=0, eos_token_id=1,
                                     decoder_start_token_id=0)
    return transformers.WhisperModel(cfg), {"input_features": torch.randn(2, 16, 32), "decoder_input_ids": _ids(8)}


def _wav2vec2() -> tuple[Any, Any]:
    import torch
    import transformers

    cfg = transformers.Wav2Vec2Config(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                      intermediate_size=64, conv_dim=(16, 16, 16), conv_stride=(5, 2, 2),
                                      conv_kernel=(10, 3, 3), num_conv_pos_embeddings=16,
                                      num_conv_pos_embedding_groups=4, vocab_size=VOCAB)
    return transformers.Wav2Vec2Model(cfg), {"input_values": torch.randn(2, 1600)}


_HF: list[tuple[str, Builder, str]] = [
    ("bert", _hf("BertModel", "BertConfig", lambda: _text(_ids()), **_ENC), "encoder"),
    ("distilbert", _hf("DistilBertModel", "DistilBertConfig", lambda: _text(_ids()), vocab_size=VOCAB, dim=32,
                       n_layers=2, n_heads=4, hidden_dim=64, max_position_embeddings=64, dropout=0.0,
                       attention_dropout=0.0, pad_token_id=2), "encoder"),
    ("roberta", _hf("RobertaModel", "RobertaConfig", lambda: _text(_ids()), **_ENC), "encoder, position ids from a mask"),
    ("albert", _hf("AlbertModel", "AlbertConfig", lambda: _text(_ids()), embedding_size=16, **_ENC),
     "shared layers, factorised embedding"),
    ("electra", _hf("ElectraModel", "ElectraConfig", lambda: _text(_ids()), embedding_size=16, **_ENC), "encoder"),
    ("deberta_v2", _hf("DebertaV2Model", "DebertaV2Config", lambda: _text(_ids()), relative_attention=True,
                       position_buckets=8, max_relative_positions=16, pos_att_type=["p2c", "c2p"],
                       **{**_ENC, "max_position_embeddings": 64}),
     "disentangled attention: relative-position gathers"),
    ("gpt2", _hf("GPT2LMHeadModel", "GPT2Config", lambda: _text(_ids()), vocab_size=VOCAB, n_embd=32, n_layer=2,
                 n_head=4, n_positions=64, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0,
                 eos_token_id=1), "decoder, Conv1D"),
    ("llama", _hf("LlamaForCausalLM", "LlamaConfig", lambda: _text(_ids()), num_key_value_heads=2, **_DEC),
     "rotary, grouped-query attention"),
    ("mistral", _hf("MistralForCausalLM", "MistralConfig", lambda: _text(_ids()), num_key_value_heads=2,
                    sliding_window=8, **_DEC), "sliding-window attention"),
    ("qwen2", _hf("Qwen2ForCausalLM", "Qwen2Config", lambda: _text(_ids()), num_key_value_heads=2, **_DEC),
     "qkv bias, GQA"),
    ("gemma", _hf("GemmaForCausalLM", "GemmaConfig", lambda: _text(_ids()), num_key_value_heads=2, head_dim=8,
                  **_DEC), "GeGLU, scaled embeddings"),
    ("phi", _hf("PhiForCausalLM", "PhiConfig", lambda: _text(_ids()), partial_rotary_factor=0.5, **_DEC),
     "partial rotary"),
    ("opt", _hf("OPTForCausalLM", "OPTConfig", lambda: _text(_ids()), vocab_size=VOCAB, hidden_size=32,
                num_hidden_layers=2, ffn_dim=64, num_attention_heads=4, max_position_embeddings=64,
                word_embed_proj_dim=32, bos_token_id=0, eos_token_id=1, pad_token_id=2, dropout=0.0),
     "learned positions from the mask's cumsum"),
    ("bloom", _hf("BloomForCausalLM", "BloomConfig", lambda: _text(_ids()), vocab_size=VOCAB, hidden_size=32,
                  n_layer=2, n_head=4, bos_token_id=0, eos_token_id=1, pad_token_id=2), "ALiBi"),
    ("falcon", _hf("FalconForCausalLM", "FalconConfig", lambda: _text(_ids()), vocab_size=VOCAB, hidden_size=32,
                   num_hidden_layers=2, num_attention_heads=4, bos_token_id=0, eos_token_id=1, pad_token_id=2),
     "fused qkv, parallel attention"),
    ("t5", _hf("T5ForConditionalGeneration", "T5Config", _seq2seq_inputs, vocab_size=VOCAB, d_model=32, d_kv=8,
               d_ff=64, num_layers=2, num_heads=4, dropout_rate=0.0, decoder_start_token_id=0, pad_token_id=2,
               eos_token_id=1), "relative-position buckets"),
    ("bart", _hf("BartForConditionalGeneration", "BartConfig", _seq2seq_inputs, **_SEQ2SEQ), "encoder-decoder"),
    ("whisper", _whisper, "audio encoder-decoder; features (2, 16, 32)"),
    ("wav2vec2", _wav2vec2, "conv feature encoder, grouped positional conv; audio (2, 1600)"),
    ("vit", _hf("ViTForImageClassification", "ViTConfig", lambda: {"pixel_values": _img(32)}, image_size=32,
                patch_size=8, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, num_labels=10), "ViT"),
    ("swin", _hf("SwinModel", "SwinConfig", lambda: {"pixel_values": _img(112)}, image_size=112, patch_size=4,
                 embed_dim=16, depths=[1, 2, 1], num_heads=[1, 2, 4], window_size=7),
     "window attention, 3 stages at 112px (transformers 5.24's Swin fails on inputs its 7x7 windows must pad)"),
    ("convnext", _hf("ConvNextModel", "ConvNextConfig", lambda: {"pixel_values": _img(64)},
                     hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 2, 1]), "permuted LayerNorm"),
    ("segformer", _hf("SegformerForSemanticSegmentation", "SegformerConfig", lambda: {"pixel_values": _img(64)},
                      hidden_sizes=[16, 32, 64, 128], num_attention_heads=[1, 2, 2, 4], depths=[1, 1, 1, 1],
                      decoder_hidden_size=32, num_labels=4), "efficient attention, MLP decoder, interpolate"),
    ("clip", _clip, "text and vision towers"),
]
for _name, _build, _note in _HF:
    _add("transformers", _name, _build, _note)

#: the fast subset: small, quick models, at least one per library
QUICK = ("timm/beit_base_patch16_224", "timm/hiera_tiny_224", "torchvision/shufflenet_v2_x0_5",
         "torchvision/vit_small_config", "transformers/bert", "transformers/swin")
