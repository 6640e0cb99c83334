"""GPU catalog: data rules, name matching, and the committed document."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kura.errors import NotFound
from kura.planning.gpus import GPU_CLASSES, get_gpu_class, match_gpu_class, render_markdown

DOC = Path(__file__).resolve().parents[2] / "docs" / "gpus.md"


def test_catalog_covers_the_brief() -> None:
    for gpu_id in (
        "rtx-3060-12g", "rtx-3090", "rtx-4060-ti-16g", "rtx-4070-ti-super", "rtx-4080",
        "rtx-4090", "rtx-5090", "rtx-a4000", "rtx-a5000", "rtx-a6000", "rtx-6000-ada",
        "rtx-pro-6000-blackwell", "l4", "l40s", "a10g", "a100-40gb", "a100-80gb",
        "h100-pcie", "h100-sxm", "h200", "b200",
    ):  # fmt: skip
        assert gpu_id in GPU_CLASSES


@pytest.mark.parametrize("gpu", GPU_CLASSES.values(), ids=lambda gpu: gpu.id)
def test_entries_are_plausible(gpu) -> None:
    assert 8 <= gpu.memory_gib <= 200
    assert gpu.bf16_tflops > 0
    assert gpu.memory_bandwidth_gbs > 0
    assert gpu.pcie_gbs > 0
    assert gpu.usable_gib < gpu.memory_gib
    if gpu.fp8_tflops is not None:
        assert gpu.fp8
        assert gpu.fp8_tflops > gpu.bf16_tflops
    for offer in gpu.offers:
        # A price is only ever recorded with the date it was seen.
        assert (offer.usd_per_hour is None) == (offer.price_seen is None)


def test_unknown_class_lists_the_known_ones() -> None:
    with pytest.raises(NotFound) as info:
        get_gpu_class("voodoo-5")
    assert "rtx-4090" in info.value.hint


@pytest.mark.parametrize(
    ("name", "memory", "expected"),
    [
        ("NVIDIA GeForce RTX 4090", 23.99, "rtx-4090"),
        ("NVIDIA GeForce RTX 4070 Ti SUPER", 15.99, "rtx-4070-ti-super"),
        ("NVIDIA GeForce RTX 4060 Ti", 15.7, "rtx-4060-ti-16g"),
        ("NVIDIA GeForce RTX 4060 Ti", 7.6, None),
        ("NVIDIA A100-SXM4-40GB", 39.4, "a100-40gb"),
        ("NVIDIA A100 80GB PCIe", 79.2, "a100-80gb"),
        ("NVIDIA H100 PCIe", 79.6, "h100-pcie"),
        ("NVIDIA H100 80GB HBM3", 79.6, "h100-sxm"),
        ("NVIDIA L4", 22.5, "l4"),
        ("NVIDIA L40S", 44.9, "l40s"),
        ("NVIDIA RTX 6000 Ada Generation", 47.9, "rtx-6000-ada"),
        ("NVIDIA RTX A6000", 47.99, "rtx-a6000"),
        ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", 95.0, "rtx-pro-6000-blackwell"),
        ("Tesla T4", 15.0, None),
    ],
)
def test_match_by_name_and_memory(name: str, memory: float, expected: str | None) -> None:
    match = match_gpu_class(name, memory)
    assert (None if match is None else match.id) == expected


def test_committed_doc_is_current() -> None:
    assert DOC.read_text() == render_markdown(), (
        "docs/gpus.md is stale: run `python -m kura.planning.gpus > docs/gpus.md`"
    )


def test_module_prints_the_doc() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kura.planning.gpus"], capture_output=True, text=True, check=True
    )
    assert done.stdout == render_markdown()
    assert "Warning" not in done.stderr


def test_skypilot_names_belong_to_catalog_classes() -> None:
    from kura.planning.gpus import GPU_CLASSES, SKYPILOT_ACCELERATORS

    assert set(SKYPILOT_ACCELERATORS) <= set(GPU_CLASSES)
    assert SKYPILOT_ACCELERATORS["a100-80gb"] == "A100-80GB"
