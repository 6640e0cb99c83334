"""A tiny Musubi-style LoRA generator for tests: real Musubi key names, real data.

Module names come from a base DiT fixture layout (``kura.models.layouts``) through
Musubi's naming (``kura.export.layout.base_modules``), filtered by the default exclusions
each Musubi network module applies; factors are small random arrays of the right shapes.
"""

from __future__ import annotations

import re
from pathlib import Path

import ml_dtypes
import numpy as np

from kura.export.layout import BaseModule, base_modules, underscored
from kura.export.tensorio import serialize
from kura.models.layouts import component_layout

# Musubi's default exclude patterns per network module (v0.3.4 networks/lora_*.py),
# applied to the module path; plus "inside the transformer blocks", which is what
# each module's TARGET_REPLACE_MODULES amounts to.
EXCLUDE = {
    "wan": r"(patch_embedding|text_embedding|time_embedding|time_projection|norm|head)",
    "zimage": r"(_modulation|_refiner|adaLN)",
    "hunyuan_video": r"(img_mod|txt_mod|modulation)",
    "hunyuan_video_1_5": r"(_in\b)",
    "framepack": r"(norm)",
    "flux_kontext": r"(norm|_mod|modulation)",
    "flux2": r"(norm)",
    "qwen_image": r"(_mod)",
    "kandinsky5": r"(modulation)",
    "krea2": r"(?!)",
    "hidream_o1": r"(visual)",
}
BLOCKS = (
    r"(^|\.)(blocks|layers|double_blocks|single_blocks|transformer_blocks|"
    r"single_transformer_blocks|visual_transformer_blocks|text_transformer_blocks)\.\d+\."
)

COMPONENT = {
    "wan": "wan-t2v-14b-dit",
    "zimage": "zimage-dit",
    "hunyuan_video": "hunyuan-video-dit",
    "hunyuan_video_1_5": "hunyuan-video-1.5-dit",
    "framepack": "framepack-dit",
    "flux_kontext": "flux1-dit",
    "flux2": "flux2-klein-4b-dit",
    "qwen_image": "qwen-image-dit",
    "kandinsky5": "kandinsky5-video-lite-dit",
    "krea2": "krea2-dit",
    "hidream_o1": "hidream-o1-dit",
}


def base_shapes(architecture: str) -> dict[str, tuple[int, ...]]:
    layout = component_layout(COMPONENT[architecture])
    return {name: tuple(shape) for name, (_, shape) in layout.items()}


def trained_modules(architecture: str, *, limit: int = 3) -> dict[str, BaseModule]:
    """The modules Musubi would adapt, in the first ``limit`` blocks of each block list."""
    modules = base_modules(base_shapes(architecture), architecture)
    chosen = {}
    for path, module in modules.items():
        block = re.search(BLOCKS, path)
        if block is None or re.search(EXCLUDE[architecture], path):
            continue
        index = int(re.search(r"\.(\d+)\.", "." + path[block.start() :]).group(1))
        if index < limit:
            chosen[path] = module
    assert chosen, f"no trainable modules found for {architecture}"
    return chosen


def musubi_lora(
    architecture: str,
    *,
    rank: int = 2,
    alpha: float = 1.0,
    dtype: object = ml_dtypes.bfloat16,
    seed: int = 0,
    limit: int = 3,
) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    tensors: dict[str, np.ndarray] = {}
    for path, module in sorted(trained_modules(architecture, limit=limit).items()):
        root = "lora_unet_" + underscored(path)
        down = rng.standard_normal((rank, module.in_features), dtype=np.float32) * 0.1
        up = rng.standard_normal((module.out_features, rank), dtype=np.float32) * 0.1
        tensors[root + ".lora_down.weight"] = down.astype(dtype)
        tensors[root + ".lora_up.weight"] = up.astype(dtype)
        tensors[root + ".alpha"] = np.asarray(alpha, dtype=np.float32).astype(dtype)
    return tensors


MUSUBI_METADATA = {
    "ss_network_module": "networks.lora",
    "ss_network_dim": "2",
    "ss_network_alpha": "1.0",
    "sshs_model_hash": "0" * 64,
    "modelspec.architecture": "Z-Image/lora",
}


def write_lora(
    path: Path, tensors: dict[str, np.ndarray], metadata: dict[str, str] | None = None
) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(serialize(tensors, dict(MUSUBI_METADATA if metadata is None else metadata)))
    return path


def delta(down: np.ndarray, up: np.ndarray, alpha: float | None) -> np.ndarray:
    """The weight change a LoRA module applies to a fixed probe vector (float64): comparing
    ``ΔW @ x`` instead of ``ΔW`` keeps 5120×5120 products out of the tests."""
    rank = down.shape[0]
    scale = 1.0 if alpha is None else alpha / rank
    probe = np.random.default_rng(7).standard_normal(down.shape[1])
    return up.astype(np.float64) @ (down.astype(np.float64) @ probe) * scale
