"""Device memory of every step AI-Toolkit runs, in GiB, term by term with its source.

Steps, in the order ``BaseSDTrainProcess.run`` takes them:

* **load**: the DiT loads on the CPU and, when quantized without an adapter, is quantized
  block by block on the GPU and moved back ([code] toolkit/util/quantize.py:448-465); the text
  encoder goes to the GPU in full precision and is quantized there
  (qwen_image/qwen_image.py:170-175); then the DiT moves to the GPU unless ``low_vram``
  parks it on the CPU until its first use (qwen_image.py:141-143, :219-220).
* **cache-latents**: the VAE encodes every bucket once (Kura always writes
  ``cache_latents_to_disk``) with the loaded parts resident.
* **cache-text** (``cache_text_embeddings``): the DiT goes to the CPU, the captions are
  encoded, then the encoder is unloaded (SDTrainer.py:296-298, :351-378).
* **train**, per bucket: the DiT at its qtype (the share ``layer_offloading_transformer_percent``
  picks stays in host RAM, [code] toolkit/memory_management/manager.py:109-111), an
  accuracy-recovery adapter at the model dtype (quantize.py:392-394), the LoRA and its
  gradients in fp32 (jobs/process/BaseSDTrainProcess.py:1983) with the optimizer state
  (``kura.sizing.optimizers``), the activations (vram.md §4.1), the text encoder when it stays;
  the VAE is on the CPU once the latents are cached (SDTrainer.py:312-319).
  Wan 2.2 A14B holds both experts, the idle one on the CPU under ``low_vram``
  (wan22/wan22_14b_model.py:131-146).
* **sample**: the pipeline at the sample size: DiT, LoRA, VAE decode (tiled under
  ``low_vram``, qwen_image.py:291-293); the baseline sample before step 0 unless
  ``skip_first_sample`` (BaseSDTrainProcess.py:2472-2477) has the same peak.

Every step adds the CUDA context and the allocator's slack (vram.md §4.6).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kura.backends.aitoolkit.estimator.components import (
    ARA_RANK,
    Components,
    components_for,
    qtype_bytes,
)
from kura.backends.aitoolkit.estimator.setup import AitkSetup, Bucket, Tokens, tokens_of
from kura.sizing.optimizers import state_bytes_per_param
from kura.sizing.shapes import GIB, MIB
from kura.sizing.steptime import linear_params

__all__ = [
    "ACTIVATION_FACTOR",
    "CTX_GIB",
    "StepMemory",
    "dit_bf16_gib",
    "grouped",
    "host_ram_gib",
    "step_memories",
]

CTX_GIB = 0.6
"""CUDA context, cuBLAS workspace (vram.md §4.6, Linux headless)."""

SLACK = 0.05
"""Allocator fragmentation over the allocated peak (vram.md §4.6: 3-10 %)."""

ALPHA = 1.3
"""Gradients of one recomputed block's intermediates in flight (vram.md §4.1)."""

ACTIVATION_FACTOR = 1.0
"""AI-Toolkit's diffusers DiTs against the Musubi-measured per-token coefficients
(``c_arch``, vram.md §1.3). Checked against the published examples
(:mod:`.calibration`): 1.0 keeps every example within its card; no point measures it."""

VAE_ENCODE_BYTES_PER_PIXEL = 1200.0
"""Working set of a VAE encode per input pixel (per frame chunk for video VAEs) [assumed:
~1.1 GiB at 1 MP, the size of the first full-resolution conv stack in bf16]."""

VAE_DECODE_BYTES_PER_PIXEL = 2400.0
"""Working set of a VAE decode per output pixel [assumed: decoders run wider than encoders]."""

TILE_PIXELS = 512 * 512
"""A tiled VAE decode's tile (diffusers' ``enable_tiling`` default sample size) [ext]."""

LARGEST_LINEAR_SHARE = 0.25
"""A block's largest Linear against all its Linear weights [mine: FLUX.1's double block holds
img_mod 3072 x 18432 of ~170 M parameters per stream, Qwen-Image's and Wan's MLP up-projections
a fifth to a third of theirs]."""

