"""Planning facts: architecture shapes, GPU classes, local detection, the estimator, the ladder.

A pure library. Nothing here touches the network; only :func:`detect_gpus` (NVML, then
``nvidia-smi``) and :func:`host_facts` (``/proc/meminfo``, disk usage) look at the machine.

    shapes       model id -> DiT shape, weight bytes, LoRA size, activation coefficient
    gpus         GPU class catalog (memory, bf16 TFLOP/s, host link, cloud offers)
    detect/host  this machine's GPUs and RAM/disk/CPUs
    config       EstimateConfig, Bucket, validation against Musubi's rules
    tokens       tokens per bucket
    memory       peak-memory terms and host RAM
    steptime     FLOPs / throughput + exposed transfers
    calibration  measured points, the bench's data, the band per architecture
    estimate     estimate(config, gpu) -> Estimate
    ladder       fastest_fitting(recipe, gpu) -> FitPlan
"""

from __future__ import annotations

import importlib
from typing import Any

# Names resolve lazily (PEP 562) so that ``python -m kura.planning.gpus`` does not import its
# own module twice, and importing the package stays cheap. The function ``estimate`` is not
# re-exported: the submodule of the same name shadows it once imported; use
# ``from kura.planning.estimate import estimate``.
_EXPORTS = {
    "GPU_CLASSES": "gpus",
    "MEMORY_POINTS": "calibration",
    "MODEL_SHAPES": "shapes",
    "TIME_POINTS": "calibration",
    "BlockGroup": "shapes",
    "Bucket": "config",
    "CloudOffer": "gpus",
    "Estimate": "estimate",
    "EstimateConfig": "config",
    "FitPlan": "ladder",
    "GpuClass": "gpus",
    "HostFacts": "host",
    "LocalGpu": "detect",
    "ModelShape": "shapes",
    "RecipeOption": "ladder",
    "Rung": "ladder",
    "band_fraction": "calibration",
    "detect_gpus": "detect",
    "fastest_fitting": "ladder",
    "get_gpu_class": "gpus",
    "get_shape": "shapes",
    "host_facts": "host",
    "match_gpu_class": "gpus",
    "validate_config": "config",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kura.planning' has no attribute {name!r}")
    return getattr(importlib.import_module(f"kura.planning.{module}"), name)
