"""Counts of the models AI-Toolkit trains that only it trains (Chroma, SDXL's UNet), built on
the meta device with the trainer's own classes: no weights are read.

Run as ``python aitk_shapes_harness.py AITK_SRC`` with AI-Toolkit's Python. Chroma is
AI-Toolkit's ``Chroma(chroma_params)`` (extensions_built_in/diffusion_models/chroma/src/
model.py); SDXL's UNet is diffusers' ``UNet2DConditionModel`` with the SDXL base 1.0
``unet/config.json`` values ([ext] the Hub file; the total checks them against the
published 2.567 B). LoRA counts follow AI-Toolkit's targets: every Linear of Chroma
(chroma_model.py:87 ``target_lora_modules = ['Chroma']``); the Linears inside the UNet's
``Transformer2DModel``s (kohya's SDXL targets, toolkit/lora_special.py).

Prints ``KURA-REPORT {json}``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

SRC = Path(sys.argv[1]).resolve()
sys.path.insert(0, str(SRC))

import torch  # noqa: E402
from diffusers import UNet2DConditionModel  # noqa: E402
from diffusers.models.attention import BasicTransformerBlock  # noqa: E402

SDXL_UNET = {
    "sample_size": 128,
    "in_channels": 4,
    "out_channels": 4,
    "down_block_types": ["DownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D"],
    "up_block_types": ["CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "UpBlock2D"],
    "block_out_channels": [320, 640, 1280],
    "layers_per_block": 2,
    "transformer_layers_per_block": [1, 2, 10],
    "cross_attention_dim": 2048,
    "attention_head_dim": [5, 10, 20],
    "use_linear_projection": True,
    "addition_embed_type": "text_time",
    "addition_time_embed_dim": 256,
    "projection_class_embeddings_input_dim": 2816,
}


def _linears(module: torch.nn.Module) -> list[torch.nn.Linear]:
    return [m for m in module.modules() if isinstance(m, torch.nn.Linear)]


def _weights(module: torch.nn.Module) -> int:
    return sum(m.weight.numel() for m in _linears(module))


def _lora(linears: list[torch.nn.Linear]) -> int:
    return sum(m.in_features + m.out_features for m in linears)


def chroma() -> dict[str, Any]:
    from extensions_built_in.diffusion_models.chroma.src.model import Chroma, chroma_params

    with torch.device("meta"):
        model = Chroma(chroma_params)
    return {
        "params": sum(p.numel() for p in model.parameters()),
        "double": [len(model.double_blocks), _weights(model.double_blocks[0])],
        "single": [len(model.single_blocks), _weights(model.single_blocks[0])],
        "lora_per_rank": _lora(_linears(model)),
        "lora_modules": len(_linears(model)),
        "heads": model.num_heads,
    }


def sdxl() -> dict[str, Any]:
    with torch.device("meta"):
        unet = UNet2DConditionModel(**SDXL_UNET)
    layers = [m for m in unet.modules() if isinstance(m, BasicTransformerBlock)]
    cross_kv = sum(b.attn2.to_k.weight.numel() + b.attn2.to_v.weight.numel() for b in layers)
    by_width: dict[str, int] = {}
    for block in layers:
        key = str(block.norm1.normalized_shape[0])
        by_width[key] = by_width.get(key, 0) + 1
    targets = [m for m in unet.modules() if type(m).__name__ == "Transformer2DModel"]
    linears = [lin for t in targets for lin in _linears(t)]
    return {
        "params": sum(p.numel() for p in unet.parameters()),
        "layers_by_width": by_width,
        "cross_kv": cross_kv,
        "lora_per_rank": _lora(linears),
        "lora_modules": len(linears),
    }


print("KURA-REPORT " + json.dumps({"chroma": chroma(), "sdxl": sdxl()}))