OFFLOAD_PIPELINE_DEPTH = 4
"""Layers the offload manager prefetches (``AI_TOOLKIT_OFFLOAD_DEPTH``, default 4,
[code] toolkit/memory_management/manager_modules.py:27)."""

HOST_PROCESS_GIB = 2.0
"""The Python process with torch, CUDA and the dataloader, before any weight [assumed]."""

INFERENCE_SHARE = 0.25
"""Of the bytes per token one block saves for backward (``c_arch``), the share alive in a
forward without autograd [assumed: the attention input, output and the MLP's hidden]."""

TEXT_ENCODE_GIB = 0.5
"""Working set of encoding one caption without autograd [assumed: one layer's activations
of a 512-token prompt plus the KV of a 7-24 B encoder stay well under 0.5 GiB]."""

VIDEO_VAE_CHUNK_FRAMES = 4
"""Wan's causal VAE encodes and decodes four frames at a time [ext] (Wan VAE)."""


@dataclass(frozen=True)
class StepMemory:
    """One step's device peak and its terms (GiB)."""

    step: str
    kind: str
    peak_gib: float
    terms: dict[str, float] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


def _gib(nbytes: float) -> float:
    return nbytes / GIB


def _bf16_gib(params_b: float) -> float:
    return _gib(params_b * 1e9 * 2)


def _dit_linear_params(setup: AitkSetup) -> float:
    return linear_params(setup.shape)


def _dit_rest_gib(setup: AitkSetup) -> float:
    """The DiT's weights outside its blocks' Linear layers (embedders, norms), bf16."""
    total = setup.shape.weights_gib.get("none")
    linear = _gib(_dit_linear_params(setup) * 2)
    if total is None:  # a model published only in fp8 (Ideogram 4): bf16 is twice that
        total = 2 * next(iter(setup.shape.weights_gib.values()))
    return max(0.0, total - linear)


def _linear_bytes_per_param(setup: AitkSetup) -> float:
    return qtype_bytes(setup.knobs.qtype) if setup.quantized_transformer else 2.0


def dit_device_gib(setup: AitkSetup) -> float:
    """One DiT (one expert) on the GPU through training: Linear weights at the qtype less the
    offloaded share, the rest bf16 (8-bit when quantized: quantize.py:421-427, :474)."""
    kept = 1.0 - setup.knobs.layer_offloading_transformer_percent
    linear = _gib(_dit_linear_params(setup) * _linear_bytes_per_param(setup)) * kept
    rest = _dit_rest_gib(setup) / (2 if setup.quantized_transformer else 1)
    return linear + rest


def _offload_buffer_gib(setup: AitkSetup) -> float:
    """Streamed layers are staged ``PIPELINE_DEPTH`` Linear layers ahead, dequantized to the
    compute dtype on the GPU ([code] toolkit/memory_management/manager_modules.py:23-27,
    :289-300)."""
    if not setup.knobs.layer_offloading_transformer_percent:
        return 0.0
    largest = max(group.lin_mib_bf16 for group in setup.shape.groups) * MIB / GIB
    return OFFLOAD_PIPELINE_DEPTH * largest * LARGEST_LINEAR_SHARE


def _ara_gib(setup: AitkSetup) -> float:
    if not setup.knobs.accuracy_recovery_adapter:
        return 0.0
    return _gib(ARA_RANK * setup.shape.lora_params_per_rank * 2)


def _dequant_gib(setup: AitkSetup) -> float:
    """A quantized Linear dequantizes its weight for the matmul, one Linear at a time ([ext]
    optimum-quanto and torchao save the quantized weight for backward, not the bf16 copy)."""
    if not setup.quantized_transformer:
        return 0.0
    largest = max(group.lin_mib_bf16 for group in setup.shape.groups) * MIB / GIB
    return largest * LARGEST_LINEAR_SHARE


