"""LoRA export: Musubi LoRA files converted to the layout ComfyUI or diffusers loads,
verified against the base model's real module names, plus post-hoc EMA over epochs.

Numeric work uses numpy (and ml_dtypes for bf16/fp8), imported lazily inside functions so
that ``kura --help`` never pays for it.
"""

from __future__ import annotations
