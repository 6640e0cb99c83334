"""``kura gpus``: the GPU classes Kura plans for, this machine's GPUs and its host facts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from kura.planning.detect import LocalGpu, detect_gpus
from kura.planning.gpus import GPU_CLASSES, GpuClass
from kura.planning.host import HostFacts, host_facts

__all__ = ["GpuList", "GpuListEntry", "list_gpus"]


@dataclass(frozen=True)
class GpuListEntry:
    """One GPU class as ``kura gpus`` lists it: its cheapest seen price and where it rents."""

    id: str
    name: str
    memory_gib: float
    bf16_tflops: float
    fp8: bool
    pcie_gbs: float
    usd_per_hour: float | None
    price_seen: str | None
    cloud_types: tuple[str, ...]

    @classmethod
    def of(cls, gpu: GpuClass) -> GpuListEntry:
        offer = gpu.cheapest_offer()
        return cls(
            id=gpu.id,
            name=gpu.name,
            memory_gib=gpu.memory_gib,
            bf16_tflops=gpu.bf16_tflops,
            fp8=gpu.fp8,
            pcie_gbs=gpu.pcie_gbs,
            usd_per_hour=offer.usd_per_hour if offer else None,
            price_seen=offer.price_seen if offer else None,
            cloud_types=tuple(f"{o.provider}:{o.type_id}" for o in gpu.offers),
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "id": self.id,
            "name": self.name,
            "memory_gib": self.memory_gib,
            "bf16_tflops": self.bf16_tflops,
            "fp8": self.fp8,
            "pcie_gbs": self.pcie_gbs,
            "usd_per_hour": self.usd_per_hour,
            "price_seen": self.price_seen,
            "cloud_types": list(self.cloud_types),
        }


@dataclass(frozen=True)
class GpuList:
    """``kura gpus``: the catalog's classes, the GPUs found here, and the host's RAM/disk."""

    gpus: tuple[GpuListEntry, ...]
    local: tuple[LocalGpu, ...]
    host: HostFacts

    kind: ClassVar[str] = "gpus"

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "gpus": [gpu.to_dict() for gpu in self.gpus],
            "local": [gpu.to_dict() for gpu in self.local],
            "host": self.host.to_dict(),
        }


def list_gpus(disk_path: str = ".") -> GpuList:
    """The catalog in table order, this machine's GPUs, and host facts at ``disk_path``."""
    return GpuList(
        gpus=tuple(GpuListEntry.of(gpu) for gpu in GPU_CLASSES.values()),
        local=tuple(detect_gpus()),
        host=host_facts(disk_path),
    )
