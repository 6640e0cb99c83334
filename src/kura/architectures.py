"""Kura's architecture ids: one per trainable model family (any backend), in one place.

Docs, cards, bundles, adapters and the estimator all key by these ids.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["ARCHITECTURES", "ARCHITECTURE_IDS"]

ARCHITECTURES: Mapping[str, str] = MappingProxyType(
    {
        "hunyuan_video": "HunyuanVideo",
        "hunyuan_video_1_5": "HunyuanVideo 1.5",
        "wan": "Wan 2.1/2.2",
        "framepack": "FramePack",
        "flux_kontext": "FLUX.1 Kontext",
        "flux2": "FLUX.2",
        "qwen_image": "Qwen-Image",
        "zimage": "Z-Image",
        "kandinsky5": "Kandinsky 5",
        "hidream_o1": "HiDream-O1",
        "ideogram4": "Ideogram 4",
        "krea2": "Krea 2",
        "sdxl": "Stable Diffusion XL",
        "chroma": "Chroma",
        "moss_image": "MOSS-Image",
    }
)
"""Kura architecture id → display name."""

ARCHITECTURE_IDS: tuple[str, ...] = tuple(ARCHITECTURES)
