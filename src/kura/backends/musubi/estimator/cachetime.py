"""How long Musubi's caching steps take: latent caching and text-encoder output caching.

Both are derived, not measured (no calibration point times a caching script), so each
carries the wide band :data:`CACHE_TIME_BAND`. What is assumed is marked [assumed]; what is
read from Musubi's code names the file.

**Latent caching** (``*_cache_latents.py``, :func:`latent_cache_seconds`): the process
starts (:data:`PROCESS_START_S`), loads the VAE (and FramePack's SigLIP / Wan 2.1 I2V's CLIP
image encoder, :data:`IMAGE_ENCODERS`) from disk at :data:`DISK_READ_GBS`, then encodes
every item once (``cache_latents.py`` ``encode_datasets``: repeats are not encoded again)
at its bucket size. Per item: VAE encode FLOPs = :data:`VAE_ENCODE_FLOPS_PER_PIXEL` x
pixels x frames over :data:`CONV_UTILISATION` of the card's dense bf16 peak (the same
conventions as :func:`kura.backends.musubi.estimator.steps.vae_decode_seconds`); spatial
tiling (``--vae_tiling``, HunyuanVideo's VAE) re-encodes the tiles' overlap
(``tile_overlap_factor = 0.25`` in ``hunyuan_model/autoencoder_kl_causal_3d.py``: tiles step
by 0.75 of their side, x1/0.75² the FLOPs); ``--vae_chunk_size`` bounds memory, not work.
The media are read and resized by ``num_workers`` loader threads
(``encode_datasets``: cpu_count - 1 by default) while the GPU encodes; only the part of
:data:`MEDIA_SECONDS_PER_MPIX_FRAME` / :data:`LOADER_WORKERS` beyond the encode is exposed,
plus :data:`ITEM_OVERHEAD_S` per item (the cache file's write).
HiDream-O1 caches pixels (``hidream_o1_cache_pixel.py``): no VAE, media only.

**Text-encoder caching** (``*_cache_text_encoder_outputs.py``,
:func:`text_encoder_cache_seconds`): the process starts, loads the encoder's file from disk
(bf16 unless the file itself is fp8: ``--fp8_*`` casts after loading, so it reads the same
bytes), then runs one forward per caption (one caption per media file, however many clips a video
makes; batch 1, so an upper bound where the dataset batches): ``2 x parameters x tokens``
FLOPs with every
caption padded to the architecture's longest text (HunyuanVideo's ``text_encoder.py``
tokenizes with ``padding="max_length"``; Wan's T5 tokenizer pads to ``text_len``; for
encoders that pad to the batch's longest this is an upper bound) at the utilisation
:func:`kura.sizing.steptime.mfu` gives that many tokens. fp8 storage
dequantises per layer: the same FLOPs [assumed].
"""

from __future__ import annotations

from dataclasses import dataclass

from kura.backends.musubi.estimator.config import Bucket
from kura.backends.musubi.estimator.steps import Encoder
from kura.planning.gpus import GpuClass
from kura.sizing.steptime import mfu

__all__ = [
    "CACHE_TIME_BAND",
    "CONV_UTILISATION",
    "DISK_READ_GBS",
    "IMAGE_ENCODERS",
    "ITEM_OVERHEAD_S",
    "CacheTime",
    "ImageEncoder",
    "latent_cache_seconds",
    "text_encoder_cache_seconds",
]

CACHE_TIME_BAND = 0.6
"""± band of a caching step's time: derived from FLOPs and assumed disk and loader speeds,
never measured, so twice the training step time's ±30 %."""
DISK_READ_GBS = 1.0
"""[assumed] GB/s reading a weights file (local NVMe reads 2-3, a cloud network volume
0.2-0.5; a file already in the page cache is faster): sets the load time of large encoders."""
PROCESS_START_S = 20.0
"""[assumed] Python, torch and CUDA start, argument parsing and the dataset scan."""
VAE_ENCODE_FLOPS_PER_PIXEL = {"image": 4e6, "video": 12e6}
"""[mine] An 8x VAE encoder (FLUX/SD layout, ``flux/flux_models.py`` AutoEncoder ch 128,
ch_mult 1,2,4,4, num_res_blocks 2): 3x3 convs at 128/256/512/512 channels from full to 1/8
resolution, ~2 M multiply-adds per input pixel, 4 MFLOP; causal 3D encoders (HunyuanVideo
block_out_channels 128..512, layers_per_block 2) use 3x3x3 kernels, ~3x per pixel-frame.
Wan's VAE is narrower (``wan/modules/vae.py`` dim 96): an overestimate inside the band."""
CONV_UTILISATION = 0.3
"""[assumed] Convolution throughput as a fraction of the card's dense bf16 peak (as
:data:`kura.backends.musubi.estimator.steps.VAE_DECODE_UTILISATION`)."""
TILE_OVERLAP_FACTOR = 0.25
"""``tile_overlap_factor`` of HunyuanVideo's VAE (``autoencoder_kl_causal_3d.py``)."""
MEDIA_SECONDS_PER_MPIX_FRAME = 0.05
"""[assumed] CPU seconds to decode and resize one megapixel frame (PIL / PyAV)."""
ITEM_OVERHEAD_S = 0.05
"""[assumed] Per item: the tensor's move to the GPU and back, and the safetensors write."""
LOADER_WORKERS = 4
"""[assumed] Loader threads that overlap the encode (Musubi: cpu_count - 1; a small
cloud host has a few cores)."""
BYTES_BF16 = 2


