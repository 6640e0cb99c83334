"""Build a tiny random SDXL diffusers pipeline; run with the AI-Toolkit environment's Python.

usage: python tinybuilder.py OUT_DIR [--seed N]

Every part is one of diffusers' or transformers' own classes with a tiny config, saved with
``save_pretrained``, so ``StableDiffusionXLPipeline.from_pretrained(OUT_DIR)`` (what
AI-Toolkit's legacy ``sdxl`` loader calls for a folder) loads it with no hub access: a
``UNet2DConditionModel`` with SDXL's ``text_time`` conditioning, a ``CLIPTextModel`` and a
``CLIPTextModelWithProjection`` whose CLIP BPE tokenizers are built from a byte-level
vocabulary written here, an ``AutoencoderKL`` with SDXL's 8x downscale, and SDXL's Euler
scheduler config. Seeded: the same seed writes the same weights. About 1.1 M parameters.

Standard library at import (Kura imports nothing of it); prints one JSON line: the folder,
the parameter counts, and every UNet module as ``[name, class, kernel]`` (the caller
derives the LoRA targets from it).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path
from typing import Any

TEXT_HIDDEN = 32
PROJECTION = 32
TIME_EMBED = 8
MAX_TOKENS = 77
SPECIALS = ("<|startoftext|>", "<|endoftext|>")
MERGES = ("k u", "r a</w>", "ku ra</w>", "s m", "i l", "i r", "g ir")
"""A few real merges (``kura`` is one token), so the tokenizer is a true BPE."""


def _byte_chars() -> list[str]:
    """GPT-2/CLIP's reversible byte → printable character table."""
    keep = {*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1)}
    keep |= set(range(ord("®"), ord("ÿ") + 1))
    chars: list[str] = []
    extra = 0
    for byte in range(256):
        if byte in keep:
            chars.append(chr(byte))
        else:
            chars.append(chr(256 + extra))
            extra += 1
    return chars


def vocabulary() -> dict[str, int]:
    """Every byte character alone and word-final, the merged pieces, then the specials."""
    chars = _byte_chars()
    tokens = [*chars, *(c + "</w>" for c in chars)]
    tokens += [merge.replace(" ", "") for merge in MERGES]
    tokens += SPECIALS
    return {token: index for index, token in enumerate(dict.fromkeys(tokens))}


def _tokenizer(transformers: Any) -> Any:
    return transformers.CLIPTokenizer(
        vocab=vocabulary(),
        merges=[tuple(merge.split(" ")) for merge in MERGES],
        model_max_length=MAX_TOKENS,
        bos_token=SPECIALS[0],
        eos_token=SPECIALS[1],
        unk_token=SPECIALS[1],
        pad_token=SPECIALS[1],
    )


def _unet(diffusers: Any) -> Any:
    return diffusers.UNet2DConditionModel(
        sample_size=8,
        in_channels=4,
        out_channels=4,
        block_out_channels=(32, 64),
        layers_per_block=1,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        attention_head_dim=(2, 4),
        transformer_layers_per_block=(1, 1),
        cross_attention_dim=2 * TEXT_HIDDEN,
        norm_num_groups=32,
        use_linear_projection=True,
        addition_embed_type="text_time",
        addition_time_embed_dim=TIME_EMBED,
        projection_class_embeddings_input_dim=PROJECTION + 6 * TIME_EMBED,
    )


def _vae(diffusers: Any) -> Any:
    return diffusers.AutoencoderKL(
        in_channels=3,
        out_channels=3,
        down_block_types=("DownEncoderBlock2D",) * 4,
        up_block_types=("UpDecoderBlock2D",) * 4,
        block_out_channels=(8, 8, 8, 8),
        layers_per_block=1,
        latent_channels=4,
        norm_num_groups=8,
        sample_size=64,
        scaling_factor=0.13025,
    )


def _scheduler(diffusers: Any) -> Any:
    return diffusers.EulerDiscreteScheduler(
        beta_start=0.00085,
        beta_end=0.012,
        beta_schedule="scaled_linear",
        num_train_timesteps=1000,
        steps_offset=1,
        timestep_spacing="leading",
        prediction_type="epsilon",
    )


def build(out: Path, seed: int) -> dict[str, object]:
    torch = importlib.import_module("torch")
    diffusers = importlib.import_module("diffusers")
    transformers = importlib.import_module("transformers")
    tokenizer = _tokenizer(transformers)
    text_config = transformers.CLIPTextConfig(
        vocab_size=len(tokenizer),
        hidden_size=TEXT_HIDDEN,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        max_position_embeddings=MAX_TOKENS,
        projection_dim=PROJECTION,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    text_encoder = transformers.CLIPTextModel(text_config)
    torch.manual_seed(seed + 1)
    text_encoder_2 = transformers.CLIPTextModelWithProjection(text_config)
    torch.manual_seed(seed + 2)
    unet = _unet(diffusers)
    torch.manual_seed(seed + 3)
    vae = _vae(diffusers)
    pipe = diffusers.StableDiffusionXLPipeline(
        vae=vae,
        text_encoder=text_encoder,
        text_encoder_2=text_encoder_2,
        tokenizer=tokenizer,
        tokenizer_2=tokenizer,
        unet=unet,
        scheduler=_scheduler(diffusers),
    )
    pipe.save_pretrained(str(out), safe_serialization=True)
    parts = {
        "unet": unet,
        "vae": vae,
        "text_encoder": text_encoder,
        "text_encoder_2": text_encoder_2,
    }
    counts = {name: sum(p.numel() for p in part.parameters()) for name, part in parts.items()}
    modules = [
        [name, type(module).__name__, list(getattr(module, "kernel_size", ())) or None]
        for name, module in unet.named_modules()
        if name
    ]
    return {"root": str(out), "parameters": counts, "unet_modules": modules}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="a tiny random SDXL diffusers pipeline")
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(json.dumps(build(args.out, args.seed)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
