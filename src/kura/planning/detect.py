"""Local GPU detection: NVML first, ``nvidia-smi`` second, an empty list when there is none.

``pynvml`` (package ``nvidia-ml-py``) is imported only when detection runs, so machines
without it still import Kura. Each detected device is matched to a catalog class by name
and memory (:func:`kura.planning.gpus.match_gpu_class`).
"""

from __future__ import annotations

import importlib
import shutil
import subprocess
from dataclasses import asdict, dataclass
from types import ModuleType
from typing import Any

from kura.planning.gpus import match_gpu_class

__all__ = [
    "SMI_FIELDS",
    "LocalGpu",
    "detect_gpus",
    "detect_with_nvml",
    "detect_with_smi",
    "parse_smi_csv",
]

MIB = 2**20
GIB = 2**30

SMI_FIELDS = (
    "index",
    "name",
    "memory.total",
    "memory.free",
    "uuid",
    "driver_version",
    "pcie.link.gen.max",
    "pcie.link.width.max",
    "compute_cap",
)
"""Fields asked of ``nvidia-smi --query-gpu`` (memory in MiB with ``nounits``)."""

SMI_TIMEOUT_S = 15


@dataclass(frozen=True)
class LocalGpu:
    """One GPU on this machine."""

    index: int
    name: str
    memory_gib: float
    free_gib: float | None
    uuid: str | None
    driver_version: str | None
    compute_capability: str | None
    pcie_gen: int | None
    pcie_width: int | None
    gpu_class: str | None
    source: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _optional(call: Any, *args: Any, errors: tuple[type[BaseException], ...]) -> Any:
    """``call(*args)``, or None when the driver does not support the query."""
    try:
        return call(*args)
    except errors:
        return None


def _nvml_errors(nvml: ModuleType) -> tuple[type[BaseException], ...]:
    error = getattr(nvml, "NVMLError", None)
    base: tuple[type[BaseException], ...] = (OSError, RuntimeError, AttributeError)
    return (*base, error) if isinstance(error, type) else base


def detect_with_nvml(nvml: ModuleType | None = None) -> list[LocalGpu] | None:
    """GPUs through NVML, or None when NVML is missing or fails to initialise."""
    if nvml is None:
        try:
            nvml = importlib.import_module("pynvml")
        except ImportError:
            return None
    errors = _nvml_errors(nvml)
    try:
        nvml.nvmlInit()
    except errors:
        return None
    try:
        driver = _optional(nvml.nvmlSystemGetDriverVersion, errors=errors)
        gpus: list[LocalGpu] = []
        for index in range(nvml.nvmlDeviceGetCount()):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            name = _text(nvml.nvmlDeviceGetName(handle))
            memory = nvml.nvmlDeviceGetMemoryInfo(handle)
            capability = _optional(nvml.nvmlDeviceGetCudaComputeCapability, handle, errors=errors)
            uuid = _optional(nvml.nvmlDeviceGetUUID, handle, errors=errors)
            total_gib = memory.total / GIB
            match = match_gpu_class(name, total_gib)
            gpus.append(
                LocalGpu(
                    index=index,
                    name=name,
                    memory_gib=round(total_gib, 2),
                    free_gib=round(memory.free / GIB, 2),
                    uuid=None if uuid is None else _text(uuid),
                    driver_version=None if driver is None else _text(driver),
                    compute_capability=None
                    if capability is None
                    else f"{capability[0]}.{capability[1]}",
                    pcie_gen=_optional(
                        nvml.nvmlDeviceGetMaxPcieLinkGeneration, handle, errors=errors
                    ),
                    pcie_width=_optional(nvml.nvmlDeviceGetMaxPcieLinkWidth, handle, errors=errors),
                    gpu_class=None if match is None else match.id,
                    source="nvml",
                )
            )
        return gpus
    except errors:
        return None
    finally:
        _optional(nvml.nvmlShutdown, errors=errors)


def _smi_value(raw: str) -> str | None:
    value = raw.strip()
    return (
        None if not value or value.startswith("[") or value in {"N/A", "Not Supported"} else value
    )


def _smi_int(raw: str) -> int | None:
    value = _smi_value(raw)
    try:
        return None if value is None else int(float(value))
    except ValueError:
        return None


def parse_smi_csv(text: str) -> list[LocalGpu]:
    """Parse ``nvidia-smi --query-gpu=<SMI_FIELDS> --format=csv,noheader,nounits`` output."""
    gpus: list[LocalGpu] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        cells = [cell.strip() for cell in line.split(",")]
        if len(cells) < len(SMI_FIELDS):
            cells += [""] * (len(SMI_FIELDS) - len(cells))
        row = dict(zip(SMI_FIELDS, cells, strict=False))
        total_mib = _smi_int(row["memory.total"])
        name = row["name"]
        if total_mib is None or not name:
            continue
        free_mib = _smi_int(row["memory.free"])
        total_gib = total_mib * MIB / GIB
        match = match_gpu_class(name, total_gib)
        gpus.append(
            LocalGpu(
                index=_smi_int(row["index"]) or len(gpus),
                name=name,
                memory_gib=round(total_gib, 2),
                free_gib=None if free_mib is None else round(free_mib * MIB / GIB, 2),
                uuid=_smi_value(row["uuid"]),
                driver_version=_smi_value(row["driver_version"]),
                compute_capability=_smi_value(row["compute_cap"]),
                pcie_gen=_smi_int(row["pcie.link.gen.max"]),
                pcie_width=_smi_int(row["pcie.link.width.max"]),
                gpu_class=None if match is None else match.id,
                source="nvidia-smi",
            )
        )
    return gpus


def detect_with_smi() -> list[LocalGpu] | None:
    """GPUs through ``nvidia-smi`` on PATH, or None when it is missing or fails."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        done = subprocess.run(
            [smi, f"--query-gpu={','.join(SMI_FIELDS)}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=SMI_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return parse_smi_csv(done.stdout)


def detect_gpus() -> list[LocalGpu]:
    """This machine's GPUs: NVML, else ``nvidia-smi``, else ``[]`` (no GPU is an answer)."""
    for detector in (detect_with_nvml, detect_with_smi):
        found = detector()
        if found is not None:
            return found
    return []