def _experts(setup: AitkSetup) -> float:
    """DiTs resident: Wan 2.2 A14B's idle expert moves to the CPU only under low_vram."""
    return 2.0 if setup.two_experts and not setup.knobs.low_vram else 1.0


def text_encoder_gib(setup: AitkSetup, parts: Components) -> float:
    """The text encoder at its final precision, less its offloaded share."""
    quantized = setup.knobs.quantize_te and parts.quantizes_model
    per = qtype_bytes(setup.knobs.qtype_te) if quantized else 2.0
    kept = 1.0 - setup.knobs.layer_offloading_text_encoder_percent
    return _gib(parts.text_encoder_params_b * 1e9 * per) * kept


def _lora_state_gib(setup: AitkSetup) -> float:
    params = setup.rank * setup.shape.lora_params_per_rank
    per_param = 4 + 4 + state_bytes_per_param(setup.optimizer, setup.rank)
    return _gib(params * per_param)


def activations_gib(setup: AitkSetup, tokens: Tokens) -> float:
    """Saved activations of one micro-batch (vram.md §4.1): with checkpointing each block
    keeps its input and one block is recomputed at a time; without, every block keeps its
    whole working set."""
    b = setup.knobs.batch_size
    shape = setup.shape

    def block(group_c: float, seen: float) -> float:
        return group_c * b * seen * ACTIVATION_FACTOR

    largest = max(block(g.act_bytes_per_token, tokens.seen_by(g)) for g in shape.groups)
    if setup.knobs.gradient_checkpointing:
        inputs = sum(g.count * b * tokens.seen_by(g) * shape.width_of(g) * 2 for g in shape.groups)
        return _gib(inputs + ALPHA * largest)
    every = sum(g.count * block(g.act_bytes_per_token, tokens.seen_by(g)) for g in shape.groups)
    return _gib(every + (ALPHA - 1) * largest)


MASK_BUILD_BYTES = 8
"""Bytes per mask element while Chroma builds its mask: the float32 ``repeat`` over heads and
its int32 copy are alive together before ``.bool()`` ([code] chroma/src/model.py:244-249);
this happens before the first block, when no activation is saved yet."""

MASK_BIAS_BYTES = 2
"""SDPA turns a boolean mask into an additive bias of the query's dtype (bf16) in every
call, and the memory-efficient kernel saves it for backward ([ext] PyTorch
``convert_boolean_attn_mask``; the same rule as HunyuanVideo's mask, vram.md §3.3)."""


def _mask_elements(setup: AitkSetup, parts: Components, tokens: Tokens) -> float:
    return setup.knobs.batch_size * parts.attention_mask_heads * float(tokens.sequence) ** 2


def train_mask_gib(
    setup: AitkSetup, parts: Components, tokens: Tokens, activations: float
) -> float:
    """A dense attention mask's bytes over the activations: the boolean mask, one bf16 bias
    per block that holds one for backward (one recomputed block with checkpointing, every
    block without), or the mask's construction before any activation, whichever is more."""
    elements = _mask_elements(setup, parts, tokens)
    if not elements:
        return 0.0
    biases = 1 if setup.knobs.gradient_checkpointing else setup.shape.n_blocks
    resident = _gib(elements * (1 + MASK_BIAS_BYTES * biases))
    return max(resident, _gib(elements * MASK_BUILD_BYTES) - activations)


def _inference_gib(setup: AitkSetup, tokens: Tokens) -> float:
    """One forward without autograd: a share of one block's intermediates alive at a time."""
    largest = max(g.act_bytes_per_token * tokens.seen_by(g) for g in setup.shape.groups)
    return _gib(largest * INFERENCE_SHARE)


def _vae_pixels(bucket: Bucket, video: bool) -> float:
    frames = min(bucket.frames, VIDEO_VAE_CHUNK_FRAMES + 1) if video else 1
    return bucket.width * bucket.height * frames


def _with_overheads(terms: dict[str, float], kind: str) -> float:
    """The context, plus the allocator's slack where shapes vary from step to step
    (training and sampling; loading and caching allocate few, large, lasting tensors)."""
    allocated = sum(terms.values())
    slack = SLACK if kind in ("train", "sample") else 0.0
    return CTX_GIB + allocated * (1 + slack)


