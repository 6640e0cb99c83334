"""Which GPU class a plan is for: ``--gpu``, else run.yaml's ``execution.gpu_class``, else the
local GPU. Having none is a valid answer for the machine, but a plan needs one."""

from __future__ import annotations

from typing import Any

from kura.errors import UsageError

__all__ = ["choose_gpu"]


def choose_gpu(explicit: str | None, written: str | None) -> tuple[Any, str]:
    """(GpuClass, how it was chosen)."""
    from kura.planning.detect import detect_gpus
    from kura.planning.gpus import get_gpu_class

    if explicit:
        return get_gpu_class(explicit), "--gpu"
    if written:
        return get_gpu_class(written), "run.yaml execution.gpu_class"
    for local in detect_gpus():
        if local.gpu_class:
            return get_gpu_class(local.gpu_class), f"local GPU {local.index}: {local.name}"
    raise UsageError(
        "no GPU to plan for: none found on this machine and none named",
        hint="pass --gpu CLASS (see `kura gpus`), or set execution.gpu_class in run.yaml",
    )
