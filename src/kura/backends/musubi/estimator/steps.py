"""The cost of the steps around training: latent caching, text-encoder caching, sampling.

Training is sized by :mod:`.estimate`; this module sizes the other steps a Musubi run takes,
each with its own memory aids, so the plan's verdict is the worst step's (DESIGN invariant 9).

- **Text-encoder caching** holds the whole encoder on the GPU (``*_cache_text_encoder_outputs.py``
  move it to ``args.device``) in bf16, or in fp8 with the adapter's key (``fp8_llm``,
  ``fp8_vl``, ``fp8_t5``, ``fp8_text_encoder``, ``fp8_te``). FLUX.2 dev's Mistral 3 has no fp8
  path: ``flux_2/flux2_utils.py`` raises ``NotImplementedError(f"Mistral 3 {dtype}")``.
  Peak = weights + :data:`TE_WORKING_GIB` (one caption batch, [assumed]).
- **Latent caching** holds the VAE and encodes one item at a time (batch 1 in the caching
  scripts' defaults). Peak = VAE weights + activations per megapixel-frame
  (:data:`VAE_GIB_PER_MPIX`, [assumed] from the causal 3D VAEs' channel widths); HunyuanVideo's
  VAE (HunyuanVideo, FramePack) takes ``--vae_chunk_size`` (bounds the temporal working set to
  :data:`VAE_CHUNK_FRAMES` frames) and ``--vae_tiling`` (spatial tiles of
  :data:`VAE_TILE_PIXELS`).
- **Sampling** during training keeps the DiT resident and renders each prompt at the size
  the prompt line asks for, else the sampler's default (256x256 for most architectures,
  :mod:`.sampling`): the training step's resident weights, one block's forward working set
  at the sample's tokens, and the VAE decode of one sample (temporal chunks of
  :data:`VAE_CHUNK_FRAMES`, [assumed]). The sample prompts' text encoding happens once
  before training with the encoder alone, as in text-encoder caching. Its time: see
  :func:`vae_decode_seconds` and :mod:`.sampling`.

The caching steps' time: :mod:`.cachetime`.

Every number here is an estimate with a stated band (:data:`STEP_BAND`), not a measurement.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "ENCODERS",
    "STEP_BAND",
    "TE_WORKING_GIB",
    "Encoder",
    "latent_cache_gib",
    "sample_gib",
    "text_encoder_gib",
    "vae_decode_seconds",
]

GIB = 1024**3
STEP_BAND = 0.15
"""± band of the caching and sampling estimates (they are [assumed], not calibrated)."""
TE_WORKING_GIB = 1.5
"""Activations of one caption batch plus the CUDA context, [assumed]."""
VAE_GIB_PER_MPIX = {"image": 1.0, "video": 0.4}
"""Encoder activation GiB per megapixel-frame at bf16, [assumed]."""
VAE_CHUNK_FRAMES = 32
"""``--vae_chunk_size 32`` as musubi.md §1.2/§1.4 and the docs give it."""
VAE_TILE_PIXELS = 256 * 256
"""``--vae_spatial_tile_sample_min_size`` default (256) squared."""


@dataclass(frozen=True)
class Encoder:
    """The text encoder(s) one model's caching step loads, and the VAE it encodes with."""

    title: str
    params_b: float
    vae_params_b: float
    source: str
    fp8_refused: str | None = None
    """Why the encoder cannot be loaded in fp8 (None: the adapter's fp8 key works)."""
    shipped_fp8: bool = False
    """The encoder file is already fp8 (1 byte per parameter with no flag)."""


