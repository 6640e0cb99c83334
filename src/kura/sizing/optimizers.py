"""Optimizer state per LoRA parameter, with sources.

Musubi keeps LoRA weights and their gradients in fp32 (vram.md §1.2 notes), so every
trainable parameter costs 4 B weight + 4 B gradient + the optimizer's state below.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from kura.errors import NotFound

__all__ = ["OPTIMIZERS", "OptimizerState", "get_optimizer", "state_bytes_per_param"]


@dataclass(frozen=True)
class OptimizerState:
    """Bytes of optimizer state per fp32 LoRA parameter.

    ``bytes_per_param`` is the dense state; ``factored`` optimizers add ``4 / rank`` bytes for
    the row + column statistics of each thin LoRA matrix (rank x in and out x rank).
    """

    id: str
    bytes_per_param: float
    factored: bool
    source: str


OPTIMIZERS: Mapping[str, OptimizerState] = MappingProxyType(
    {
        "adamw": OptimizerState("adamw", 8.0, False, "vram.md §4.2: exp_avg + exp_avg_sq in fp32"),
        "adamw8bit": OptimizerState(
            "adamw8bit",
            2.0 + 8.0 / 256,
            False,
            "vram.md §4.2: two 8-bit states (bitsandbytes) + fp32 absmax per 256-element block",
        ),
        "adafactor": OptimizerState(
            "adafactor",
            0.0,
            True,
            "vram.md §4.2: beta1 None, factored second moment (rows + cols floats)",
        ),
        "prodigy": OptimizerState(
            "prodigy",
            16.0,
            False,
            "[ext] prodigyopt: exp_avg, exp_avg_sq, s and p0 per parameter, fp32",
        ),
        "came": OptimizerState(
            "came",
            4.0,
            True,
            "[ext] CAME: fp32 exp_avg + factored second moment and factored confidence",
        ),
        "lion": OptimizerState("lion", 4.0, False, "[ext] Lion: one fp32 momentum"),
        "muon": OptimizerState(
            "muon",
            4.0,
            False,
            "[ext] Muon: one fp32 momentum for matrices (musubi.md §1.9 recommends it for HV 1.5)",
        ),
    }
)


def get_optimizer(optimizer_id: str) -> OptimizerState:
    """The state record for ``optimizer_id`` (case-insensitive)."""
    try:
        return OPTIMIZERS[optimizer_id.lower()]
    except KeyError:
        raise NotFound(
            f"unknown optimizer {optimizer_id!r}",
            hint="known optimizers: " + ", ".join(OPTIMIZERS),
        ) from None


def state_bytes_per_param(optimizer_id: str, rank: int) -> float:
    """Optimizer state bytes per LoRA parameter at ``rank``."""
    state = get_optimizer(optimizer_id)
    return state.bytes_per_param + (4.0 / max(rank, 1) if state.factored else 0.0)
