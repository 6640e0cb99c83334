"""The KohakuMoss backend (MOSS-Image LoRA through KohakuMoss 0.1.0 and kogine).

KohakuMoss lives in its own environment (``env``), reached only through ``envhelper.py``
run with that environment's Python (``queries``). Kura compiles kogine configs over
KohakuMoss's own preset stack (``configfile``, ``compile``), type-checks knobs first
(``knobs``), takes memory from KohakuMoss's estimator (``memory``), follows metrics.jsonl
and log.txt (``follow``), diagnoses failures (``diagnose``) and checks exported keys
(``exportcheck``). Nothing here imports torch.
"""

from __future__ import annotations
