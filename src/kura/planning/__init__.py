"""Planning: GPU facts and the one fit ladder every backend's memory aids are walked by.

A pure library. Nothing here touches the network; only :func:`detect_gpus` (NVML, then
``nvidia-smi``) and :func:`host_facts` (``/proc/meminfo``, disk usage) look at the machine.
How much memory and time a step takes is each backend's estimator's business
(``kura.backends.<name>``); this package walks the aids a backend offers.

    gpus         GPU class catalog (memory, bf16 TFLOP/s, host link, cloud offers)
    detect/host  this machine's GPUs and RAM/disk/CPUs
    ladder       walk(problem) -> the fastest choice of memory aids that fits
"""

from __future__ import annotations