def _step(step: str, kind: str, terms: dict[str, float], *notes: str) -> StepMemory:
    rounded = {k: round(v, 3) for k, v in terms.items() if v}
    return StepMemory(step, kind, _with_overheads(terms, kind), rounded, tuple(notes))


def _loaded_terms(setup: AitkSetup, parts: Components) -> dict[str, float]:
    """What is on the GPU after loading: the text encoder, the VAE and, unless low_vram, the
    DiT (and its second expert)."""
    terms = {
        "text_encoder": text_encoder_gib(setup, parts),
        "vae": _bf16_gib(parts.vae_params_b),
    }
    if not setup.knobs.low_vram:
        terms["transformer"] = dit_device_gib(setup) * _experts(setup) + _ara_gib(setup)
    return terms


def load_memory(setup: AitkSetup, parts: Components) -> StepMemory:
    largest_block = max(g.lin_mib_bf16 for g in setup.shape.groups) * MIB / GIB
    quantizing = largest_block * (1 + _linear_bytes_per_param(setup) / 2)
    te_full = _bf16_gib(parts.text_encoder_params_b) * (
        1.0 - setup.knobs.layer_offloading_text_encoder_percent
    )
    candidates = {
        "one DiT block in bf16 beside its quantized copy (quantize.py:448-465)": {
            "block_bf16_and_quantized": quantizing
        }
        if setup.quantized_transformer
        else {},
        "the text encoder in full precision before it is quantized (qwen_image.py:170-175)": {
            "text_encoder_bf16": te_full
        },
        "every part loaded"
        + (" (the DiT parked on the CPU: low_vram)" if setup.knobs.low_vram else ""): _loaded_terms(
            setup, parts
        ),
    }
    name, terms = max(candidates.items(), key=lambda kv: _with_overheads(kv[1], "prepare"))
    return _step("load", "prepare", terms, f"load peak: {name}")


def cache_latents_memory(setup: AitkSetup, parts: Components) -> StepMemory:
    largest = max(setup.buckets, key=lambda b: b.width * b.height * b.frames)
    work = _gib(_vae_pixels(largest, parts.video_vae) * VAE_ENCODE_BYTES_PER_PIXEL)
    terms = {**_loaded_terms(setup, parts), "vae_encode": work}
    return _step("cache-latents", "cache", terms, "the largest bucket's encode")


def cache_text_memory(setup: AitkSetup, parts: Components) -> StepMemory:
    """The DiT goes to the CPU while the captions are encoded (SDTrainer.py:296-298)."""
    terms = {"text_encoder": text_encoder_gib(setup, parts), "text_encode": TEXT_ENCODE_GIB}
    return _step("cache-text", "cache", terms, "encodes every caption, then unloads the encoder")


def train_memory(setup: AitkSetup, parts: Components, bucket: Bucket) -> StepMemory:
    tokens = tokens_of(setup.shape, bucket, setup.control)
    terms = {
        "transformer": dit_device_gib(setup) * _experts(setup),
        "offload_buffer": _offload_buffer_gib(setup),
        "accuracy_recovery_adapter": _ara_gib(setup),
        "dequantized_block": _dequant_gib(setup),
        "lora_and_optimizer": _lora_state_gib(setup),
        "activations": activations_gib(setup, tokens),
    }
    terms["attention_mask"] = train_mask_gib(setup, parts, tokens, terms["activations"])
    # The VAE goes to the CPU once the latents are cached (SDTrainer.py:312-319).
    if setup.text_encoder_in_training:
        terms["text_encoder"] = text_encoder_gib(setup, parts)
    label = f"{bucket.width}x{bucket.height}" + (f"x{bucket.frames}" if bucket.frames > 1 else "")
    return _step(f"train@{label}", "train", terms, f"{tokens.sequence} tokens per sample")


