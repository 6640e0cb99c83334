"""What GPU a step actually ran on, and its memory during the run, read where it ran.

The supervisor runs on the step's machine (host executor; the docker executor's containers
share the host's GPUs) and reads NVML (``nvidia-ml-py``) there: the device name, its
catalog class and memory, and every ``interval`` seconds the memory in use — the step's own
processes' use when NVML lists them (matched by the step's session id), else the device's.
Measured facts are credited to this record, never to the plan: a run whose GPU could not be
read says ``gpu_class: null`` with why, and no recalibration is taken from it.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

__all__ = ["GPU_SAMPLE_LIMIT", "GpuReading", "GpuWatch", "read_gpu"]

GIB = 2**30
GPU_SAMPLE_LIMIT = 720
"""Samples kept per attempt; older ones are thinned (every other one dropped) past this."""


@dataclass(frozen=True)
class GpuReading:
    """One look at the step's GPU(s)."""

    name: str | None
    gpu_class: str | None
    memory_gib: float | None
    used_gib: float | None
    process_gib: float | None
    source: str

    def identity(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "gpu_class": self.gpu_class,
            "memory_gib": self.memory_gib,
            "source": self.source,
        }


def _load(nvml: ModuleType | None) -> ModuleType | None:
    if nvml is not None:
        return nvml
    try:
        return importlib.import_module("pynvml")
    except ImportError:
        return None


def _errors(module: ModuleType) -> tuple[type[BaseException], ...]:
    error = getattr(module, "NVMLError", None)
    base: tuple[type[BaseException], ...] = (OSError, RuntimeError, AttributeError)
    return (*base, error) if isinstance(error, type) and issubclass(error, BaseException) else base


def _session_pids(session: int | None) -> set[int]:
    """Pids whose session id is ``session`` (the step was started in its own session)."""
    if session is None:
        return set()
    found = set()
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 3 and int(fields[3]) == session:  # state ppid pgrp session
            found.add(int(entry))
    return found


def read_gpu(nvml: ModuleType | None = None, *, session: int | None = None) -> GpuReading:
    """Read the GPU(s) of this machine; an unreadable GPU is a reading with ``name: None``
    and the reason in ``source``."""
    from kura.planning.gpus import match_gpu_class

    module = _load(nvml)
    if module is None:
        return GpuReading(None, None, None, None, None, "unknown: nvidia-ml-py is not importable")
    errors = _errors(module)
    try:
        module.nvmlInit()
    except errors as exc:
        return GpuReading(None, None, None, None, None, f"unknown: NVML did not start ({exc})")
    try:
        mine = _session_pids(session)
        best: GpuReading | None = None
        for index in range(module.nvmlDeviceGetCount()):
            handle = module.nvmlDeviceGetHandleByIndex(index)
            raw = module.nvmlDeviceGetName(handle)
            name = raw.decode() if isinstance(raw, bytes) else str(raw)
            memory = module.nvmlDeviceGetMemoryInfo(handle)
            process = _process_bytes(module, handle, mine, errors)
            match = match_gpu_class(name, memory.total / GIB)
            reading = GpuReading(
                name=name,
                gpu_class=None if match is None else match.id,
                memory_gib=round(memory.total / GIB, 2),
                used_gib=round(memory.used / GIB, 3),
                process_gib=None if process is None else round(process / GIB, 3),
                source="nvml on the step's machine",
            )
            if best is None or (process or 0) > (best.process_gib or 0) * GIB:
                best = reading
        return best or GpuReading(None, None, None, None, None, "unknown: NVML lists no device")
    except errors as exc:
        return GpuReading(None, None, None, None, None, f"unknown: NVML failed ({exc})")
    finally:
        with contextlib.suppress(*errors):
            module.nvmlShutdown()


def _process_bytes(
    module: ModuleType, handle: Any, mine: set[int], errors: tuple[type[BaseException], ...]
) -> int | None:
    if not mine:
        return None
    try:
        processes = module.nvmlDeviceGetComputeRunningProcesses(handle)
    except errors:
        return None
    used = [p.usedGpuMemory for p in processes if p.pid in mine and p.usedGpuMemory]
    return sum(used) if used else None


class GpuWatch:
    """Sample the GPU every ``interval`` seconds while a step runs; ``record`` receives each
    reading (the supervisor writes it into state.json)."""

    def __init__(
        self,
        record: Callable[[GpuReading], None],
        *,
        session: int | None,
        interval: float = 10.0,
        nvml: ModuleType | None = None,
    ) -> None:
        self._record = record
        self._session = session
        self._interval = interval
        self._nvml = nvml
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kura-gpu-watch", daemon=True)

    def __enter__(self) -> GpuWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=self._interval + 5)

    def _run(self) -> None:
        while True:
            reading = read_gpu(self._nvml, session=self._session)
            with contextlib.suppress(Exception):  # a failed state write must never stop the step
                self._record(reading)
            if reading.name is None or self._stop.wait(self._interval):
                return
