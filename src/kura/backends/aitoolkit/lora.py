"""How AI-Toolkit writes a LoRA file, for ``kura export``.

Every registered DiT class saves PEFT keys, ``<prefix><module>.lora_A.weight`` /
``.lora_B.weight`` with no alpha tensors (alpha = rank, ``toolkit/lora_special.py``), and 13
classes rename ``transformer.`` to ``diffusion_model.`` before saving
(``convert_lora_weights_before_save``, e.g. ``qwen_image/qwen_image.py``): that is Kura's
``diffusers`` export layout. Legacy UNet models (SDXL) save kohya keys
(``lora_unet_…lora_down/lora_up`` + ``.alpha``): Kura's ``musubi`` layout.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["key_style"]


def key_style(keys: Iterable[str], architecture: str) -> str:
    """``diffusers`` for PEFT files, ``musubi`` for kohya-style files (by their keys)."""
    names = list(keys)
    if any(k.endswith((".lora_A.weight", ".lora_B.weight")) for k in names):
        return "diffusers"
    return "musubi"