def sample_memory(setup: AitkSetup, parts: Components, bucket: Bucket, step: str) -> StepMemory:
    tokens = tokens_of(setup.shape, bucket, setup.control)
    pixels = _vae_pixels(bucket, parts.video_vae)
    if setup.knobs.low_vram:
        pixels = min(pixels, TILE_PIXELS)
    terms = {
        "transformer": dit_device_gib(setup) * _experts(setup),
        "offload_buffer": _offload_buffer_gib(setup),
        "accuracy_recovery_adapter": _ara_gib(setup),
        "dequantized_block": _dequant_gib(setup),
        "lora_and_optimizer": _lora_state_gib(setup),
        "vae": _bf16_gib(parts.vae_params_b),
    }
    if setup.text_encoder_in_training:
        terms["text_encoder"] = text_encoder_gib(setup, parts)
    denoise = _inference_gib(setup, tokens)
    mask = _mask_elements(setup, parts, tokens)
    if mask:  # built before the first block; then the mask and one call's bias
        denoise = max(_gib(mask * MASK_BUILD_BYTES), denoise + _gib(mask * (1 + MASK_BIAS_BYTES)))
    decode = _gib(pixels * VAE_DECODE_BYTES_PER_PIXEL)
    # The denoising loop's activations are gone when the VAE decodes: the larger one counts.
    if denoise >= decode:
        terms["denoise"] = denoise
    else:
        terms["vae_decode"] = decode
    return _step(step, "sample", terms, "whole pipeline at the sample size")


_WORKING_SETS = (
    "activations",
    "attention_mask",
    "denoise",
    "vae_encode",
    "vae_decode",
    "text_encode",
)


def grouped(memory: StepMemory) -> dict[str, float]:
    """A step's terms in the plan's columns: weights, LoRA + optimizer, activations (the
    working set), swap buffers (layer offloading's staging ring), context."""
    terms = memory.terms
    working = sum(terms.get(k, 0.0) for k in _WORKING_SETS)
    buffers = terms.get("offload_buffer", 0.0)
    lora = terms.get("lora_and_optimizer", 0.0)
    weights = sum(terms.values()) - working - buffers - lora
    return {
        "weights": round(weights, 2),
        "lora_and_optimizer": round(lora, 2),
        "activations": round(working, 2),
        "swap_buffers": round(buffers, 2),
        "context": CTX_GIB,
    }


def step_memories(setup: AitkSetup) -> tuple[StepMemory, ...]:
    """Every step's device memory, in the order AI-Toolkit runs them."""
    parts = components_for(setup.arch)
    steps = [load_memory(setup, parts), cache_latents_memory(setup, parts)]
    if setup.knobs.cache_text_embeddings:
        steps.append(cache_text_memory(setup, parts))
    if setup.sample is not None and setup.sample_first:
        steps.append(sample_memory(setup, parts, setup.sample, "sample-baseline"))
    steps += [train_memory(setup, parts, bucket) for bucket in setup.buckets]
    if setup.sample is not None:
        steps.append(sample_memory(setup, parts, setup.sample, "sample"))
    return tuple(steps)


def dit_bf16_gib(setup: AitkSetup) -> float:
    """One DiT in bf16, as it is read from disk."""
    return _gib(_dit_linear_params(setup) * 2) + _dit_rest_gib(setup)


def host_ram_gib(setup: AitkSetup) -> float:
    """Host RAM: the DiT loads on the CPU in bf16 before it is quantized or moved
    (qwen_image.py:121-123), plus what stays there (offloaded layers, a parked expert)."""
    parts = components_for(setup.arch)
    offloaded = _gib(_dit_linear_params(setup) * _linear_bytes_per_param(setup)) * (
        setup.knobs.layer_offloading_transformer_percent
    )
    parked = dit_device_gib(setup) if setup.two_experts and setup.knobs.low_vram else 0.0
    loaded = max(dit_bf16_gib(setup), _bf16_gib(parts.text_encoder_params_b))
    return HOST_PROCESS_GIB + loaded + offloaded + parked