_LLAVA = Encoder(
    "LLaVA-Llama-3 8B + CLIP-L", 8.15, 0.25, "musubi.md §1.2 (llava_llama3_fp16 + clip_l)"
)
_QWEN25VL = "Qwen2.5-VL 7B"
ENCODERS: dict[str, Encoder] = {
    "hunyuan-video": _LLAVA,
    "framepack": _LLAVA,
    "hunyuan-video-1.5": Encoder(
        f"{_QWEN25VL} + byT5", 8.6, 0.25, "vram.md §1 table (Qwen2.5-VL + byT5)"
    ),
    "wan2.1-t2v-14b": Encoder("umT5-XXL encoder", 5.7, 0.13, "musubi.md §1.3 (umt5-xxl-enc)"),
    "wan2.1-i2v-14b": Encoder("umT5-XXL encoder", 5.7, 0.13, "musubi.md §1.3 (umt5-xxl-enc)"),
    "wan2.1-1.3b": Encoder("umT5-XXL encoder", 5.7, 0.13, "musubi.md §1.3 (umt5-xxl-enc)"),
    "wan2.2-a14b": Encoder("umT5-XXL encoder", 5.7, 0.13, "musubi.md §1.3 (umt5-xxl-enc)"),
    "wan2.2-a14b-single": Encoder("umT5-XXL encoder", 5.7, 0.13, "musubi.md §1.3"),
    "wan2.2-ti2v-5b": Encoder("umT5-XXL encoder", 5.7, 0.7, "musubi.md §1.3 (Wan 2.2 VAE)"),
    "flux1-kontext-dev": Encoder("T5-XXL + CLIP-L", 4.9, 0.08, "musubi.md §1.5"),
    "flux2-dev": Encoder(
        "Mistral Small 3.1 24B",
        24.0,
        0.08,
        "musubi.md §1.6; flux_2/flux2_utils.py Mistral3Embedder",
        fp8_refused="flux_2/flux2_utils.py raises NotImplementedError for Mistral 3 in fp8",
    ),
    "flux2-klein-9b": Encoder("Qwen3-8B", 8.19, 0.08, "musubi.md §1.6 (Qwen3-8B shards)"),
    "flux2-klein-4b": Encoder("Qwen3-4B", 4.02, 0.08, "musubi.md §1.6 (Qwen3-4B shards)"),
    "qwen-image": Encoder(_QWEN25VL, 8.29, 0.13, "musubi.md §1.7 (qwen_2.5_vl_7b)"),
    "qwen-image-2025-08": Encoder(_QWEN25VL, 8.29, 0.13, "musubi.md §1.7 (qwen_2.5_vl_7b)"),
    "zimage": Encoder("Qwen3-4B", 4.02, 0.08, "musubi.md §1.8"),
    "kandinsky5-lite-video": Encoder(f"{_QWEN25VL} + CLIP-L", 8.41, 0.25, "musubi.md §1.10"),
    "kandinsky5-lite-image": Encoder(f"{_QWEN25VL} + CLIP-L", 8.41, 0.08, "musubi.md §1.10"),
    "kandinsky5-pro-video": Encoder(f"{_QWEN25VL} + CLIP-L", 8.41, 0.25, "musubi.md §1.10"),
    "krea2": Encoder("Qwen3-VL 4B", 4.44, 0.13, "musubi.md §1.13 (qwen3vl_4b_bf16)"),
    "ideogram4": Encoder(
        "Qwen3-VL 8B (fp8 scaled as shipped)",
        8.77,
        0.08,
        "musubi.md §1.12 (qwen3vl_8b_fp8_scaled)",
        shipped_fp8=True,
    ),
    "hidream-o1": Encoder("Qwen3-VL 8B", 8.77, 0.0, "musubi.md §1.11 (pixel space: no VAE)"),
}


def text_encoder_gib(encoder: Encoder, fp8: bool) -> float:
    """Peak GiB of text-encoder caching with the encoder resident in bf16 (or fp8)."""
    width = 1 if (fp8 or encoder.shipped_fp8) else 2
    return encoder.params_b * 1e9 * width / GIB + TE_WORKING_GIB


def latent_cache_gib(
    encoder: Encoder,
    width: int,
    height: int,
    frames: int,
    *,
    chunk: bool,
    tiling: bool,
    items: int = 1,
) -> float:
    """Peak GiB of latent caching ``items`` items of ``width x height x frames`` in one
    VAE call (a batch of one bucket: every tile and chunk holds the whole batch)."""
    kind = "video" if frames > 1 else "image"
    pixels = VAE_TILE_PIXELS if tiling else width * height
    depth = min(frames, VAE_CHUNK_FRAMES) if chunk else frames
    working = VAE_GIB_PER_MPIX[kind] * pixels * depth * items / 1e6
    return encoder.vae_params_b * 1e9 * 2 / GIB + working + 0.5


def sample_gib(
    encoder: Encoder,
    resident_gib: float,
    width: int,
    height: int,
    frames: int,
    forward_gib: float = 0.0,
) -> float:
    """Peak GiB of sampling during training: the resident DiT, the larger of its forward
    working set (``forward_gib``) and one VAE decode (the DiT's activations are freed before
    the decode)."""
    depth = min(frames, VAE_CHUNK_FRAMES)
    decode = VAE_GIB_PER_MPIX["video" if frames > 1 else "image"] * width * height * depth / 1e6
    return resident_gib + max(forward_gib, encoder.vae_params_b * 1e9 * 2 / GIB + decode)


VAE_DECODE_FLOPS_PER_PIXEL = {"image": 7e6, "video": 21e6}
"""[mine] An 8x VAE decoder (FLUX/SD layout: 3x3 convs, 3 ResNet blocks of 2 convs per level
at 128/256/512/512 channels from full to 1/8 resolution) costs ~3.5 M multiply-adds per
output pixel, 7 MFLOP; causal 3D decoders use 3x3x3 kernels, ~3x per pixel-frame."""
VAE_DECODE_UTILISATION = 0.3
"""[assumed] Convolution throughput as a fraction of the card's dense bf16 peak."""


def vae_decode_seconds(width: int, height: int, frames: int, bf16_tflops: float) -> float:
    """Seconds of one VAE decode of ``width x height x frames`` (an estimate, [mine])."""
    kind = "video" if frames > 1 else "image"
    flops = VAE_DECODE_FLOPS_PER_PIXEL[kind] * width * height * frames
    return flops / (bf16_tflops * 1e12 * VAE_DECODE_UTILISATION)
