"""Host facts a plan needs: RAM (block swap pins weights there), free disk, CPU count."""

from __future__ import annotations

import os
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

__all__ = ["HostFacts", "host_facts", "read_meminfo"]

KIB = 1024
GIB = 2**30
MEMINFO = Path("/proc/meminfo")


@dataclass(frozen=True)
class HostFacts:
    """RAM in GiB (None where /proc/meminfo is unavailable), disk free at ``disk_path``."""

    ram_total_gib: float | None
    ram_available_gib: float | None
    disk_path: str
    disk_free_gib: float
    cpu_count: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def read_meminfo(path: Path = MEMINFO) -> dict[str, int]:
    """``/proc/meminfo`` as bytes per key; empty when the file cannot be read."""
    try:
        text = path.read_text()
    except OSError:
        return {}
    values: dict[str, int] = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if not parts or not parts[0].isdigit():
            continue
        scale = KIB if len(parts) > 1 and parts[1].lower() == "kb" else 1
        values[key.strip()] = int(parts[0]) * scale
    return values


def _existing(path: Path) -> Path:
    """``path`` or its nearest existing parent (a run folder may not exist yet)."""
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _cpu_count() -> int:
    affinity = getattr(os, "sched_getaffinity", None)
    if affinity is not None:
        return len(affinity(0))
    return os.cpu_count() or 1


def host_facts(path: Path | str = ".", meminfo: Path = MEMINFO) -> HostFacts:
    """RAM from ``meminfo``, free disk at ``path`` (or its nearest existing parent), CPUs."""
    info = read_meminfo(meminfo)
    total = info.get("MemTotal")
    available = info.get("MemAvailable", info.get("MemFree"))
    disk = _existing(Path(path))
    return HostFacts(
        ram_total_gib=None if total is None else round(total / GIB, 2),
        ram_available_gib=None if available is None else round(available / GIB, 2),
        disk_path=str(disk),
        disk_free_gib=round(shutil.disk_usage(disk).free / GIB, 2),
        cpu_count=_cpu_count(),
    )
