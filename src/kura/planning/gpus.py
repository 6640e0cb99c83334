"""The device class catalog: memory, throughput, host link and cloud offers, as data.

Every class a plan can be for is one row of :data:`DEVICE_CLASSES`: the GPU classes
(:data:`GPU_CLASSES`, what a bigger-GPU suggestion or local detection picks from) and a CPU
class (segment ``cpu``), for the runs that train on a machine without an accelerator (the
CPU runs of CI and ``kura demo``), so their plans name the machine they run on instead of a
GPU they never touch. ``--gpu cpu`` plans for it.

``python -m kura.planning.gpus > docs/gpus.md`` renders the catalog as the committed
document (a test fails when that document is stale).

Numbers are vendor datasheet values (``[ext] datasheet``) unless a source says otherwise:
bf16 is *dense* tensor throughput with fp32 accumulation (what PyTorch's bf16 GEMMs use;
GeForce cards run that at half their fp16-accumulate rate), ``memory_gib`` is what
``nvidia-smi`` reports as total memory (ECC cards report less than the marketing size),
``pcie_gbs`` the effective pinned host-to-device copy rate for the card's link
(vram.md §2.2: gen3 x16 ~11-12, gen4 x16 ~20-25, gen5 x16 ~40-50 GB/s). Prices are only
those seen in the research notes, with the month they were seen; everything else is null.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from types import MappingProxyType

from kura.errors import NotFound
from kura.gpu_class import DATASHEET, CloudOffer, GpuClass

__all__ = [
    "CPU_CLASS",
    "DEVICE_CLASSES",
    "GPU_CLASSES",
    "SKYPILOT_ACCELERATORS",
    "CloudOffer",
    "GpuClass",
    "get_gpu_class",
    "match_gpu_class",
    "render_markdown",
]

_PEERS_PRICES = "peers.md §5 (prices seen in stored data, move daily)"


def _runpod(type_id: str, price: float | None = None, seen: str | None = None) -> CloudOffer:
    return CloudOffer("runpod", type_id, price, seen)


def _catalog(*classes: GpuClass) -> Mapping[str, GpuClass]:
    return MappingProxyType({gpu.id: gpu for gpu in classes})


SKYPILOT_ACCELERATORS: Mapping[str, str] = MappingProxyType(
    {
        "a10g": "A10G",
        "a100-40gb": "A100",
        "a100-80gb": "A100-80GB",
        "h100-pcie": "H100",
        "h100-sxm": "H100",
        "h200": "H200",
        "l4": "L4",
        "l40s": "L40S",
        "a40": "A40",
        "rtx-a4000": "A4000",
        "rtx-a6000": "A6000",
    }
)
"""GPU class → SkyPilot accelerator name (source: SkyPilot docs, `sky show-gpus -a`, stable)."""


_GPUS: tuple[GpuClass, ...] = (
    GpuClass(
        "rtx-3060-12g",
        "GeForce RTX 3060 12 GB",
        "consumer",
        12.0,
        25.4,
        False,
        None,
        360,
        4,
        22.0,
        ("rtx 3060",),
    ),
    GpuClass(
        "rtx-3090",
        "GeForce RTX 3090",
        "consumer",
        24.0,
        71.0,
        False,
        None,
        936,
        4,
        22.0,
        ("rtx 3090",),
        note="vram.md §4.7 lists ~36 TFLOP/s; that is the FP32 shader rate, not bf16 tensor.",
    ),
    GpuClass(
        "rtx-4060-ti-16g",
        "GeForce RTX 4060 Ti 16 GB",
        "consumer",
        16.0,
        44.1,
        True,
        None,
        288,
        4,
        11.0,
        ("rtx 4060 ti",),
        note="PCIe 4.0 x8 link: half the host bandwidth of an x16 card.",
    ),
    GpuClass(
        "rtx-4070-ti-super",
        "GeForce RTX 4070 Ti SUPER",
        "consumer",
        16.0,
        88.2,
        True,
        None,
        672,
        4,
        22.0,
        ("rtx 4070 ti super",),
    ),
    GpuClass(
        "rtx-4080",
        "GeForce RTX 4080",
        "consumer",
        16.0,
        97.5,
        True,
        None,
        717,
        4,
        22.0,
        ("rtx 4080",),
    ),
    GpuClass(
        "rtx-4090",
        "GeForce RTX 4090",
        "consumer",
        24.0,
        165.2,
        True,
        None,
        1008,
        4,
        22.0,
        ("rtx 4090",),
        (_runpod("NVIDIA GeForce RTX 4090"),),
    ),
    GpuClass(
        "rtx-5080",
        "GeForce RTX 5080",
        "consumer",
        15.9,
        112.6,
        True,
        None,
        960,
        5,
        45.0,
        ("rtx 5080",),
    ),
    GpuClass(
        "rtx-5090",
        "GeForce RTX 5090",
        "consumer",
        31.8,
        209.5,
        True,
        None,
        1792,
        5,
        45.0,
        ("rtx 5090",),
        (_runpod("NVIDIA GeForce RTX 5090"),),
    ),
    GpuClass(
        "rtx-a4000",
        "RTX A4000",
        "workstation",
        16.0,
        76.7,
        False,
        None,
        448,
        4,
        22.0,
        ("rtx a4000",),
    ),
    GpuClass(
        "rtx-a5000",
        "RTX A5000",
        "workstation",
        24.0,
        111.1,
        False,
        None,
        768,
        4,
        22.0,
        ("rtx a5000",),
    ),
    GpuClass(
        "rtx-a6000",
        "RTX A6000",
        "workstation",
        48.0,
        154.8,
        False,
        None,
        768,
        4,
        22.0,
        ("rtx a6000",),
        (_runpod("NVIDIA RTX A6000"),),
    ),
    GpuClass(
        "a40",
        "A40",
        "datacenter",
        45.0,
        149.7,
        False,
        None,
        696,
        4,
        22.0,
        ("a40",),
        (
            CloudOffer("runpod", "NVIDIA A40"),
            CloudOffer(
                "vast",
                "A40",
                0.44,
                "2026-09",
                note="provider read from the sentence order in " + _PEERS_PRICES,
            ),
        ),
    ),
    GpuClass(
        "rtx-6000-ada",
        "RTX 6000 Ada Generation",
        "workstation",
        48.0,
        364.2,
        True,
        728.5,
        960,
        4,
        22.0,
        ("rtx 6000 ada",),
        (_runpod("NVIDIA RTX 6000 Ada Generation"),),
    ),
    GpuClass(
        "rtx-pro-6000-blackwell",
        "RTX PRO 6000 Blackwell",
        "workstation",
        95.6,
        503.8,
        True,
        None,
        1792,
        5,
        45.0,
        ("rtx pro 6000",),
        note="bf16 derived from 188 SMs at 2.62 GHz (workstation full rate); fp8 not listed.",
    ),
    GpuClass(
        "l4",
        "L4",
        "datacenter",
        22.5,
        121.0,
        True,
        242.5,
        300,
        4,
        22.0,
        ("l4",),
    ),
    GpuClass(
        "l40s",
        "L40S",
        "datacenter",
        45.0,
        362.0,
        True,
        733.0,
        864,
        4,
        22.0,
        ("l40s",),
        (
            _runpod("NVIDIA L40S"),
            CloudOffer("replicate", "gpu-l40s", 3.50, "2026-09", note=_PEERS_PRICES),
        ),
    ),
    GpuClass(
        "a10g",
        "A10G (AWS)",
        "datacenter",
        22.5,
        70.0,
        False,
        None,
        600,
        4,
        22.0,
        ("a10g",),
        source="[ext] approximate: AWS publishes no bf16 figure; GA102 with 80 SMs at "
        "half-rate fp32 accumulate",
    ),
    GpuClass(
        "a100-40gb",
        "A100 40 GB",
        "datacenter",
        40.0,
        312.0,
        False,
        None,
        1555,
        4,
        22.0,
        ("a100",),
    ),
    GpuClass(
        "a100-80gb",
        "A100 80 GB",
        "datacenter",
        80.0,
        312.0,
        False,
        None,
        2039,
        4,
        22.0,
        ("a100",),
        (_runpod("NVIDIA A100 80GB PCIe"), _runpod("NVIDIA A100-SXM4-80GB")),
        note="Bandwidth of the SXM part; the PCIe part has 1935 GB/s.",
    ),
    GpuClass(
        "h100-pcie",
        "H100 PCIe",
        "datacenter",
        79.6,
        756.0,
        True,
        1513.0,
        2000,
        5,
        45.0,
        ("h100 pcie",),
        (_runpod("NVIDIA H100 PCIe"),),
    ),
    GpuClass(
        "h100-sxm",
        "H100 SXM",
        "datacenter",
        79.6,
        989.0,
        True,
        1979.0,
        3350,
        5,
        45.0,
        ("h100 80gb hbm3", "h100 sxm", "h100"),
        (
            _runpod("NVIDIA H100 80GB HBM3", 2.69, "2026-09"),
            CloudOffer("runpod", "NVIDIA H100 80GB HBM3", 3.49, "2026-09", note="secure cloud"),
            CloudOffer(
                "vast",
                "H100",
                2.40,
                "2026-09",
                note="median; form factor not stated in " + _PEERS_PRICES,
            ),
        ),
    ),
    GpuClass(
        "h200",
        "H200",
        "datacenter",
        140.4,
        989.0,
        True,
        1979.0,
        4800,
        5,
        45.0,
        ("h200",),
        (_runpod("NVIDIA H200"),),
    ),
    GpuClass(
        "b200",
        "B200",
        "datacenter",
        179.0,
        2250.0,
        True,
        4500.0,
        8000,
        5,
        45.0,
        ("b200",),
        (_runpod("NVIDIA B200"),),
    ),
)

CPU_CLASS = GpuClass(
    "cpu",
    "CPU only (no accelerator), 16 GB host",
    "cpu",
    16.0,
    0.2,
    False,
    None,
    20,
    None,
    10.0,
    (),
    source="[est] GitHub's standard Linux runner (4 CPUs, 16 GB RAM) for the memory; the "
    "rates are an order of magnitude for 4 x86 cores with AVX2 FMA (about 0.4 TFLOP/s fp32 "
    "peak; PyTorch's bf16 matmuls run no faster than fp32 on CPUs without AMX or "
    "AVX512-BF16), dual-channel DDR4 for the bandwidth and a RAM-to-RAM copy for the host "
    "link",
    note="The device is the host's CPU and its memory the host's RAM: a run planned for it "
    "trains on a machine without an accelerator (the real CPU runs of CI, a laptop without a "
    "GPU). Step times from these rates are rough; the memory fit is what the plan checks.",
)
"""The class of a run on a machine without an accelerator (``--gpu cpu``)."""

DEVICE_CLASSES: Mapping[str, GpuClass] = _catalog(*_GPUS, CPU_CLASS)
"""Every class a plan can be for, in table order: the GPU classes, then the CPU class."""

GPU_CLASSES: Mapping[str, GpuClass] = _catalog(*_GPUS)
"""The GPU classes only: local detection matches these, and a suggestion of a larger GPU
picks among them (never the CPU class)."""


def get_gpu_class(gpu_id: str) -> GpuClass:
    """The catalog entry ``gpu_id`` (a GPU class or ``cpu``); :class:`NotFound` lists the
    known ids."""
    try:
        return DEVICE_CLASSES[gpu_id]
    except KeyError:
        raise NotFound(
            f"unknown GPU class {gpu_id!r}",
            hint="known GPU classes: "
            + ", ".join(GPU_CLASSES)
            + f"; `{CPU_CLASS.id}` for a machine without an accelerator",
        ) from None


def _normalise(name: str) -> str:
    name = name.lower().replace("nvidia", " ").replace("geforce", " ")
    name = re.sub(r"[-_]", " ", name)
    return re.sub(r"\s+", " ", name).strip()


def match_gpu_class(name: str, memory_gib: float | None = None) -> GpuClass | None:
    """The catalog class a device called ``name`` belongs to, or None.

    Name patterns are matched on word boundaries, longest pattern first (``rtx 4070 ti
    super`` before ``rtx 4080``); when several classes share a pattern (A100 40/80 GB) or a
    memory size differs (4060 Ti 8 GB is not in the catalog), ``memory_gib`` decides: the
    class whose memory is within 15 % of the device's.
    """
    norm = _normalise(name)
    candidates: list[tuple[int, GpuClass]] = []
    for gpu in GPU_CLASSES.values():
        for pattern in gpu.names:
            if re.search(rf"(^|\s){re.escape(pattern)}($|\s)", norm):
                candidates.append((len(pattern), gpu))
                break
    if not candidates:
        return None
    candidates.sort(key=lambda item: -item[0])
    best_len = candidates[0][0]
    best = [gpu for length, gpu in candidates if length == best_len]
    if memory_gib is None:
        return best[0]
    close = [gpu for gpu in best if abs(gpu.memory_gib - memory_gib) <= 0.15 * gpu.memory_gib]
    if not close:
        return None
    return min(close, key=lambda gpu: abs(gpu.memory_gib - memory_gib))


def _fmt(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def render_markdown() -> str:
    """The catalog as Markdown: the body of ``docs/gpus.md``."""
    lines = [
        "# GPU classes",
        "",
        "Generated by `python -m kura.planning.gpus > docs/gpus.md` from "
        "`src/kura/planning/gpus.py`; do not edit by hand.",
        "",
        "bf16 / fp8: dense tensor TFLOP/s (bf16 with fp32 accumulation). Usable: 95 % of "
        "memory, what the planner fits against. Host link: effective pinned host-to-device "
        "GB/s. Prices: only where a source gave one, with the month seen; they move daily.",
        "",
        f"`{CPU_CLASS.id}` is the class of a machine without an accelerator (`--gpu "
        f"{CPU_CLASS.id}`): its memory is the host's RAM, and no larger-GPU suggestion "
        "picks it.",
        "",
        "| id | name | segment | memory GiB | usable GiB | bf16 TFLOP/s | fp8 | "
        "mem GB/s | PCIe | host GB/s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for gpu in DEVICE_CLASSES.values():
        fp8 = ("yes" + (f" ({gpu.fp8_tflops:.0f})" if gpu.fp8_tflops else "")) if gpu.fp8 else "no"
        link = "–" if gpu.pcie_gen is None else f"gen{gpu.pcie_gen}"
        lines.append(
            f"| `{gpu.id}` | {gpu.name} | {gpu.segment} | {_fmt(gpu.memory_gib)} | "
            f"{_fmt(gpu.usable_gib)} | {_fmt(gpu.bf16_tflops)} | {fp8} | "
            f"{gpu.memory_bandwidth_gbs:.0f} | {link} | {_fmt(gpu.pcie_gbs)} |"
        )
    lines += ["", "## Cloud offers", "", "| class | provider | type id | USD/h | seen | note |"]
    lines.append("|---|---|---|---|---|---|")
    for gpu in GPU_CLASSES.values():
        for offer in gpu.offers:
            price = "–" if offer.usd_per_hour is None else f"{offer.usd_per_hour:.2f}"
            lines.append(
                f"| `{gpu.id}` | {offer.provider} | `{offer.type_id}` | {price} | "
                f"{offer.price_seen or '–'} | {offer.note} |"
            )
    lines += ["", "## Notes", ""]
    for gpu in DEVICE_CLASSES.values():
        if gpu.note or gpu.source != DATASHEET:
            text = " ".join(part for part in (gpu.note, f"Source: {gpu.source}.") if part)
            lines.append(f"- `{gpu.id}`: {text}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render_markdown())
