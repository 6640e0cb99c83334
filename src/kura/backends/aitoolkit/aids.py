"""AI-Toolkit's memory aids, as data for the one fit ladder (``kura.planning.ladder``).

Each aid names the ``backend.config`` keys it sets (:mod:`.knobs`), what it saves and what
it costs, from what the code does at 27a03a9 (``toolkit/util/quantize.py``,
``toolkit/memory_management/manager.py``, ``toolkit/models/base_model.py``,
``jobs/process/BaseSDTrainProcess.py``). Off first; none is a hidden default: Kura writes
``gradient_checkpointing: false`` rather than inherit AI-Toolkit's default ``true``.

Rungs follow the cost order: caching the captions' embeddings (free after one pass),
checkpointing (a third more time), 8-bit weights, the text encoder's 8-bit weights, 3/4-bit
weights with an accuracy-recovery adapter (fidelity), layer offloading (PCIe every step),
``low_vram`` (slower loading and sampling; it only lowers the load and sampling peaks and
keeps Wan 2.2's idle expert on the CPU).
"""

from __future__ import annotations

from kura.backends.aitoolkit.archs import AitkModel
from kura.backends.base import MemoryAid

__all__ = ["LAYER_OFFLOAD_LEVELS", "aids_for"]

LAYER_OFFLOAD_LEVELS = (0.0, 0.25, 0.5, 0.75, 1.0)
"""Fractions of the transformer's linear layers kept in host RAM (a random subset)."""

_CACHE_TEXT = MemoryAid(
    name="cache-text-embeddings",
    rung=1,
    keys=("cache_text_embeddings",),
    saves="the text encoder's weights in training (captions encoded once, then it is "
    "unloaded; the same embeddings, so meaning-preserving)",
    costs="one encoding pass before training; the encoder cannot train (Kura never trains it)",
    preferred=True,
)
_CHECKPOINTING = MemoryAid(
    name="gradient-checkpointing",
    rung=2,
    keys=("gradient_checkpointing",),
    saves="most of the transformer's activations (recomputed in the backward pass)",
    costs="about a third more time per step (one more forward pass)",
)
_QUANTIZE = MemoryAid(
    name="quantize",
    rung=3,
    keys=("quantize", "qtype"),
    saves="half the transformer's weight memory (8-bit weights, qfloat8)",
    costs="slightly lower fidelity of the frozen base weights; quantizing adds minutes at load",
    preferred=True,
)
_QUANTIZE_TE = MemoryAid(
    name="quantize-text-encoder",
    rung=4,
    keys=("quantize_te", "qtype_te"),
    saves="half the text encoder's weight memory (qfloat8)",
    costs="slightly different text embeddings than the full-precision encoder",
)
_LOW_VRAM = MemoryAid(
    name="low-vram",
    rung=7,
    keys=("low_vram",),
    saves="the load-time peak (transformer parked on the CPU, block-wise quantizing, tiled "
    "VAE decode while sampling)",
    costs="slower loading and sampling; needs host RAM for the parked weights",
)
_FOUR_BIT = MemoryAid(
    name="4bit-accuracy-recovery",
    rung=5,
    keys=("quantize", "qtype", "accuracy_recovery_adapter"),
    saves="three quarters of the transformer's weight memory (3/4-bit weights)",
    costs="the base is quantized to 3/4 bits; an accuracy-recovery LoRA (ostris) stays "
    "attached, un-merged, in training and sampling: lower fidelity than 8-bit",
)
_OFFLOAD = MemoryAid(
    name="layer-offloading",
    rung=6,
    keys=("layer_offloading_transformer_percent",),
    saves="that fraction of the transformer's linear weights (streamed from host RAM)",
    costs="PCIe transfers every step, slower in proportion to the fraction; host RAM for the "
    "weights; the layers are a random subset (SEED fixes them)",
    levels=LAYER_OFFLOAD_LEVELS,
)


def micro_batch_aid(effective_batch: int) -> MemoryAid | None:
    """Smaller micro-batches with accumulation: the effective batch (the recipe) is kept."""
    sizes = tuple(n for n in range(effective_batch, 0, -1) if effective_batch % n == 0)
    if len(sizes) < 2:
        return None
    return MemoryAid(
        name="micro-batch",
        rung=0,
        keys=("batch_size",),
        saves="activations of the samples not in the micro-batch",
        costs="less parallel work per step; the same effective batch through accumulation",
        levels=sizes,
    )


def aids_for(
    model: AitkModel, effective_batch: int, *, unloads_text_encoder: bool = False
) -> tuple[MemoryAid, ...]:
    """The aids AI-Toolkit honours for ``model``, in rung order. Caching the captions is not
    offered when the run unloads the encoder already (the two exclude each other)."""
    aids: list[MemoryAid] = []
    micro = micro_batch_aid(effective_batch)
    if micro is not None:
        aids.append(micro)
    if not unloads_text_encoder:
        aids.append(_CACHE_TEXT)
    aids.append(_CHECKPOINTING)
    if model.quantizes:
        aids += [_QUANTIZE, _QUANTIZE_TE]
    if model.quantizes and any(q in ("uint3", "uint4") for q in model.ara):
        aids.append(_FOUR_BIT)
    if model.layer_offloading:
        aids.append(_OFFLOAD)
    aids.append(_LOW_VRAM)
    return tuple(aids)
