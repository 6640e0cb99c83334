"""AI-Toolkit's step time: the trainer-neutral FLOPs model (:mod:`kura.sizing.steptime`)
plus what AI-Toolkit's options add.

* Quantized weights (qfloat8, uintN) are dequantized per use: twice per step with
  checkpointing (forward and recompute), once without (vram.md §4.7's fp8 rule).
* Layer offloading streams the offloaded share of the Linear weights from host RAM in every
  forward and backward ([code] toolkit/memory_management/manager.py): twice per step, three
  times with checkpointing, over PCIe, on a transfer stream four layers ahead
  (manager_modules.py:23-27, :47-48): only what exceeds the compute is exposed.
* Sampling: ``sample_steps`` forward passes per image, two per step for classifier-free
  guidance [assumed: the pipelines run the negative prompt as a second pass].
"""

from __future__ import annotations

from dataclasses import dataclass

from kura.backends.aitoolkit.estimator.components import qtype_bytes
from kura.backends.aitoolkit.estimator.setup import AitkSetup, Bucket, tokens_of
from kura.planning.gpus import GpuClass
from kura.sizing.steptime import (
    FORWARD,
    TRAIN_CHECKPOINTED,
    TRAIN_PLAIN,
    compute_seconds,
    dequant_seconds,
    dit_flops,
    linear_params,
    mfu,
)

__all__ = [
    "CACHE_TIME_BAND",
    "TIME_BAND",
    "TrainStepTime",
    "cache_latents_seconds",
    "cache_text_seconds",
    "image_sample_seconds",
    "load_seconds",
    "train_step_time",
]

TIME_BAND = 0.5
"""± fraction of a step time from FLOPs alone: no AI-Toolkit run calibrates it yet (past runs
recalibrate the plan, ``kura.runs.history.step_time_factor``)."""


CACHE_TIME_BAND = 0.75
"""± fraction of the loading and caching times: disk speed and the VAEs' FLOPs are assumed."""

DISK_GBS = 1.0
"""Weights read from a local disk through safetensors, GB/s [assumed: an NVMe SSD, page cache
cold]."""

VAE_ENCODE_FLOPS_PER_PIXEL = 2.5e6
"""A latent-diffusion VAE encoder's FLOPs per input pixel [assumed: about half the ~5 MFLOP
per pixel of its decoder]."""

CAPTION_TOKENS = 512
"""Tokens one caption is padded to when encoded [assumed: the T5/UMT5 and Qwen pipelines'
maximum sequence length]."""


def load_seconds(dit_bytes: float, text_encoder_bytes: float) -> float:
    """Reading the DiT and the text encoder in bf16 from disk (quantizing is GPU work of
    seconds, not counted)."""
    return (dit_bytes + text_encoder_bytes) / (DISK_GBS * 1e9)


def cache_latents_seconds(items: int, bucket: Bucket, gpu: GpuClass, video: bool) -> float:
    frames = bucket.frames if video else 1
    pixels = bucket.width * bucket.height * frames
    flops = VAE_ENCODE_FLOPS_PER_PIXEL * pixels
    return items * compute_seconds(flops, pixels / 256, gpu)


def cache_text_seconds(items: int, text_encoder_params_b: float, gpu: GpuClass) -> float:
    flops = 2 * text_encoder_params_b * 1e9 * CAPTION_TOKENS
    return items * compute_seconds(flops, CAPTION_TOKENS, gpu)


@dataclass(frozen=True)
class TrainStepTime:
    """Seconds of one optimizer step (``micro_steps`` micro-batches) and its parts."""

    flops: float
    mfu: float
    compute_s: float
    dequant_s: float
    exposed_transfer_s: float
    micro_steps: int

    @property
    def step_s(self) -> float:
        return self.micro_steps * (self.compute_s + self.dequant_s + self.exposed_transfer_s)


def _lora_params(setup: AitkSetup) -> float:
    return setup.rank * setup.shape.lora_params_per_rank


def train_step_time(
    setup: AitkSetup, bucket: Bucket, gpu: GpuClass, accumulation: int
) -> TrainStepTime:
    tokens = tokens_of(setup.shape, bucket, setup.control)
    checkpointed = setup.knobs.gradient_checkpointing
    multipliers = TRAIN_CHECKPOINTED if checkpointed else TRAIN_PLAIN
    batch = setup.knobs.batch_size
    flops = dit_flops(
        setup.shape, tokens.seen_by, tokens.text, _lora_params(setup), multipliers, batch
    )
    compute = compute_seconds(flops, batch * tokens.sequence, gpu)
    uses = 2 if checkpointed else 1
    dequant = dequant_seconds(setup.shape, gpu, uses) if setup.quantized_transformer else 0.0
    share = setup.knobs.layer_offloading_transformer_percent
    per = qtype_bytes(setup.knobs.qtype) if setup.quantized_transformer else 2.0
    moved = share * linear_params(setup.shape) * per * (uses + 1)
    transfer = moved / (gpu.pcie_gbs * 1e9) if share else 0.0
    return TrainStepTime(
        flops=flops,
        mfu=mfu(batch * tokens.sequence),
        compute_s=compute,
        dequant_s=dequant,
        exposed_transfer_s=max(0.0, transfer - compute),
        micro_steps=accumulation,
    )


def image_sample_seconds(setup: AitkSetup, bucket: Bucket, gpu: GpuClass) -> float:
    """Seconds to sample one image (or clip) at ``bucket``."""
    tokens = tokens_of(setup.shape, bucket, setup.control)
    flops = dit_flops(setup.shape, tokens.seen_by, tokens.text, _lora_params(setup), FORWARD, 1)
    per_pass = compute_seconds(flops, tokens.sequence, gpu)
    if setup.quantized_transformer:
        per_pass += dequant_seconds(setup.shape, gpu, 1)
    share = setup.knobs.layer_offloading_transformer_percent
    if share:
        per = qtype_bytes(setup.knobs.qtype) if setup.quantized_transformer else 2.0
        moved = share * linear_params(setup.shape) * per / (gpu.pcie_gbs * 1e9)
        per_pass += max(0.0, moved - per_pass)
    return 2 * setup.sample_steps * per_pass
