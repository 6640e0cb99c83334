"""The CPU class: a run on a machine without an accelerator names the machine it runs on."""

from __future__ import annotations

from pathlib import Path

import pytest

from kura.errors import NotFound
from kura.planning.gpus import (
    CPU_CLASS,
    DEVICE_CLASSES,
    GPU_CLASSES,
    get_gpu_class,
    match_gpu_class,
    render_markdown,
)

DOC = Path(__file__).resolve().parents[2] / "docs" / "gpus.md"


def test_cpu_is_a_class_of_the_table_that_plan_gpu_accepts() -> None:
    cpu = get_gpu_class("cpu")  # what `kura run plan RUN --gpu cpu` looks up
    assert cpu is CPU_CLASS and cpu.is_cpu and cpu.segment == "cpu"
    assert list(DEVICE_CLASSES)[-1] == "cpu"
    assert cpu.pcie_gen is None  # no host link: its memory is the host's RAM
    assert cpu.memory_gib == 16.0 and cpu.usable_gib < cpu.memory_gib
    assert cpu.bf16_tflops > 0 and not cpu.fp8 and not cpu.offers
    assert "GitHub" in cpu.source and cpu.source.startswith("[est]")


def test_the_cpu_class_is_never_taken_for_a_gpu() -> None:
    # Local detection and the larger-GPU suggestion pick among the GPU classes only.
    assert "cpu" not in GPU_CLASSES
    assert not any(gpu.is_cpu for gpu in GPU_CLASSES.values())
    assert set(DEVICE_CLASSES) == {*GPU_CLASSES, "cpu"}
    assert match_gpu_class("cpu") is None


def test_an_unknown_class_names_the_cpu_class_too() -> None:
    with pytest.raises(NotFound) as info:
        get_gpu_class("a-cpu")
    assert "rtx-4090" in info.value.hint and "`cpu` for a machine without an accelerator" in (
        info.value.hint or ""
    )


def test_the_generated_document_lists_the_cpu_class() -> None:
    row = next(line for line in render_markdown().splitlines() if line.startswith("| `cpu` |"))
    assert row == (
        "| `cpu` | CPU only (no accelerator), 16 GB host | cpu | 16.0 | 15.2 | 0.2 | no | 20 | "
        "– | 10.0 |"
    )
    assert row in DOC.read_text()
