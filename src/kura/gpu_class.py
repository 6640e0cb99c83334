"""What a GPU class is, as a value: its memory, throughput, host link and cloud offers.

A leaf module (stdlib only) so the backend seam (:mod:`kura.backends.base`) can name the
class a step is sized for without importing the planner; the catalog of classes lives in
:mod:`kura.planning.gpus`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["DATASHEET", "CloudOffer", "GpuClass", "Segment"]

Segment = Literal["consumer", "workstation", "datacenter", "cpu"]

DATASHEET = "[ext] vendor datasheet (dense, no sparsity)"


@dataclass(frozen=True)
class CloudOffer:
    """One way to rent the class: provider, the provider's type id, and a seen price."""

    provider: str
    type_id: str
    usd_per_hour: float | None = None
    price_seen: str | None = None
    note: str = ""


@dataclass(frozen=True)
class GpuClass:
    """A GPU class as the planner sees it."""

    id: str
    name: str
    segment: Segment
    memory_gib: float
    bf16_tflops: float
    fp8: bool
    fp8_tflops: float | None
    memory_bandwidth_gbs: float
    pcie_gen: int | None
    """The host link's PCIe generation; None for the CPU class (no link: its memory is the
    host's RAM)."""
    pcie_gbs: float
    names: tuple[str, ...]
    offers: tuple[CloudOffer, ...] = ()
    source: str = DATASHEET
    note: str = ""

    @property
    def is_cpu(self) -> bool:
        """True for the CPU class: the device is the host's CPU and its memory the RAM."""
        return self.segment == "cpu"

    @property
    def usable_gib(self) -> float:
        """Memory a training process can plan for: 95 % of total (vram.md §4.6 warns above it)."""
        return round(self.memory_gib * 0.95, 2)

    def cheapest_offer(self) -> CloudOffer | None:
        """The priced offer with the lowest hourly price, if any offer has a price."""
        priced = [offer for offer in self.offers if offer.usd_per_hour is not None]
        return min(priced, key=lambda offer: offer.usd_per_hour or 0.0) if priced else None
