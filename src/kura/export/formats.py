"""Key-format tables, per architecture, as data (with where each fact comes from).

Three names matter for one adapted Linear layer:

- the **base** name: the module path in the DiT file Musubi loads (its safetensors header);
- the **Musubi** name: the module path in Musubi's model class, which its LoRA network
  writes as ``lora_unet_`` + path with ``.`` → ``_`` (``networks/lora.py``). It equals the
  base name except where Musubi's loader renames or splits fused tensors (``base_splits``,
  ``base_renames``);
- the **ComfyUI** name: what ComfyUI's loader accepts. ComfyUI maps, for every weight
  ``diffusion_model.P.weight`` of its own model, the roots ``lora_unet_<P, . → _>`` and
  ``diffusion_model.P`` (``comfy/lora.py``, ``model_lora_keys_unet``); family aliases add
  more (research: model-signatures.md §8.4).

Formats written by ``kura export``:

``musubi``
    the trainer's own layout: ``lora_unet_<path>.lora_down.weight`` / ``.lora_up.weight`` /
    ``.alpha``.
``diffusers``
    the PEFT layout Musubi's ``convert_lora.py --target other`` writes:
    ``diffusion_model.<path>.lora_A.weight`` / ``.lora_B.weight``, no alpha (each factor
    pre-multiplied by ``sqrt(alpha / rank)``).
``comfyui``
    per architecture, see :data:`COMFYUI`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from kura.architectures import ARCHITECTURES

__all__ = [
    "ARCHITECTURES",
    "BASE_PREFIXES",
    "COMFYUI",
    "DIFFUSERS_PREFIX",
    "FORMATS",
    "MUSUBI_NAMES",
    "MUSUBI_PREFIX",
    "ComfyRule",
    "MusubiNames",
    "comfy_rule",
    "musubi_names",
]

FORMATS = ("comfyui", "diffusers", "musubi")

MUSUBI_PREFIX = "lora_unet_"
DIFFUSERS_PREFIX = "diffusion_model."


BASE_PREFIXES = ("model.diffusion_model.", "diffusion_model.", "transformer.")
"""Key prefixes a DiT file may carry in front of its module paths (ComfyUI full
checkpoints, diffusers exports); stripped before matching."""


@dataclass(frozen=True)
class MusubiNames:
    """How Musubi's module names relate to the base file's tensor names."""

    base_splits: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """(fused base module suffix, Musubi part suffixes): the fused weight is split into equal
    parts along its output dimension when Musubi loads it."""
    base_renames: tuple[tuple[str, str], ...] = ()
    """(base module suffix, Musubi module suffix)."""
    source: str = ""


MUSUBI_NAMES: Mapping[str, MusubiNames] = MappingProxyType(
    {
        "zimage": MusubiNames(
            base_splits=(
                ("attention.qkv", ("attention.to_q", "attention.to_k", "attention.to_v")),
            ),
            base_renames=(("attention.out", "attention.to_out.0"),),
            source=(
                "musubi-tuner v0.3.4 src/musubi_tuner/zimage/zimage_model.py "
                "load_zimage_model: ComfyUI `attention.qkv` split into to_q/to_k/to_v, "
                "`attention.out` ↔ `attention.to_out.0`"
            ),
        ),
        "hunyuan_video_1_5": MusubiNames(
            base_splits=(
                ("img_attn_qkv", ("img_attn_q", "img_attn_k", "img_attn_v")),
                ("txt_attn_qkv", ("txt_attn_q", "txt_attn_k", "txt_attn_v")),
            ),
            source=(
                "musubi-tuner v0.3.4 hunyuan_video_1_5_models.py "
                "comfyui_hunyuan_video_1_5_weight_split_hook (ComfyUI repackaged files fuse "
                "q/k/v; official files keep img_attn_q/k/v)"
            ),
        ),
    }
)
"""Architectures whose Musubi module names differ from some base-file names; all others
use the base names unchanged."""


@dataclass(frozen=True)
class ComfyRule:
    """What ``--format comfyui`` does for one architecture."""

    mode: Literal["copy", "diffusers", "fuse", "unsupported"]
    source: str
    renames: tuple[tuple[str, str], ...] = ()
    """(Musubi module suffix, ComfyUI module suffix), for ``fuse``."""
    fusions: tuple[tuple[tuple[str, ...], str], ...] = ()
    """(Musubi part suffixes in order, fused ComfyUI module suffix), for ``fuse``."""
    hint: str = ""


_GENERIC = "ComfyUI comfy/lora.py model_lora_keys_unet maps lora_unet_<native path>"

COMFYUI: Mapping[str, ComfyRule] = MappingProxyType(
    {
        "wan": ComfyRule(
            "copy",
            f"{_GENERIC}; Musubi's Wan names are the native Wan names ComfyUI uses "
            "(musubi docs/wan.md: LoRAs load in ComfyUI as trained; research §8.4)",
        ),
        "flux_kontext": ComfyRule(
            "copy",
            f"{_GENERIC}; Musubi uses the BFL module names, which are ComfyUI's Flux names "
            "(research model-signatures.md §8.4)",
        ),
        "flux2": ComfyRule(
            "copy",
            f"{_GENERIC}; Musubi uses the BFL FLUX.2 module names, ComfyUI's Flux2 model "
            "derives from its Flux model with the same names (research §8.4, derived)",
        ),
        "qwen_image": ComfyRule(
            "copy",
            f"{_GENERIC}; Qwen-Image native names are the diffusers names Musubi uses "
            "(research §8.4; musubi convert_lora.py QWEN_IMAGE_KEYS)",
        ),
        "hunyuan_video": ComfyRule(
            "diffusers",
            "musubi-tuner v0.3.4 docs/hunyuan_video.md: convert with convert_lora.py "
            "--target other for ComfyUI; ComfyUI maps diffusion_model.<Tencent name> onto its "
            "renamed weights (research §8.4), while lora_unet_…img_mlp_fc1 is not mapped",
        ),
        "zimage": ComfyRule(
            "fuse",
            "musubi-tuner v0.3.4 src/musubi_tuner/networks/convert_z_image_lora_to_comfy.py "
            "(attention_to_out_0 → attention_out; to_q/to_k/to_v fused into attention_qkv "
            "with a block-diagonal up, alpha × 3); ComfyUI's Z-Image names are "
            "layers.N.attention.qkv / attention.out",
            renames=(("attention.to_out.0", "attention.out"),),
            fusions=((("attention.to_q", "attention.to_k", "attention.to_v"), "attention.qkv"),),
        ),
        "hunyuan_video_1_5": ComfyRule(
            "fuse",
            "musubi-tuner v0.3.4 src/musubi_tuner/networks/"
            "convert_hunyuan_video_1_5_lora_to_comfy.py (img/txt_mlp_fc1/fc2 → _0/_2, "
            "img/txt_mod_linear → _mod_lin, img/txt_attn_q/k/v fused into _attn_qkv, "
            "alpha × 3)",
            renames=(
                ("img_mlp.fc1", "img_mlp.0"),
                ("img_mlp.fc2", "img_mlp.2"),
                ("img_mod.linear", "img_mod.lin"),
                ("txt_mlp.fc1", "txt_mlp.0"),
                ("txt_mlp.fc2", "txt_mlp.2"),
                ("txt_mod.linear", "txt_mod.lin"),
            ),
            fusions=(
                (("img_attn_q", "img_attn_k", "img_attn_v"), "img_attn.qkv"),
                (("txt_attn_q", "txt_attn_k", "txt_attn_v"), "txt_attn.qkv"),
            ),
        ),
        "sdxl": ComfyRule(
            "unsupported",
            "AI-Toolkit saves SDXL LoRAs in kohya diffusers-UNet names (toolkit/lora_special.py "
            "non-PEFT path), which ComfyUI maps itself; Kura has no SDXL name table to verify "
            "them against the base checkpoint",
            hint="use the run's own file (output/<run>.safetensors): ComfyUI loads it as written",
        ),
        "chroma": ComfyRule(
            "unsupported",
            "AI-Toolkit's Chroma class keeps BFL-style module names; Kura has not checked them "
            "against ComfyUI's Chroma model",
            hint="use the run's own file and check ComfyUI's log for 'lora key not loaded'",
        ),
        "framepack": ComfyRule(
            "unsupported",
            "ComfyUI core has no FramePack model; FramePack runs through custom nodes",
            hint="export with --format musubi (for FramePack custom nodes) or --format diffusers",
        ),
        "kandinsky5": ComfyRule(
            "unsupported",
            "Kandinsky 5 module names in ComfyUI were not checked against Musubi's "
            "(research §8.4 says only 'likely yes', derived)",
            hint="export with --format musubi and check ComfyUI's log for 'lora key not loaded'",
        ),
        "krea2": ComfyRule(
            "unsupported",
            "ComfyUI's Krea 2 LoRA key mapping was not established for Musubi's names",
            hint="export with --format musubi or --format diffusers",
        ),
        "hidream_o1": ComfyRule(
            "unsupported",
            "ComfyUI's HiDream-O1 LoRA key mapping was not established for Musubi's names",
            hint="export with --format musubi or --format diffusers",
        ),
        "ideogram4": ComfyRule(
            "unsupported",
            "ComfyUI's Ideogram 4 LoRA key mapping was not established for Musubi's names "
            "(Musubi trains on the Comfy-Org layout, so a copy may well load; unverified)",
            hint="export with --format musubi and check ComfyUI's log for 'lora key not loaded'",
        ),
    }
)


def musubi_names(architecture: str) -> MusubiNames:
    """The base → Musubi name relation of ``architecture`` (identity when not listed)."""
    _check_architecture(architecture)
    return MUSUBI_NAMES.get(architecture, MusubiNames(source="Musubi uses the base names"))


def comfy_rule(architecture: str) -> ComfyRule:
    """The ComfyUI rule of ``architecture``."""
    _check_architecture(architecture)
    return COMFYUI[architecture]


def _check_architecture(architecture: str) -> None:
    from kura.errors import Unsupported

    if architecture not in ARCHITECTURES:
        raise Unsupported(
            f"LoRA export knows no architecture {architecture!r}",
            hint=f"known: {', '.join(ARCHITECTURES)}",
        )
