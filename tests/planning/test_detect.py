"""Local GPU detection with fakes: a pynvml module object and an nvidia-smi script."""

from __future__ import annotations

import os
import stat
import sys
import types
from pathlib import Path

import pytest

from kura.planning import detect
from kura.planning.detect import detect_gpus, parse_smi_csv

GIB = 2**30


class _NvmlError(Exception):
    pass


def _fake_nvml(*, fail_init: bool = False) -> types.ModuleType:
    module = types.ModuleType("pynvml")
    module.NVMLError = _NvmlError  # type: ignore[attr-defined]
    devices = [
        ("NVIDIA GeForce RTX 4090", 24 * GIB, 20 * GIB),
        (b"NVIDIA H100 80GB HBM3", int(79.6 * GIB), 70 * GIB),
    ]

    def init() -> None:
        if fail_init:
            raise _NvmlError("driver not loaded")

    def memory(handle: int) -> types.SimpleNamespace:
        return types.SimpleNamespace(total=devices[handle][1], free=devices[handle][2])

    def unsupported(handle: int) -> int:
        raise _NvmlError("not supported")

    module.nvmlInit = init  # type: ignore[attr-defined]
    module.nvmlShutdown = lambda: None  # type: ignore[attr-defined]
    module.nvmlSystemGetDriverVersion = lambda: "580.65"  # type: ignore[attr-defined]
    module.nvmlDeviceGetCount = lambda: len(devices)  # type: ignore[attr-defined]
    module.nvmlDeviceGetHandleByIndex = lambda index: index  # type: ignore[attr-defined]
    module.nvmlDeviceGetName = lambda handle: devices[handle][0]  # type: ignore[attr-defined]
    module.nvmlDeviceGetMemoryInfo = memory  # type: ignore[attr-defined]
    module.nvmlDeviceGetUUID = lambda handle: f"GPU-{handle}"  # type: ignore[attr-defined]
    module.nvmlDeviceGetCudaComputeCapability = lambda handle: (8, 9)  # type: ignore[attr-defined]
    module.nvmlDeviceGetMaxPcieLinkGeneration = lambda handle: 4  # type: ignore[attr-defined]
    module.nvmlDeviceGetMaxPcieLinkWidth = unsupported  # type: ignore[attr-defined]
    return module


SMI_OUTPUT = (
    "0, NVIDIA GeForce RTX 3090, 24576, 24000, GPU-aaa, 570.10, 4, 16, 8.6\n"
    "1, NVIDIA A100-SXM4-40GB, 40960, 40000, GPU-bbb, 570.10, [N/A], [N/A], 8.0\n"
)


def _fake_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, output: str, code: int = 0) -> None:
    script = tmp_path / "nvidia-smi"
    script.write_text(f"#!/bin/sh\ncat <<'EOF'\n{output}EOF\nexit {code}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")


def test_nvml_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", _fake_nvml())
    gpus = detect_gpus()
    assert [gpu.gpu_class for gpu in gpus] == ["rtx-4090", "h100-sxm"]
    first = gpus[0]
    assert first.source == "nvml"
    assert first.memory_gib == 24.0
    assert first.free_gib == 20.0
    assert first.compute_capability == "8.9"
    assert first.pcie_gen == 4
    assert first.pcie_width is None  # the driver refused that query
    assert first.driver_version == "580.65"
    assert gpus[1].name == "NVIDIA H100 80GB HBM3"  # bytes names are decoded


def test_falls_back_to_nvidia_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", _fake_nvml(fail_init=True))
    _fake_smi(tmp_path, monkeypatch, SMI_OUTPUT)
    gpus = detect_gpus()
    assert [gpu.gpu_class for gpu in gpus] == ["rtx-3090", "a100-40gb"]
    assert gpus[0].source == "nvidia-smi"
    assert gpus[0].pcie_width == 16
    assert gpus[1].pcie_gen is None
    assert gpus[1].memory_gib == 40.0


def test_no_gpu_is_an_empty_list(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import fails
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi
    assert detect_gpus() == []


def test_failing_nvidia_smi_is_no_gpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)
    _fake_smi(tmp_path, monkeypatch, "NVIDIA-SMI has failed\n", code=9)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert detect_gpus() == []


def test_parse_skips_garbage_rows() -> None:
    gpus = parse_smi_csv("\n" + SMI_OUTPUT + "garbage\n2, Broken, [N/A], , , , , ,\n")
    assert len(gpus) == 2
    assert gpus[0].to_dict()["uuid"] == "GPU-aaa"


def test_real_machine_answers_without_raising() -> None:
    # Whatever this machine has (here: nothing), detection answers with a list.
    assert isinstance(detect.detect_gpus(), list)