@dataclass(frozen=True)
class ImageEncoder:
    """An image encoder the latent-caching script runs on every item beside the VAE."""

    title: str
    params_b: float
    tokens: int
    source: str


IMAGE_ENCODERS: dict[str, ImageEncoder] = {
    "framepack": ImageEncoder(
        "SigLIP so400m",
        0.43,
        729,
        "fpack_cache_latents.py: hf_clip_vision_encode on each item's first frame",
    ),
    "wan2.1-i2v-14b": ImageEncoder(
        "CLIP ViT-H/14 (vision)",
        0.63,
        257,
        "wan_cache_latents.py: CLIPModel visual on each item's first frame for I2V",
    ),
}


@dataclass(frozen=True)
class CacheTime:
    """Seconds of one caching step and its parts, with the band and what it rests on."""

    seconds: float
    start_s: float
    load_s: float
    work_s: float
    items: int
    band: float
    notes: tuple[str, ...]


def _load_seconds(params_b: float, bytes_per_param: float) -> float:
    return params_b * 1e9 * bytes_per_param / (DISK_READ_GBS * 1e9)


def _encode_flops(bucket: Bucket, encoder: Encoder, *, tiling: bool) -> float:
    if encoder.vae_params_b <= 0:
        return 0.0
    kind = "video" if bucket.frames > 1 else "image"
    flops = VAE_ENCODE_FLOPS_PER_PIXEL[kind] * bucket.width * bucket.height * bucket.frames
    return flops / (1 - TILE_OVERLAP_FACTOR) ** 2 if tiling else flops


def latent_cache_seconds(
    encoder: Encoder,
    items: tuple[Bucket, ...],
    gpu: GpuClass,
    *,
    tiling: bool = False,
    image_encoder: ImageEncoder | None = None,
) -> CacheTime:
    """Seconds of latent caching ``items`` (buckets whose counts are items to encode, each
    once) on ``gpu``."""
    rate = gpu.bf16_tflops * 1e12
    load = _load_seconds(encoder.vae_params_b, BYTES_BF16)
    work = 0.0
    count = 0
    for bucket in items:
        encode = _encode_flops(bucket, encoder, tiling=tiling) / (rate * CONV_UTILISATION)
        if image_encoder is not None:
            tokens = image_encoder.tokens
            encode += 2 * image_encoder.params_b * 1e9 * tokens / (rate * mfu(tokens))
        media = MEDIA_SECONDS_PER_MPIX_FRAME * bucket.width * bucket.height * bucket.frames / 1e6
        exposed = max(0.0, media / LOADER_WORKERS - encode)
        work += bucket.count * (encode + exposed + ITEM_OVERHEAD_S)
        count += bucket.count
    notes = [
        f"{count} item(s) encoded once each; "
        + (
            "no VAE (pixel-space model): media loading only"
            if encoder.vae_params_b <= 0
            else f"VAE encode at {CONV_UTILISATION:.0%} of {gpu.bf16_tflops:.0f} bf16 TFLOP/s"
            + (", spatially tiled (x1.78 overlap)" if tiling else "")
        )
    ]
    if image_encoder is not None:
        load += _load_seconds(image_encoder.params_b, BYTES_BF16)
        notes.append(f"{image_encoder.title} per item ({image_encoder.source})")
    notes.append(
        f"{PROCESS_START_S:.0f} s start + {load:.0f} s loading at {DISK_READ_GBS:g} GB/s "
        f"[assumed] + {work:.0f} s encoding"
    )
    return CacheTime(
        seconds=PROCESS_START_S + load + work,
        start_s=PROCESS_START_S,
        load_s=load,
        work_s=work,
        items=count,
        band=CACHE_TIME_BAND,
        notes=tuple(notes),
    )


def text_encoder_cache_seconds(
    encoder: Encoder, captions: int, tokens: int, gpu: GpuClass, *, fp8: bool = False
) -> CacheTime:
    """Seconds of caching ``captions`` text-encoder outputs of ``tokens`` each on ``gpu``
    (``fp8``: the encoder stored in fp8 after loading; the same bytes read, the same FLOPs)."""
    file_bytes = 1 if encoder.shipped_fp8 else BYTES_BF16
    load = _load_seconds(encoder.params_b, file_bytes)
    per_caption = 2 * encoder.params_b * 1e9 * tokens / (gpu.bf16_tflops * 1e12 * mfu(tokens))
    work = captions * per_caption
    notes = (
        f"{captions} caption(s) x {tokens} tokens (padded to the longest text) through "
        f"{encoder.title} ({encoder.params_b:g} B parameters"
        + (", fp8 storage: same FLOPs [assumed]" if fp8 and not encoder.shipped_fp8 else "")
        + ")",
        f"{PROCESS_START_S:.0f} s start + {load:.0f} s loading "
        f"{encoder.params_b * file_bytes:.1f} GB at {DISK_READ_GBS:g} GB/s [assumed] + "
        f"{work:.0f} s encoding",
    )
    return CacheTime(
        seconds=PROCESS_START_S + load + work,
        start_s=PROCESS_START_S,
        load_s=load,
        work_s=work,
        items=captions,
        band=CACHE_TIME_BAND,
        notes=notes,
    )
