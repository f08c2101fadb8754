"""The architectures of the real-zoo census (``bench/census.py``): timm, torchvision, Hugging Face
transformers, diffusers, MONAI, segmentation-models-pytorch (``smp``), PyTorch Geometric (``pyg``),
torchaudio and x-transformers models, built with random weights and no download, with small example
inputs.

Each entry is a builder ``() -> (model, inputs)``; ``inputs`` is what ``fxlint.lint`` takes (a
tensor, a tuple of positional inputs or a dict of keyword inputs). Sizes are small where the
architecture allows (batch 2, 64x64 images for most vision models) and the architecture itself is
the library's own configuration, except where a depth or width override is named in the entry
(transformers models are built from small configs: 2 layers, hidden size 32 to 64).

The libraries added for the wider census are built the same way: diffusers UNets, autoencoders and
diffusion transformers at width 32-64 with 1-2 layers a level (16-32 px latents or images); MONAI
networks on 3-D volumes of 16^3 to 32^3 (or 64 px 2-D); smp decoders over resnet18, mobilenet_v2,
efficientnet-b0, mit_b0 and timm-universal (``tu-``) encoders at 64 px (``encoder_weights=None``);
pyg GNNs on a random graph of 100 nodes and 400 edges (torch_scatter/torch_sparse absent: pyg's own
fallbacks); torchaudio models (python-only import, see ``fxlint.util.compat``) with 2 layers, width 32,
on 0.1-0.25 s of audio or short feature sequences; x-transformers stacks of 2 layers, width 32, one
entry per attention/feed-forward option. Every entry also runs in ``train()`` mode and
back-propagates the loss ``fxlint.runtime.training_loss`` makes of its outputs.

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
    library: str  # one of census.LIBRARIES: timm | torchvision | transformers | diffusers | monai | smp | ...
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



# --------------------------------------------------------------------------- diffusers


def _t(*shape: int) -> Any:
    import torch

    return torch.randn(*shape)


def _steps(batch: int = 2) -> Any:
    import torch

    return torch.tensor([10, 500][:batch])


def _df(cls: str, inputs: Callable[[], Any], **cfg: Any) -> Builder:
    def build() -> tuple[Any, Any]:
        import diffusers

        return getattr(diffusers, cls)(**cfg), inputs()

    return build


_UNET_SMALL = dict(block_out_channels=(32, 64), layers_per_block=1, norm_num_groups=8)
_UNET_COND = dict(sample_size=16, in_channels=4, out_channels=4, block_out_channels=(32, 64), layers_per_block=1,
                  norm_num_groups=8, cross_attention_dim=32, attention_head_dim=8,
                  down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
                  up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"))
_VAE = dict(in_channels=3, out_channels=3, block_out_channels=(32, 64), layers_per_block=1, norm_num_groups=8,
            down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
            up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"), latent_channels=4)


def _cond_inputs() -> dict[str, Any]:
    return {"sample": _t(2, 4, 16, 16), "timestep": _steps(), "encoder_hidden_states": _t(2, 8, 32)}


def _flux() -> tuple[Any, Any]:
    import diffusers
    import torch

    model = diffusers.FluxTransformer2DModel(patch_size=1, in_channels=16, num_layers=1, num_single_layers=1,
                                             attention_head_dim=16, num_attention_heads=2, joint_attention_dim=32,
                                             pooled_projection_dim=16, axes_dims_rope=(4, 6, 6))
    img_ids = torch.zeros(64, 3)
    img_ids[:, 1] = torch.arange(64) // 8
    img_ids[:, 2] = torch.arange(64) % 8
    return model, {"hidden_states": _t(2, 64, 16), "encoder_hidden_states": _t(2, 8, 32),
                   "pooled_projections": _t(2, 16), "timestep": torch.tensor([0.1, 0.7]), "img_ids": img_ids,
                   "txt_ids": torch.zeros(8, 3)}


_DIFFUSERS: list[tuple[str, Builder, str]] = [
    ("unet2d", _df("UNet2DModel", lambda: (_t(2, 3, 32, 32), _steps()), sample_size=32,
                   down_block_types=("DownBlock2D", "AttnDownBlock2D"), up_block_types=("AttnUpBlock2D", "UpBlock2D"),
                   **_UNET_SMALL), "DDPM UNet: resnet blocks, self-attention, timestep embedding; 32px"),
    ("unet2d_resnet_updown", _df("UNet2DModel", lambda: (_t(2, 3, 32, 32), _steps()), sample_size=32,
                                 down_block_types=("ResnetDownsampleBlock2D", "AttnDownBlock2D"),
                                 up_block_types=("AttnUpBlock2D", "ResnetUpsampleBlock2D"),
                                 resnet_time_scale_shift="scale_shift", **_UNET_SMALL),
     "resnet down/upsampling blocks, scale-shift time conditioning"),
    ("unet2d_condition", _df("UNet2DConditionModel", _cond_inputs, **_UNET_COND),
     "SD-style UNet: cross-attention transformer blocks (2 levels, width 32/64); latents 16px"),
    ("controlnet", _df("ControlNetModel", lambda: {**_cond_inputs(), "controlnet_cond": _t(2, 3, 32, 32)},
                       conditioning_embedding_out_channels=(8, 16),
                       **{k: v for k, v in _UNET_COND.items() if k not in ("sample_size", "out_channels",
                                                                           "up_block_types")}),
     "ControlNet: conditioning embedding, zero convs, residual outputs"),
    ("unet1d", _df("UNet1DModel", lambda: (_t(2, 2, 256), _steps()), sample_size=256, extra_in_channels=64),
     "dance-diffusion UNet1D (its widths): fourier time embedding concatenated to the input, 1-D attention; "
     "(2, 2, 256)"),
    ("autoencoder_kl", _df("AutoencoderKL", lambda: _t(2, 3, 32, 32), **_VAE),
     "VAE: encoder, diagonal Gaussian, decoder with mid-block attention"),
    ("vq_model", _df("VQModel", lambda: _t(2, 3, 32, 32), num_vq_embeddings=64, vq_embed_dim=4, **_VAE),
     "VQ-GAN: vector quantiser (argmin over the codebook, straight-through)"),
    ("autoencoder_tiny", _df("AutoencoderTiny", lambda: _t(2, 3, 32, 32), encoder_block_out_channels=(16, 16, 16, 16),
                             decoder_block_out_channels=(16, 16, 16, 16), num_encoder_blocks=(1, 1, 1, 1),
                             num_decoder_blocks=(1, 1, 1, 1)), "TAESD: tiny conv autoencoder, clamp/scale latents"),
    ("dit", _df("DiTTransformer2DModel", lambda: {"hidden_states": _t(2, 4, 16, 16), "timestep": _steps(),
                                                   "class_labels": __import__("torch").tensor([1, 3])},
                num_attention_heads=2, attention_head_dim=16, in_channels=4, num_layers=2, sample_size=16,
                patch_size=2, num_embeds_ada_norm=10),
     "DiT: patchify, adaLN-zero, class embedding, unpatchify"),
    ("pixart", _df("PixArtTransformer2DModel",
                   lambda: {"hidden_states": _t(2, 4, 16, 16), "encoder_hidden_states": _t(2, 8, 32),
                            "timestep": _steps(), "added_cond_kwargs": {"resolution": None, "aspect_ratio": None}},
                   num_layers=2, num_attention_heads=2, attention_head_dim=16, in_channels=4, out_channels=8,
                   sample_size=16, patch_size=2, cross_attention_dim=32, caption_channels=32),
     "PixArt-alpha: adaLN-single, caption projection, cross-attention"),
    ("sd3_transformer", _df("SD3Transformer2DModel",
                            lambda: {"hidden_states": _t(2, 4, 16, 16), "encoder_hidden_states": _t(2, 8, 32),
                                     "pooled_projections": _t(2, 16), "timestep": _steps()},
                            sample_size=16, patch_size=2, in_channels=4, num_layers=2, attention_head_dim=16,
                            num_attention_heads=2, joint_attention_dim=32, caption_projection_dim=32,
                            pooled_projection_dim=16, out_channels=4, pos_embed_max_size=16),
     "SD3 MMDiT: joint text-image attention, cropped position embedding"),
    ("flux_transformer", _flux, "Flux: double- and single-stream blocks, 3-axis rotary embedding; 64 image tokens"),
    ("prior_transformer", _df("PriorTransformer",
                              lambda: {"hidden_states": _t(2, 32), "timestep": _steps(), "proj_embedding": _t(2, 32),
                                       "encoder_hidden_states": _t(2, 8, 32),
                                       "attention_mask": __import__("torch").ones(2, 8).bool()},
                              num_attention_heads=2, attention_head_dim=16, num_layers=2, embedding_dim=32,
                              num_embeddings=8, additional_embeddings=4),
     "Kandinsky/unCLIP prior: causal mask built from the text mask, prd token"),
]
for _name, _build, _note in _DIFFUSERS:
    _add("diffusers", _name, _build, _note)


# --------------------------------------------------------------------------- monai


def _monai(cls: str, inputs: Callable[[], Any], **cfg: Any) -> Builder:
    def build() -> tuple[Any, Any]:
        from monai.networks import nets

        return getattr(nets, cls)(**cfg), inputs()

    return build


def _vol(side: int = 32, channels: int = 1) -> Any:
    return _t(2, channels, side, side, side)


_MONAI: list[tuple[str, Builder, str]] = [
    ("unet", _monai("UNet", _vol, spatial_dims=3, in_channels=1, out_channels=2, channels=(8, 16, 32),
                    strides=(2, 2), num_res_units=2), "residual-unit 3-D UNet; volumes 32^3"),
    ("basic_unet", _monai("BasicUNet", _vol, spatial_dims=3, in_channels=1, out_channels=2,
                          features=(8, 8, 16, 32, 64, 8)), "BasicUNet 3-D (features shrunk)"),
    ("basic_unet_plus_plus", _monai("BasicUNetPlusPlus", _vol, spatial_dims=3, in_channels=1, out_channels=2,
                                    features=(8, 8, 16, 32, 64, 8)), "UNet++ nested skips, 3-D"),
    ("attention_unet", _monai("AttentionUnet", lambda: _img(64, channels=1), spatial_dims=2, in_channels=1,
                              out_channels=2, channels=(8, 16, 32), strides=(2, 2)),
     "attention gates on the skips, 2-D 64px"),
    ("segresnet", _monai("SegResNet", _vol, spatial_dims=3, init_filters=8, in_channels=1, out_channels=2,
                         blocks_down=(1, 2, 2), blocks_up=(1, 1)), "SegResNet 3-D (3 levels)"),
    ("dynunet", _monai("DynUNet", _vol, spatial_dims=3, in_channels=1, out_channels=2, kernel_size=[3, 3, 3],
                       strides=[1, 2, 2], upsample_kernel_size=[2, 2], filters=[8, 16, 32]),
     "nnU-Net style DynUNet 3-D"),
    ("vnet", _monai("VNet", lambda: _vol(16), spatial_dims=3, in_channels=1, out_channels=2),
     "VNet 3-D (its own widths; 16^3)"),
    ("unetr", _monai("UNETR", _vol, in_channels=1, out_channels=2, img_size=(32, 32, 32), feature_size=8,
                     hidden_size=48, mlp_dim=96, num_heads=4), "UNETR: 12-layer ViT encoder (width 48), conv decoder"),
    ("swin_unetr", _monai("SwinUNETR", _vol, in_channels=1, out_channels=2, feature_size=12, depths=(1, 1, 1, 1),
                          num_heads=(1, 2, 3, 6), norm_name="batch"),
     "3-D shifted-window attention, 1 block a stage; batch norm in the conv blocks (instance norm cannot train on "
     "the 1^3 bottleneck of a 32^3 volume)"),
    ("densenet121_3d", _monai("DenseNet121", _vol, spatial_dims=3, in_channels=1, out_channels=2),
     "DenseNet121 3-D (its own widths)"),
    ("resnet10_3d", _monai("resnet10", _vol, spatial_dims=3, n_input_channels=1, num_classes=2),
     "MedicalNet ResNet10 3-D"),
    ("vit_3d", _monai("ViT", _vol, in_channels=1, img_size=32, patch_size=8, hidden_size=64, mlp_dim=128,
                      num_layers=2, num_heads=4, spatial_dims=3, classification=True, num_classes=2),
     "3-D ViT (2 layers, width 64); returns (logits, hidden states)"),
    ("highresnet", _monai("HighResNet", lambda: _vol(16), spatial_dims=3, in_channels=1, out_channels=2),
     "dilated residual HighResNet 3-D (its own widths; 16^3)"),
    ("flexible_unet", _monai("FlexibleUNet", lambda: _img(64), in_channels=3, out_channels=2,
                             backbone="efficientnet-b0", pretrained=False, spatial_dims=2),
     "FlexibleUNet with an EfficientNet-B0 encoder, 2-D 64px"),
    ("mednext", _monai("MedNeXt", lambda: _vol(16), spatial_dims=3, init_filters=8, in_channels=1, out_channels=2,
                       blocks_down=(1, 1, 1, 1), blocks_bottleneck=1, blocks_up=(1, 1, 1, 1)),
     "MedNeXt 3-D: depthwise ConvNeXt blocks; 16^3"),
]
for _name, _build, _note in _MONAI:
    _add("monai", _name, _build, _note)


# --------------------------------------------------------------------------- segmentation_models_pytorch


def _smp(cls: str, encoder: str, **cfg: Any) -> Builder:
    size = cfg.pop("size", 64)

    def build() -> tuple[Any, Any]:
        import segmentation_models_pytorch as smp

        return getattr(smp, cls)(encoder_name=encoder, encoder_weights=None, classes=3, **cfg), _img(size)

    return build


_SMP = [
    ("unet_resnet18", "Unet", "resnet18", {}, "UNet decoder, concat skips"),
    ("unet_mobilenet_v2_aux", "Unet", "mobilenet_v2", {"aux_params": {"classes": 4}},
     "UNet + classification head (returns (mask, label))"),
    ("unet_convnext_atto", "Unet", "tu-convnext_atto", {}, "timm-universal encoder, ConvNeXt (stride-4 stem)"),
    ("unetplusplus_resnet18", "UnetPlusPlus", "resnet18", {}, "nested dense skips"),
    ("fpn_mobilenet_v2", "FPN", "mobilenet_v2", {}, "feature pyramid, upsample-add"),
    ("fpn_mit_b0", "FPN", "mit_b0", {}, "Mix Transformer encoder, FPN decoder"),
    ("pspnet_resnet18", "PSPNet", "resnet18", {}, "pyramid pooling"),
    ("deeplabv3_resnet18", "DeepLabV3", "resnet18", {}, "ASPP, dilated encoder (output stride 8)"),
    ("deeplabv3plus_efficientnet", "DeepLabV3Plus", "efficientnet-b0", {}, "ASPP with separable convs, low-level skip"),
    ("linknet_resnet18", "Linknet", "resnet18", {}, "add skips, transposed convs"),
    ("manet_resnet18", "MAnet", "resnet18", {}, "position and multi-scale attention blocks"),
    ("pan_resnet18", "PAN", "resnet18", {"size": 128}, "pyramid attention network (128px: its pyramid pools the "
     "stride-16 features 8x more)"),
    ("upernet_resnet18", "UPerNet", "resnet18", {}, "PPM + FPN fusion"),
    ("segformer_mit_b0", "Segformer", "mit_b0", {}, "MiT-B0 encoder, all-MLP decoder"),
    ("dpt_vit_tiny", "DPT", "tu-vit_tiny_patch16_224", {"dynamic_img_size": True},
     "DPT: ViT encoder readout/reassemble, fusion blocks"),
]
for _name, _cls, _enc, _kw, _note in _SMP:
    _add("smp", _name, _smp(_cls, _enc, **_kw), _note)


# --------------------------------------------------------------------------- torch_geometric


def _graph(nodes: int = 100, edges: int = 400, features: int = 16, seed: int = 0) -> tuple[Any, Any]:
    import torch

    g = torch.Generator().manual_seed(seed)
    return torch.randn(nodes, features, generator=g), torch.randint(0, nodes, (2, edges), generator=g)


def _pyg(cls: str, **cfg: Any) -> Builder:
    def build() -> tuple[Any, Any]:
        from torch_geometric.nn import models

        return getattr(models, cls)(**cfg), _graph()

    return build


def _pyg_custom(kind: str) -> Builder:
    def build() -> tuple[Any, Any]:
        import torch
        from torch_geometric import nn as gnn

        class Net(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                if kind == "transformer":
                    self.convs = torch.nn.ModuleList([gnn.TransformerConv(16, 8, heads=4),
                                                      gnn.TransformerConv(32, 8, heads=1)])
                elif kind == "pointnet":
                    self.convs = torch.nn.ModuleList([
                        gnn.PointNetConv(torch.nn.Sequential(torch.nn.Linear(16 + 3, 32), torch.nn.ReLU()),
                                         add_self_loops=True),
                        gnn.PointNetConv(torch.nn.Sequential(torch.nn.Linear(32 + 3, 8)))])
                elif kind == "gps":
                    self.lin = torch.nn.Linear(16, 32)
                    self.convs = torch.nn.ModuleList([
                        gnn.GPSConv(32, gnn.GINConv(torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.ReLU(),
                                                                        torch.nn.Linear(32, 32))), heads=4)
                        for _ in range(2)])

            def forward(self, x: Any, edge_index: Any, pos: Any = None) -> Any:
                if kind == "gps":
                    x = self.lin(x)
                for i, conv in enumerate(self.convs):
                    x = conv(x, pos, edge_index) if kind == "pointnet" else conv(x, edge_index)
                    if i + 1 < len(self.convs):
                        x = x.relu()
                return x

        x, ei = _graph()
        return Net(), ((x, ei, torch.randn(x.shape[0], 3)) if kind == "pointnet" else (x, ei))

    return build


def _pna() -> tuple[Any, Any]:
    import torch
    from torch_geometric.nn.models import PNA
    from torch_geometric.utils import degree

    x, ei = _graph()
    deg = torch.bincount(degree(ei[1], x.shape[0], dtype=torch.long))
    return PNA(16, 32, 2, 8, aggregators=["mean", "min", "max", "std"], scalers=["identity", "amplification",
                                                                                  "attenuation"], deg=deg), (x, ei)


def _schnet() -> tuple[Any, Any]:
    import torch
    from torch_geometric.nn.models import SchNet

    def full_graph(pos: Any, batch: Any) -> tuple[Any, Any]:  # radius_graph needs torch_cluster: all pairs
        n = pos.shape[0]
        idx = torch.arange(n)
        row, col = idx.repeat_interleave(n), idx.repeat(n)
        keep = (row != col) & (batch[row] == batch[col])
        ei = torch.stack([row[keep], col[keep]])
        return ei, (pos[ei[0]] - pos[ei[1]]).norm(dim=-1)

    model = SchNet(hidden_channels=32, num_filters=32, num_interactions=2, num_gaussians=16, cutoff=5.0,
                   interaction_graph=full_graph)
    return model, (torch.randint(1, 10, (24,)), torch.randn(24, 3) * 2, torch.arange(2).repeat_interleave(12))


def _attentive_fp() -> tuple[Any, Any]:
    import torch
    from torch_geometric.nn.models import AttentiveFP

    x, ei = _graph()
    return (AttentiveFP(16, 32, 4, edge_dim=8, num_layers=2, num_timesteps=2),
            (x, ei, torch.randn(ei.shape[1], 8), torch.arange(4).repeat_interleave(25)))


def _graph_unet() -> tuple[Any, Any]:
    from torch_geometric.nn.models import GraphUNet

    return GraphUNet(16, 32, 8, depth=2), _graph()


_PYG: list[tuple[str, Builder, str]] = [
    ("gcn", _pyg("GCN", in_channels=16, hidden_channels=32, num_layers=2, out_channels=8),
     "GCNConv: normalised adjacency via scatter; graph of 100 nodes, 400 edges"),
    ("gcn_jk_cat", _pyg("GCN", in_channels=16, hidden_channels=32, num_layers=3, out_channels=8, jk="cat",
                        norm="batch"),
     "GCN with batch norm and jumping-knowledge concat"),
    ("gat", _pyg("GAT", in_channels=16, hidden_channels=32, num_layers=2, out_channels=8, heads=4),
     "GATConv: edge softmax, multi-head"),
    ("gatv2", _pyg("GAT", in_channels=16, hidden_channels=32, num_layers=2, out_channels=8, heads=4, v2=True),
     "GATv2Conv: dynamic attention"),
    ("graphsage", _pyg("GraphSAGE", in_channels=16, hidden_channels=32, num_layers=2, out_channels=8),
     "SAGEConv: mean aggregation"),
    ("gin", _pyg("GIN", in_channels=16, hidden_channels=32, num_layers=2, out_channels=8), "GINConv with MLPs"),
    ("edgecnn", _pyg("EdgeCNN", in_channels=16, hidden_channels=32, num_layers=2, out_channels=8),
     "EdgeConv (DGCNN): messages from x_i, x_j - x_i"),
    ("pna", _pna, "PNA: mean/min/max/std aggregators, degree scalers"),
    ("graph_unet", _graph_unet, "Graph U-Net: TopK pooling, unpooling"),
    ("schnet", _schnet, "SchNet: continuous-filter convolutions on all atom pairs (no torch_cluster)"),
    ("attentive_fp", _attentive_fp, "AttentiveFP: GATE conv, GRU cells, graph readout over 4 graphs"),
    ("transformer_conv", _pyg_custom("transformer"), "TransformerConv: graph attention with a root skip"),
    ("pointnet_conv", _pyg_custom("pointnet"), "PointNetConv: messages on relative positions"),
    ("gps", _pyg_custom("gps"), "GPSConv: local GIN + global multi-head attention over to_dense_batch"),
]
for _name, _build, _note in _PYG:
    _add("pyg", _name, _build, _note)


# --------------------------------------------------------------------------- torchaudio


def _ta(fn: str, inputs: Callable[[], Any], **cfg: Any) -> Builder:
    def build() -> tuple[Any, Any]:
        from fxlint.util.compat import install_torchvision_fallback

        install_torchvision_fallback()  # torchaudio's python-only import on the CPU torch (census.py does it too)
        import torchaudio

        return getattr(torchaudio.models, fn)(**cfg), inputs()

    return build


_W2V = dict(extractor_conv_layer_config=[(16, 10, 5), (16, 3, 2), (16, 3, 2)], extractor_conv_bias=False,
            encoder_embed_dim=32, encoder_projection_dropout=0.0, encoder_pos_conv_kernel=16,
            encoder_pos_conv_groups=4, encoder_num_layers=2, encoder_num_heads=4, encoder_attention_dropout=0.0,
            encoder_ff_interm_features=64, encoder_ff_interm_dropout=0.0, encoder_dropout=0.0,
            encoder_layer_drop=0.0, aux_num_out=10)


def _lengths(*values: int) -> Any:
    import torch

    return torch.tensor(values)


_TORCHAUDIO: list[tuple[str, Builder, str]] = [
    ("wav2vec2", _ta("wav2vec2_model", lambda: _t(2, 3200), extractor_mode="group_norm",
                     encoder_layer_norm_first=False, **_W2V), "wav2vec 2.0 base layout (2 layers, width 32); 0.2 s"),
    ("wav2vec2_large_lv60", _ta("wav2vec2_model", lambda: _t(2, 3200), extractor_mode="layer_norm",
                                encoder_layer_norm_first=True, **_W2V),
     "wav2vec 2.0 large-lv60 layout: layer-norm extractor, pre-norm encoder"),
    ("wavlm", _ta("wavlm_model", lambda: _t(2, 3200), extractor_mode="group_norm", encoder_layer_norm_first=False,
                  encoder_num_buckets=32, encoder_max_distance=64, **_W2V), "WavLM: gated relative position bias"),
    ("conformer", _ta("Conformer", lambda: (_t(2, 50, 32), _lengths(50, 40)), input_dim=32, num_heads=4, ffn_dim=64,
                      num_layers=2, depthwise_conv_kernel_size=7), "Conformer: macaron FFN, conv module, padding mask"),
    ("emformer", _ta("Emformer", lambda: (_t(2, 33, 32), _lengths(33, 30)), input_dim=32, num_heads=4, ffn_dim=64,
                     num_layers=2, segment_length=4, right_context_length=1),
     "Emformer: segmented attention with memory, right context"),
    ("emformer_rnnt", _ta("emformer_rnnt_model",
                          lambda: (_t(2, 40, 16), _lengths(40, 36),
                                   __import__("torch").randint(0, 20, (2, 6)), _lengths(6, 5)),
                          input_dim=16, encoding_dim=32, num_symbols=20, segment_length=4, right_context_length=0,
                          time_reduction_input_dim=32, time_reduction_stride=4, transformer_num_heads=4,
                          transformer_ffn_dim=64, transformer_num_layers=2, transformer_dropout=0.0,
                          transformer_activation="gelu", transformer_left_context_length=8,
                          transformer_max_memory_size=0, transformer_weight_init_scale_strategy="depthwise",
                          transformer_tanh_on_mem=True, symbol_embedding_dim=16, num_lstm_layers=1,
                          lstm_layer_norm=True, lstm_layer_norm_epsilon=1e-3, lstm_dropout=0.0),
     "Emformer RNN-T: time reduction, LSTM predictor, joiner"),
    ("conv_tasnet", _ta("ConvTasNet", lambda: _t(2, 1, 4000), num_sources=2, enc_num_feats=64, msk_num_feats=32,
                        msk_num_hidden_feats=64, msk_num_layers=2, msk_num_stacks=1),
     "Conv-TasNet: dilated depthwise TCN mask, transposed-conv decoder; 0.25 s"),
    ("hdemucs", _ta("HDemucs", lambda: _t(2, 2, 4096), sources=["drums", "other"], channels=8, growth=2, nfft=256,
                    depth=4), "Hybrid Demucs: STFT branch + waveform branch (4 levels, 8 channels, nfft 256)"),
    ("wavernn", _ta("WaveRNN", lambda: (_t(2, 1, (10 - 4) * 16), _t(2, 1, 16, 10)), upsample_scales=[4, 4],
                    n_classes=64, hop_length=16, n_res_block=2, n_rnn=32, n_fc=32, kernel_size=5, n_freq=16,
                    n_hidden=16, n_output=16), "WaveRNN: upsampling network, GRU, residual MelResNet"),
    ("deepspeech", _ta("DeepSpeech", lambda: _t(2, 1, 50, 32), n_feature=32, n_hidden=64, n_class=10),
     "DeepSpeech: FC layers, bidirectional RNN"),
    ("wav2letter", _ta("Wav2Letter", lambda: _t(2, 13, 100), num_classes=10, input_type="mfcc", num_features=13),
     "Wav2Letter: 1-D conv stack (its own widths)"),
    ("tacotron2", _ta("Tacotron2", lambda: (__import__("torch").randint(1, 20, (2, 12)), _lengths(12, 10),
                                            _t(2, 16, 20), _lengths(20, 18)),
                      n_mels=16, n_symbol=20, symbol_embedding_dim=32, encoder_embedding_dim=32,
                      encoder_n_convolution=1, decoder_rnn_dim=32, attention_rnn_dim=32, attention_hidden_dim=32,
                      attention_location_n_filter=4, prenet_dim=16, postnet_n_convolution=2,
                      postnet_embedding_dim=16),
     "Tacotron2 teacher-forced: location-sensitive attention, LSTM cells step by step"),
    ("squim_objective", _ta("squim_objective_model", lambda: _t(2, 4000), feat_dim=32, win_len=64, d_model=32,
                            nhead=4, hidden_dim=32, num_blocks=1, rnn_type="LSTM", chunk_size=16, chunk_stride=8),
     "SQUIM objective: dual-path transformer on chunks, STOI/PESQ/SI-SDR heads"),
]
for _name, _build, _note in _TORCHAUDIO:
    _add("torchaudio", _name, _build, _note)


# --------------------------------------------------------------------------- x_transformers


def _xt(stack: str, seq: int = SEQ, **layers: Any) -> Builder:
    def build() -> tuple[Any, Any]:
        import x_transformers as xt

        attn = getattr(xt, stack)(dim=32, depth=2, heads=4, **layers)
        return xt.TransformerWrapper(num_tokens=VOCAB, max_seq_len=32, attn_layers=attn), _ids(seq)

    return build


def _xt_vit() -> tuple[Any, Any]:
    import x_transformers as xt

    return xt.ViTransformerWrapper(image_size=32, patch_size=8, num_classes=10,
                                   attn_layers=xt.Encoder(dim=32, depth=2, heads=4)), _img(32)


def _xt_encdec() -> tuple[Any, Any]:
    import x_transformers as xt

    model = xt.XTransformer(dim=32, enc_num_tokens=VOCAB, enc_depth=2, enc_heads=4, enc_max_seq_len=32,
                            dec_num_tokens=VOCAB, dec_depth=2, dec_heads=4, dec_max_seq_len=32)
    return model, (_ids(), _ids(9))


def _xt_continuous() -> tuple[Any, Any]:
    import x_transformers as xt

    model = xt.ContinuousTransformerWrapper(dim_in=16, dim_out=16, max_seq_len=32,
                                            attn_layers=xt.Encoder(dim=32, depth=2, heads=4))
    return model, _t(2, SEQ, 16)


_XT: list[tuple[str, Builder, str]] = [
    ("decoder", _xt("Decoder"), "causal decoder, absolute positions, einops rearranges"),
    ("encoder", _xt("Encoder"), "bidirectional encoder"),
    ("decoder_rotary", _xt("Decoder", rotary_pos_emb=True), "rotary position embedding"),
    ("decoder_alibi", _xt("Decoder", alibi_pos_bias=True), "ALiBi bias"),
    ("decoder_rel_pos_bias", _xt("Decoder", rel_pos_bias=True), "T5 relative position buckets"),
    ("decoder_dynamic_pos_bias", _xt("Decoder", dynamic_pos_bias=True), "MLP-generated position bias"),
    ("decoder_ff_glu", _xt("Decoder", ff_glu=True), "GLU feed-forward"),
    ("encoder_macaron", _xt("Encoder", macaron=True), "macaron: half-step FFN before and after attention"),
    ("decoder_sandwich_norm", _xt("Decoder", sandwich_norm=True), "sandwich norm"),
    ("decoder_residual_attn", _xt("Decoder", residual_attn=True), "residual attention (pre-softmax scores carried)"),
    ("decoder_gqa_qk_norm", _xt("Decoder", attn_kv_heads=2, attn_qk_norm=True), "grouped KV heads, qk norm"),
    ("vit", _xt_vit, "ViTransformerWrapper: patch rearrange, 2-layer encoder; 32px"),
    ("xtransformer_encdec", _xt_encdec, "XTransformer enc-dec with AutoregressiveWrapper: returns the loss"),
    ("continuous", _xt_continuous, "ContinuousTransformerWrapper on (2, 16, 16) features"),
]
for _name, _build, _note in _XT:
    _add("x_transformers", _name, _build, _note)


#: the fast subset: small, quick models, at least one per library
QUICK = ("timm/beit_base_patch16_224", "timm/hiera_tiny_224", "torchvision/shufflenet_v2_x0_5",
         "torchvision/vit_small_config", "transformers/bert", "transformers/swin",
         "diffusers/pixart", "monai/vit_3d", "smp/segformer_mit_b0", "pyg/gcn", "torchaudio/wav2vec2",
         "x_transformers/encoder")
