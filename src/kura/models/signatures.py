"""The signature table: how each known model file is recognised from its header alone.

This module is data. Each :class:`Component` names one kind of file (``flux2-vae``,
``qwen3-8b``, ``wan-t2v-14b-dit`` …), the role it plays, the Kura architectures it can serve
in that role, the models it cannot be told apart from (``candidates``), the numbers that
cross-checks compare (latent channels, text widths) and a :class:`Match` rule on tensor
names and shapes (after the key prefix is removed). Rules are tried in table order and the
first match wins, so more specific rules come first (HunyuanVideo before FLUX, FLUX.2 before
FLUX.1, the Qwen-Image variants before the generic Qwen-Image rule).

Shapes are tuples where ``None`` matches any size; a shape of ``None`` matches any shape.
Facts come from ``/work/shared/research/model-signatures.md`` (cited per row as ``§n``) and
``musubi.md`` (Musubi Tuner 0.3.4 docs and code).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kura.architectures import ARCHITECTURES

__all__ = [
    "ARCHITECTURES",
    "COMPONENTS",
    "DIT_PREFIXES",
    "LORA_TARGETS",
    "ROLES",
    "Component",
    "Match",
    "component_by_id",
]

Shape = tuple[int | None, ...] | None

ROLES = ("dit", "vae", "text_encoder", "image_encoder", "lora")
"""Roles a file can play. ``identify`` adds ``unknown`` for files no rule matches."""

# The architecture ids live in kura.architectures (re-exported here for the table's users).

DIT_PREFIXES = (
    "model.diffusion_model.",
    "diffusion_model.",
    "first_stage_model.",
    "vae.",
)
"""Key prefixes removed before matching (§2.1); the one holding the most keys wins when it
holds more than five. ``text_encoders.<name>.transformer.`` is handled as a pattern."""


@dataclass(frozen=True)
class Match:
    """A header rule: every ``has`` key present with a matching shape, no ``lacks`` key, and
    (when given) at least one ``any_of`` alternative fully present."""

    has: Mapping[str, Shape] = field(default_factory=dict)
    lacks: tuple[str, ...] = ()
    any_of: tuple[Mapping[str, Shape], ...] = ()


@dataclass(frozen=True)
class Component:
    """One recognisable kind of model file."""

    id: str
    role: str
    title: str
    match: Match
    architectures: tuple[str, ...] = ()
    candidates: tuple[str, ...] = ()
    variant: str | None = None
    facts: Mapping[str, Any] = field(default_factory=dict)
    format: str = "native"
    note: str = ""
    source: str = ""


def _c(**kwargs: Any) -> Component:
    return Component(**kwargs)


_KEY_NORM = (
    {"double_blocks.0.img_attn.norm.key_norm.scale": None},
    {"double_blocks.0.img_attn.norm.key_norm.weight": None},
)
_FLUX1_TEXT = {"t5-xxl": 4096, "clip-l": 768}
_HV_TEXT = {"llava-llama3-8b": 4096, "clip-l": 768}
_WAN_NOTE = (
    "Musubi trains Wan from the original/ComfyUI bf16 or fp16 files (fp8 e4m3fn only "
    "with --fp8_base, never ComfyUI fp8_scaled)"
)

COMPONENTS: tuple[Component, ...] = (
    # ---- DiTs: HunyuanVideo family before FLUX-like (§3.0, §3.8) -------------------------
    _c(
        id="hunyuan-video-1.5-dit",
        role="dit",
        title="the HunyuanVideo 1.5 DiT (2048 wide, 65 input channels)",
        match=Match(
            has={
                "txt_in.individual_token_refiner.blocks.0.norm1.weight": None,
                "img_in.proj.weight": (2048, 65, 1, 1, 1),
                "byt5_in.fc1.weight": (None, 1472),
            }
        ),
        architectures=("hunyuan_video_1_5",),
        candidates=(
            "HunyuanVideo 1.5 T2V 480p",
            "HunyuanVideo 1.5 T2V 720p",
            "HunyuanVideo 1.5 I2V 480p",
            "HunyuanVideo 1.5 I2V 720p",
        ),
        facts={
            "vae_latent_channels": 32,
            "text_inputs": {"qwen25-vl-7b": 3584, "byt5-small-glyph": 1472},
            "image_inputs": {"siglip-so400m": 1152},
        },
        source="model-signatures §3.8",
    ),
    _c(
        id="hunyuan-video-dit",
        role="dit",
        title="the HunyuanVideo T2V DiT (3072 wide, 16 input channels)",
        match=Match(
            has={
                "txt_in.individual_token_refiner.blocks.0.norm1.weight": None,
                "img_in.proj.weight": (3072, 16, 1, 2, 2),
                "vector_in.in_layer.weight": (3072, 768),
            }
        ),
        architectures=("hunyuan_video",),
        facts={"vae_latent_channels": 16, "text_inputs": _HV_TEXT},
        source="model-signatures §3.8",
    ),
    _c(
        id="skyreels-i2v-dit",
        role="dit",
        title="the SkyReels V1 I2V DiT (HunyuanVideo, 32 input channels)",
        match=Match(
            has={
                "txt_in.individual_token_refiner.blocks.0.norm1.weight": None,
                "img_in.proj.weight": (3072, 32, 1, 2, 2),
            }
        ),
        architectures=("hunyuan_video",),
        facts={"vae_latent_channels": 16, "text_inputs": _HV_TEXT},
        note="train with --dit_in_channels 32",
        source="model-signatures §3.8; musubi §1.2",
    ),
    _c(
        id="hunyuan-video-i2v-dit",
        role="dit",
        title="the HunyuanVideo I2V DiT (33 input channels)",
        match=Match(
            has={
                "txt_in.individual_token_refiner.blocks.0.norm1.weight": None,
                "img_in.proj.weight": (3072, 33, 1, 2, 2),
            }
        ),
        note="Musubi's HunyuanVideo trainer takes 16 (T2V) or 32 (SkyReels) input channels",
        source="model-signatures §3.8; musubi §1.2",
    ),
    # ---- FramePack before the diffusers-format FLUX rule (§3.9) ----------------------------
    _c(
        id="framepack-dit",
        role="dit",
        title="the FramePack I2V DiT (HunyuanVideo-based, with clean-latent embedders)",
        match=Match(
            has={
                "clean_x_embedder.proj.weight": (3072, 16, 1, 2, 2),
                "image_projection.up.weight": (9216, 1152),
                "x_embedder.proj.weight": (3072, 16, 1, 2, 2),
            }
        ),
        architectures=("framepack",),
        candidates=("FramePack I2V", "FramePack-F1 I2V"),
        facts={
            "vae_latent_channels": 16,
            "text_inputs": _HV_TEXT,
            "image_inputs": {"siglip-so400m": 1152},
        },
        source="model-signatures §3.9",
    ),
    # ---- FLUX.2 before FLUX.1 (§3.2) ----------------------------------------------------------
    _c(
        id="flux2-dev-dit",
        role="dit",
        title="the FLUX.2 dev DiT (6144 wide)",
        match=Match(
            has={
                "double_stream_modulation_img.lin.weight": None,
                "img_in.weight": (6144, 128),
                "txt_in.weight": (6144, 15360),
            }
        ),
        architectures=("flux2",),
        variant="dev",
        facts={
            "vae_latent_channels": 32,
            "text_inputs": {"mistral3-24b": 5120},
            "model_version": ("dev",),
        },
        source="model-signatures §3.2",
    ),
    _c(
        id="flux2-klein-9b-dit",
        role="dit",
        title="the FLUX.2 klein 9B DiT (4096 wide)",
        match=Match(
            has={
                "double_stream_modulation_img.lin.weight": None,
                "img_in.weight": (4096, 128),
                "txt_in.weight": (4096, 12288),
            }
        ),
        architectures=("flux2",),
        candidates=("FLUX.2 klein 9B", "FLUX.2 klein base 9B"),
        facts={
            "vae_latent_channels": 32,
            "text_inputs": {"qwen3-8b": 4096},
            "model_version": ("klein-9b", "klein-base-9b"),
        },
        source="model-signatures §3.2",
    ),
    _c(
        id="flux2-klein-4b-dit",
        role="dit",
        title="the FLUX.2 klein 4B DiT (3072 wide)",
        match=Match(
            has={
                "double_stream_modulation_img.lin.weight": None,
                "img_in.weight": (3072, 128),
                "txt_in.weight": (3072, 7680),
            }
        ),
        architectures=("flux2",),
        candidates=("FLUX.2 klein 4B", "FLUX.2 klein base 4B"),
        facts={
            "vae_latent_channels": 32,
            "text_inputs": {"qwen3-4b": 2560},
            "model_version": ("klein-4b", "klein-base-4b"),
        },
        source="model-signatures §3.2",
    ),
    _c(
        id="flux2-diffusers-dit",
        role="dit",
        title="a diffusers-format FLUX.2 transformer",
        match=Match(
            any_of=(
                {"double_stream_modulation_img.linear.weight": None},
                {"single_transformer_blocks.0.attn.to_qkv_mlp_proj.weight": None},
            )
        ),
        format="diffusers",
        note="Musubi needs the original BFL file (flux2-dev.safetensors, "
        "flux2-klein-*.safetensors), not the diffusers transformer/ folder",
        source="model-signatures §3.2; musubi §1.6",
    ),
    # ---- FLUX.1 (§3.1) --------------------------------------------------------------------------
    _c(
        id="flux1-dit",
        role="dit",
        title="a FLUX.1 guidance-distilled DiT (dev / Kontext dev / Krea dev)",
        match=Match(
            has={
                "img_in.weight": (3072, 64),
                "vector_in.in_layer.weight": (3072, 768),
                "txt_in.weight": (3072, 4096),
                "guidance_in.in_layer.weight": (3072, 256),
            },
            lacks=(
                "double_stream_modulation_img.lin.weight",
                "distilled_guidance_layer.in_proj.weight",
            ),
            any_of=_KEY_NORM,
        ),
        architectures=("flux_kontext",),
        candidates=("FLUX.1 Kontext dev", "FLUX.1 dev", "FLUX.1 Krea dev"),
        facts={"vae_latent_channels": 16, "text_inputs": _FLUX1_TEXT},
        note="Musubi's FLUX.1 trainer is for Kontext dev; a FLUX.1 dev file has the same header",
        source="model-signatures §3.1",
    ),
    _c(
        id="flux1-schnell-dit",
        role="dit",
        title="the FLUX.1 schnell DiT (no guidance input)",
        match=Match(
            has={"img_in.weight": (3072, 64), "vector_in.in_layer.weight": (3072, 768)},
            lacks=("guidance_in.in_layer.weight", "double_stream_modulation_img.lin.weight"),
            any_of=_KEY_NORM,
        ),
        variant="schnell",
        facts={"vae_latent_channels": 16, "text_inputs": _FLUX1_TEXT},
        source="model-signatures §3.1",
    ),
    _c(
        id="flux1-fill-dit",
        role="dit",
        title="the FLUX.1 Fill DiT (384 input features)",
        match=Match(
            has={"img_in.weight": (3072, 384), "vector_in.in_layer.weight": (3072, 768)},
            any_of=_KEY_NORM,
        ),
        variant="fill",
        facts={"vae_latent_channels": 16, "text_inputs": _FLUX1_TEXT},
        source="model-signatures §3.1",
    ),
    _c(
        id="flux1-control-dit",
        role="dit",
        title="a FLUX.1 Canny/Depth DiT (128 input features)",
        match=Match(
            has={"img_in.weight": (3072, 128), "vector_in.in_layer.weight": (3072, 768)},
            any_of=_KEY_NORM,
        ),
        candidates=("FLUX.1 Canny dev", "FLUX.1 Depth dev"),
        facts={"vae_latent_channels": 16, "text_inputs": _FLUX1_TEXT},
        source="model-signatures §3.1",
    ),
    _c(
        id="flux1-diffusers-dit",
        role="dit",
        title="a diffusers-format FLUX.1 transformer",
        match=Match(
            has={
                "x_embedder.weight": None,
                "context_embedder.weight": None,
                "single_transformer_blocks.0.proj_mlp.weight": None,
            }
        ),
        format="diffusers",
        note="Musubi needs the original BFL file (e.g. flux1-kontext-dev.safetensors), not the "
        "diffusers transformer/ folder",
        source="model-signatures §3.1; musubi §1.5",
    ),
    # ---- Wan (§3.7) ------------------------------------------------------------------------------
    _c(
        id="wan-vace-dit",
        role="dit",
        title="a Wan VACE DiT",
        match=Match(has={"head.modulation": None, "vace_patch_embedding.weight": None}),
        note="Kura maps no Musubi task to Wan VACE",
        source="model-signatures §3.7",
    ),
    _c(
        id="wan21-flf2v-14b-dit",
        role="dit",
        title="the Wan 2.1 FLF2V 14B DiT (36 input channels, CLIP image branch with frame "
        "positions)",
        match=Match(
            has={
                "head.modulation": None,
                "patch_embedding.weight": (5120, 36, 1, 2, 2),
                "img_emb.emb_pos": (1, 514, 1280),
            }
        ),
        architectures=("wan",),
        facts={
            "vae_latent_channels": 16,
            "text_inputs": {"umt5-xxl": 4096},
            "task": ("flf2v-14B",),
        },
        note=_WAN_NOTE,
        source="model-signatures §3.7",
    ),
    _c(
        id="wan21-i2v-14b-dit",
        role="dit",
        title="the Wan 2.1 I2V 14B DiT (36 input channels, CLIP image branch)",
        match=Match(
            has={
                "head.modulation": None,
                "patch_embedding.weight": (5120, 36, 1, 2, 2),
                "img_emb.proj.1.weight": (1280, 1280),
            }
        ),
        architectures=("wan",),
        candidates=("Wan 2.1 I2V 14B 480p", "Wan 2.1 I2V 14B 720p"),
        facts={"vae_latent_channels": 16, "text_inputs": {"umt5-xxl": 4096}, "task": ("i2v-14B",)},
        note=_WAN_NOTE,
        source="model-signatures §3.7",
    ),
    _c(
        id="wan21-fun-control-dit",
        role="dit",
        title="a Wan 2.1 Fun-Control DiT (48 input channels, image branch)",
        match=Match(
            has={
                "head.modulation": None,
                "patch_embedding.weight": (None, 48, 1, 2, 2),
                "img_emb.proj.1.weight": None,
            }
        ),
        architectures=("wan",),
        candidates=("Wan 2.1 Fun-Control 1.3B", "Wan 2.1 Fun-Control 14B"),
        facts={
            "vae_latent_channels": 16,
            "text_inputs": {"umt5-xxl": 4096},
            "task": ("t2v-1.3B-FC", "t2v-14B-FC", "i2v-14B-FC"),
        },
        note=_WAN_NOTE,
        source="model-signatures §3.7",
    ),
    _c(
        id="wan22-i2v-a14b-dit",
        role="dit",
        title="a Wan 2.2 I2V A14B expert DiT (36 input channels, no CLIP branch)",
        match=Match(
            has={"head.modulation": None, "patch_embedding.weight": (5120, 36, 1, 2, 2)},
            lacks=("img_emb.proj.1.weight",),
        ),
        architectures=("wan",),
        candidates=("Wan 2.2 I2V A14B high-noise", "Wan 2.2 I2V A14B low-noise"),
        facts={"vae_latent_channels": 16, "text_inputs": {"umt5-xxl": 4096}, "task": ("i2v-A14B",)},
        note=_WAN_NOTE,
        source="model-signatures §3.7",
    ),
    _c(
        id="wan-t2v-14b-dit",
        role="dit",
        title="a Wan 14B text-to-video DiT (16 input channels)",
        match=Match(
            has={"head.modulation": None, "patch_embedding.weight": (5120, 16, 1, 2, 2)},
            lacks=("img_emb.proj.1.weight",),
        ),
        architectures=("wan",),
        candidates=("Wan 2.1 T2V 14B", "Wan 2.2 T2V A14B high-noise", "Wan 2.2 T2V A14B low-noise"),
        facts={
            "vae_latent_channels": 16,
            "text_inputs": {"umt5-xxl": 4096},
            "task": ("t2v-14B", "t2i-14B", "t2v-A14B"),
        },
        note=_WAN_NOTE,
        source="model-signatures §3.7",
    ),
    _c(
        id="wan21-t2v-1.3b-dit",
        role="dit",
        title="the Wan 2.1 T2V 1.3B DiT (1536 wide)",
        match=Match(
            has={"head.modulation": None, "patch_embedding.weight": (1536, 16, 1, 2, 2)},
            lacks=("img_emb.proj.1.weight",),
        ),
        architectures=("wan",),
        facts={"vae_latent_channels": 16, "text_inputs": {"umt5-xxl": 4096}, "task": ("t2v-1.3B",)},
        note=_WAN_NOTE,
        source="model-signatures §3.7",
    ),
    _c(
        id="wan22-ti2v-5b-dit",
        role="dit",
        title="the Wan 2.2 TI2V 5B DiT (3072 wide, 48 input channels)",
        match=Match(has={"head.modulation": None, "patch_embedding.weight": (3072, 48, 1, 2, 2)}),
        facts={"vae_latent_channels": 48, "text_inputs": {"umt5-xxl": 4096}},
        note="Musubi Tuner 0.3.4 has no TI2V-5B task",
        source="model-signatures §3.7; musubi §1.0",
    ),
    _c(
        id="wan-diffusers-dit",
        role="dit",
        title="a diffusers-format Wan transformer",
        match=Match(
            has={
                "scale_shift_table": None,
                "condition_embedder.text_embedder.linear_1.weight": None,
            }
        ),
        format="diffusers",
        note="Musubi needs the original or ComfyUI Wan file (split_files/diffusion_models/…)",
        source="model-signatures §3.7",
    ),
    # ---- Z-Image (§3.6)
    _c(
        id="zimage-dit",
        role="dit",
        title="the Z-Image DiT (3840 wide)",
        match=Match(
            has={"cap_embedder.1.weight": (3840, 2560)},
            any_of=(
                {"noise_refiner.0.attention.k_norm.weight": None},
                {"noise_refiner.0.attention.norm_k.weight": None},
            ),
        ),
        architectures=("zimage",),
        candidates=("Z-Image Base", "Z-Image Turbo", "Z-Image De-Turbo"),
        facts={"vae_latent_channels": 16, "text_inputs": {"qwen3-4b": 2560}},
        source="model-signatures §3.6",
    ),
    # ---- Qwen-Image (§3.5): marked variants first
    _c(
        id="qwen-image-layered-dit",
        role="dit",
        title="the Qwen-Image-Layered DiT",
        match=Match(
            has={
                "txt_norm.weight": (3584,),
                "img_in.weight": (3072, 64),
                "time_text_embed.addition_t_embedding.weight": (2, 3072),
            }
        ),
        architectures=("qwen_image",),
        variant="layered",
        facts={
            "vae_latent_channels": 16,
            "text_inputs": {"qwen25-vl-7b": 3584},
            "model_version": ("layered",),
        },
        source="model-signatures §3.5",
    ),
    _c(
        id="qwen-image-edit-2511-dit",
        role="dit",
        title="the Qwen-Image-Edit-2511 DiT (ComfyUI file with the __index_timestep_zero__ marker)",
        match=Match(
            has={
                "txt_norm.weight": (3584,),
                "img_in.weight": (3072, 64),
                "__index_timestep_zero__": None,
            }
        ),
        architectures=("qwen_image",),
        variant="edit-2511",
        facts={
            "vae_latent_channels": 16,
            "text_inputs": {"qwen25-vl-7b": 3584},
            "model_version": ("edit-2511",),
        },
        note="Musubi asserts --model_version edit-2511 for this file",
        source="model-signatures §3.5; musubi §1.7",
    ),
    _c(
        id="qwen-image-dit",
        role="dit",
        title="a Qwen-Image DiT (3072 wide, 60 blocks)",
        match=Match(
            has={
                "txt_norm.weight": (3584,),
                "img_in.weight": (3072, 64),
                "txt_in.weight": (3072, 3584),
            },
            lacks=(
                "transformer_blocks.0.img_mlp.w1.weight",
                "__index_timestep_zero__",
                "time_text_embed.addition_t_embedding.weight",
            ),
        ),
        architectures=("qwen_image",),
        candidates=(
            "Qwen-Image",
            "Qwen-Image-Edit",
            "Qwen-Image-Edit-2509",
            "Qwen-Image-Edit-2511 (official shards)",
        ),
        facts={
            "vae_latent_channels": 16,
            "text_inputs": {"qwen25-vl-7b": 3584},
            "model_version": ("original", "edit", "edit-2509", "edit-2511"),
        },
        source="model-signatures §3.5",
    ),
    # ---- Kandinsky 5 (§3.10)
    _c(
        id="kandinsky5-video-pro-dit",
        role="dit",
        title="a Kandinsky 5 Video Pro DiT (4096 wide)",
        match=Match(
            has={
                "visual_transformer_blocks.0.cross_attention.key_norm.weight": None,
                "visual_embeddings.in_layer.bias": (4096,),
            }
        ),
        architectures=("kandinsky5",),
        candidates=("Kandinsky 5 Pro T2V", "Kandinsky 5 Pro I2V"),
        facts={"vae_latent_channels": 16},
        source="model-signatures §3.10",
    ),
    _c(
        id="kandinsky5-video-lite-dit",
        role="dit",
        title="a Kandinsky 5 Video Lite DiT (1792 wide)",
        match=Match(
            has={
                "visual_transformer_blocks.0.cross_attention.key_norm.weight": None,
                "visual_embeddings.in_layer.bias": (1792,),
            }
        ),
        architectures=("kandinsky5",),
        candidates=(
            "Kandinsky 5 Lite T2V",
            "Kandinsky 5 Lite I2V",
            "Kandinsky 5 Lite distil/nocfg/pretrain",
        ),
        facts={"vae_latent_channels": 16},
        source="model-signatures §3.10",
    ),
    _c(
        id="kandinsky5-image-lite-dit",
        role="dit",
        title="a Kandinsky 5 Image Lite DiT (2560 wide)",
        match=Match(
            has={
                "visual_transformer_blocks.0.cross_attention.key_norm.weight": None,
                "visual_embeddings.in_layer.bias": (2560,),
            }
        ),
        facts={"vae_latent_channels": 16},
        note="the Musubi docs list the Kandinsky 5 image Lite models as not supported",
        source="model-signatures §3.10; musubi §1.0",
    ),
    # ---- Krea 2, HiDream (§3.11, §3.12)
    _c(
        id="krea2-dit",
        role="dit",
        title="the Krea 2 DiT (6144 wide)",
        match=Match(has={"txtfusion.projector.weight": (1, 12), "first.weight": (6144, 64)}),
        architectures=("krea2",),
        candidates=("Krea 2 Raw", "Krea 2 Turbo"),
        facts={"vae_latent_channels": 16, "text_inputs": {"qwen3-vl-4b": 2560}},
        note="train on Raw; Turbo is for sampling (--turbo_dit)",
        source="model-signatures §3.11; musubi §1.13",
    ),
    _c(
        id="hidream-o1-dit",
        role="dit",
        title="the HiDream-O1-Image model (pixel-space, text encoder built in)",
        match=Match(
            any_of=(
                {"model.t_embedder1.mlp.0.weight": None, "model.x_embedder.proj1.weight": None},
                {"t_embedder1.mlp.0.weight": None, "x_embedder.proj1.weight": None},
            )
        ),
        architectures=("hidream_o1",),
        candidates=("HiDream-O1-Image (full)", "HiDream-O1-Image dev"),
        source="model-signatures §3.12; musubi §1.11; model. prefix: HiDream-O1-Image index",
    ),
    _c(
        id="hidream-i1-dit",
        role="dit",
        title="a HiDream-I1 DiT (Full/Dev/Fast)",
        match=Match(has={"caption_projection.0.linear.weight": None}),
        note="HiDream-I1 is not HiDream-O1; Musubi trains only HiDream-O1",
        source="model-signatures §3.12",
    ),
    # ---- other families, named so refusals can say what the file is (§3.3, §3.4)
    _c(
        id="sd3-dit",
        role="dit",
        title="a Stable Diffusion 3/3.5 MMDiT",
        match=Match(has={"joint_blocks.0.context_block.attn.qkv.weight": None}),
        source="model-signatures §3.3",
    ),
    _c(
        id="sdxl-unet",
        role="dit",
        title="an SDXL UNet",
        match=Match(
            has={"input_blocks.0.0.weight": (None, None, 3, 3), "label_emb.0.0.weight": None}
        ),
        architectures=("sdxl",),
        facts={"vae_latent_channels": 4},
        note="AI-Toolkit trains SDXL from the single-file checkpoint (UNet + VAE + both CLIPs)",
        source="model-signatures §3.4",
    ),
    _c(
        id="sd1-unet",
        role="dit",
        title="a Stable Diffusion 1.x/2.x UNet",
        match=Match(
            has={"input_blocks.0.0.weight": (None, None, 3, 3)}, lacks=("label_emb.0.0.weight",)
        ),
        source="model-signatures §3.4",
    ),
    # ---- MOSS-Image (KohakuMoss; kohakumoss.md §6, model/io/load.py infer_config) ----------
    _c(
        id="moss-image-dit",
        role="dit",
        title="the MOSS-Image DiT (3072 wide, 42 blocks)",
        match=Match(
            has={
                "shared_block_modulation.weight": (18432, 3072),
                "video_embedder.weight": (3072, 128),
                "text_embedder.proj.weight": (3072, 4096),
                "layers.41.proj.o.weight": (3072, 3072),
            },
            lacks=("layers.42.proj.o.weight",),
            any_of=({"layers.0.proj.q.weight": None}, {"layers.0.proj.qkv.weight": None}),
        ),
        architectures=("moss_image",),
        candidates=("MOSS-Image-Base", "MOSS-Image-SFT"),
        facts={"vae_latent_channels": 32, "text_inputs": {"qwen35-text": 4096}},
        source="kohakumoss §6 (shared_block_modulation [6×3072, 3072], 42 layers.N, "
        "text_embedder.proj [3072, 4096], video_embedder [3072, 128]); fused proj.qkv: §4",
    ),
    _c(
        id="moss-image-dit-custom",
        role="dit",
        title="a MOSS-Image-layout DiT of another shape (pruned, distilled or a test model)",
        match=Match(
            has={
                "shared_block_modulation.weight": (None, None),
                "video_embedder.weight": (None, 128),
                "text_embedder.proj.weight": (None, None),
                "layers.0.proj.o.weight": None,
                "layers.0.proj.ffn_down.weight": None,
            },
            any_of=({"layers.0.proj.q.weight": None}, {"layers.0.proj.qkv.weight": None}),
        ),
        architectures=("moss_image",),
        facts={"vae_latent_channels": 32},
        note="not a named MOSS variant: KohakuMoss builds its shape from the header "
        "(infer_config, passed on as ARCH_OVERRIDES)",
        source="kohakumoss §5.1 (a tiny build_backbone DiT has the same key layout)",
    ),
    # ---- VAEs (§4)
    _c(
        id="flux2-vae",
        role="vae",
        title="the FLUX.2 VAE (32 latent channels)",
        match=Match(has={"decoder.conv_in.weight": (512, 32, 3, 3), "bn.running_mean": (128,)}),
        architectures=("flux2", "ideogram4", "moss_image"),
        facts={"latent_channels": 32},
        source="model-signatures §4; kohakumoss §6 (MOSS-Image uses the FLUX.2 VAE)",
    ),
    _c(
        id="flux2-vae-custom",
        role="vae",
        title="a FLUX.2-layout VAE of another width (32 latent channels, batch-norm latents)",
        match=Match(has={"decoder.conv_in.weight": (None, 32, 3, 3), "bn.running_mean": (128,)}),
        architectures=("moss_image",),
        facts={"latent_channels": 32},
        note="not the released FLUX.2 VAE (its decoder is not 512 wide); KohakuMoss loads it "
        "through diffusers' AutoencoderKLFlux2 and reads its width from config.json",
        source="kohakumoss §5.2 (AutoencoderKLFlux2 with 16-wide blocks)",
    ),
    _c(
        id="flux1-ae",
        role="vae",
        title="the FLUX.1 autoencoder (16 latent channels)",
        match=Match(
            has={
                "decoder.conv_in.weight": (512, 16, 3, 3),
                "encoder.conv_out.weight": (32, 512, 3, 3),
            },
            lacks=("bn.running_mean", "quant_conv.weight", "encoder.quant_conv.weight"),
        ),
        architectures=("flux_kontext", "zimage"),
        candidates=("FLUX.1 ae", "SD3 VAE"),
        facts={"latent_channels": 16},
        source="model-signatures §4",
    ),
    _c(
        id="sd-vae",
        role="vae",
        title="a Stable Diffusion 1.x/SDXL VAE (4 latent channels)",
        match=Match(has={"decoder.conv_in.weight": (512, 4, 3, 3)}),
        candidates=("SD1.5 VAE", "SDXL VAE"),
        facts={"latent_channels": 4},
        source="model-signatures §4",
    ),
    _c(
        id="wan22-vae",
        role="vae",
        title="the Wan 2.2 VAE (48 latent channels)",
        match=Match(
            has={
                "decoder.middle.0.residual.0.gamma": None,
                "decoder.upsamples.0.upsamples.0.residual.2.weight": None,
                "encoder.conv1.weight": (160, 12, 3, 3, 3),
            }
        ),
        facts={"latent_channels": 48},
        note="for Wan 2.2 TI2V-5B only (not compatible with the 14B models)",
        source="model-signatures §4",
    ),
    _c(
        id="qwen-image-layered-vae",
        role="vae",
        title="the Qwen-Image-Layered VAE (RGBA input, 16 latent channels)",
        match=Match(
            has={
                "decoder.middle.0.residual.0.gamma": None,
                "encoder.conv1.weight": (96, 4, 3, 3, 3),
            }
        ),
        architectures=("qwen_image",),
        variant="layered",
        facts={"latent_channels": 16},
        source="model-signatures §4",
    ),
    _c(
        id="wan21-vae",
        role="vae",
        title="the Wan 2.1 / Qwen-Image VAE (16 latent channels)",
        match=Match(
            has={
                "decoder.middle.0.residual.0.gamma": None,
                "encoder.conv1.weight": (96, 3, 3, 3, 3),
                "conv2.weight": (16, 16, 1, 1, 1),
            },
            lacks=("decoder.upsamples.0.upsamples.0.residual.2.weight",),
        ),
        architectures=("wan", "qwen_image", "krea2"),
        candidates=("Wan 2.1 VAE", "Qwen-Image VAE"),
        facts={"latent_channels": 16},
        source="model-signatures §4",
    ),
    _c(
        id="wan21-vae-diffusers",
        role="vae",
        title="a diffusers-format Wan 2.1 / Qwen-Image VAE (16 latent channels)",
        match=Match(
            has={
                "encoder.conv_in.weight": (96, 3, 3, 3, 3),
                "post_quant_conv.weight": (16, 16, 1, 1, 1),
            }
        ),
        architectures=("qwen_image",),
        candidates=("Wan 2.1 VAE (diffusers)", "Qwen-Image VAE (diffusers)"),
        facts={"latent_channels": 16},
        format="diffusers",
        note="Musubi's Qwen-Image loader accepts the diffusers VAE; its Wan loader wants the "
        "original layout",
        source="model-signatures §4",
    ),
    _c(
        id="hunyuan-video-1.5-vae",
        role="vae",
        title="the HunyuanVideo 1.5 VAE (32 latent channels)",
        match=Match(has={"decoder.conv_in.conv.weight": (None, 32, 3, 3, 3)}),
        architectures=("hunyuan_video_1_5",),
        facts={"latent_channels": 32},
        source="model-signatures §4",
    ),
    _c(
        id="hunyuan-video-vae",
        role="vae",
        title="the HunyuanVideo VAE (16 latent channels, causal 3-D)",
        match=Match(has={"decoder.conv_in.conv.weight": (512, 16, 3, 3, 3)}),
        architectures=("hunyuan_video", "framepack", "kandinsky5"),
        facts={"latent_channels": 16},
        source="model-signatures §4",
    ),
    # ---- Text encoders (§5.1-5.3)
    _c(
        id="wan-umt5-xxl",
        role="text_encoder",
        title="umT5-XXL encoder in Wan's own layout (models_t5_umt5-xxl-enc-bf16.pth, or a "
        "safetensors conversion with the same keys)",
        match=Match(
            has={
                "token_embedding.weight": (256384, 4096),
                "blocks.0.pos_embedding.embedding.weight": (32, 64),
                "blocks.23.ffn.gate.0.weight": (10240, 4096),
                "blocks.23.attn.q.weight": (4096, 4096),
            }
        ),
        architectures=("wan",),
        facts={"hidden_width": 4096},
        note="the file Musubi's Wan T5 loader takes (strict load; .pth or .safetensors)",
        source="Musubi 0.3.4 wan/modules/t5.py (umt5_xxl: T5Encoder, shared_pos=False; "
        "T5EncoderModel loads .safetensors or .pth, strips 'encoder.', strict=True)",
    ),
    _c(
        id="umt5-xxl",
        role="text_encoder",
        title="umT5-XXL in Hugging Face layout (ComfyUI umt5_xxl file)",
        match=Match(
            has={
                "encoder.block.1.layer.0.SelfAttention.relative_attention_bias.weight": None,
                "encoder.block.23.layer.1.DenseReluDense.wi_1.weight": (10240, 4096),
            }
        ),
        facts={"hidden_width": 4096},
        note="Musubi's Wan trainer loads the original Wan T5 (models_t5_umt5-xxl-enc-bf16.pth) "
        "strictly; this HF-layout file does not load there",
        source="model-signatures §5.2",
    ),
    _c(
        id="t5-xxl",
        role="text_encoder",
        title="T5-XXL v1.1 (4096 wide)",
        match=Match(
            has={"encoder.block.23.layer.1.DenseReluDense.wi_1.weight": (10240, 4096)},
            lacks=("encoder.block.1.layer.0.SelfAttention.relative_attention_bias.weight",),
        ),
        architectures=("flux_kontext",),
        facts={"hidden_width": 4096},
        source="model-signatures §5.2",
    ),
    _c(
        id="byt5-small-glyph",
        role="text_encoder",
        title="the ByT5-small glyph encoder (1472 wide)",
        match=Match(has={"encoder.block.0.layer.0.SelfAttention.k.weight": (384, 1472)}),
        architectures=("hunyuan_video_1_5",),
        facts={"hidden_width": 1472},
        source="model-signatures §5.2; musubi §1.9",
    ),
    _c(
        id="clip-g",
        role="text_encoder",
        title="CLIP-G (OpenCLIP bigG text, 1280 wide)",
        match=Match(has={"text_model.encoder.layers.30.mlp.fc1.weight": None}),
        facts={"hidden_width": 1280},
        source="model-signatures §5.1",
    ),
    _c(
        id="clip-h",
        role="text_encoder",
        title="CLIP-H text (1024 wide)",
        match=Match(has={"text_model.encoder.layers.22.mlp.fc1.weight": None}),
        facts={"hidden_width": 1024},
        source="model-signatures §5.1",
    ),
    _c(
        id="clip-l",
        role="text_encoder",
        title="CLIP-L text (768 wide)",
        match=Match(
            has={
                "text_model.encoder.layers.0.mlp.fc1.weight": None,
                "text_model.embeddings.token_embedding.weight": (49408, 768),
            },
            lacks=("text_model.encoder.layers.22.mlp.fc1.weight",),
        ),
        architectures=("flux_kontext", "hunyuan_video", "framepack"),
        facts={"hidden_width": 768},
        source="model-signatures §5.1",
    ),
    _c(
        id="qwen3-vl-4b",
        role="text_encoder",
        title="Qwen3-VL-4B (2560 wide)",
        match=Match(
            has={
                "model.visual.deepstack_merger_list.0.norm.weight": None,
                "model.visual.merger.linear_fc2.weight": (2560, None),
            }
        ),
        architectures=("krea2",),
        facts={"hidden_width": 2560},
        source="model-signatures §5.3",
    ),
    _c(
        id="qwen3-vl-8b",
        role="text_encoder",
        title="Qwen3-VL-8B (4096 wide)",
        match=Match(
            has={
                "model.visual.deepstack_merger_list.0.norm.weight": None,
                "model.visual.merger.linear_fc2.weight": (4096, None),
            }
        ),
        architectures=("ideogram4",),
        facts={"hidden_width": 4096},
        source="model-signatures §5.3; musubi §1.12",
    ),
    _c(
        id="qwen25-vl-7b",
        role="text_encoder",
        title="Qwen2.5-VL-7B (3584 wide)",
        match=Match(
            has={
                "model.layers.0.self_attn.k_proj.bias": (512,),
                "model.layers.0.post_attention_layernorm.weight": (3584,),
            }
        ),
        architectures=("qwen_image", "hunyuan_video_1_5"),
        facts={"hidden_width": 3584},
        source="model-signatures §5.3",
    ),
    _c(
        id="qwen35-text",
        role="text_encoder",
        title="a Qwen3.5 text model (gated-delta-net linear attention layers)",
        match=Match(
            any_of=(
                {
                    "model.layers.0.linear_attn.A_log": None,
                    "model.layers.0.linear_attn.in_proj_qkv.weight": None,
                },
                {
                    "layers.0.linear_attn.A_log": None,
                    "layers.0.linear_attn.in_proj_qkv.weight": None,
                },
            ),
        ),
        architectures=("moss_image",),
        candidates=("Qwen3.5-9B (MOSS-Image's text encoder)", "another Qwen3.5 size"),
        note="KohakuMoss reads the text width from the DiT (text_dim) and checks it at load",
        source="kohakumoss §5.2 (Qwen3_5TextModel: linear_attn A_log, in_proj_qkv)",
    ),
    _c(
        id="qwen3-4b",
        role="text_encoder",
        title="Qwen3-4B (2560 wide)",
        match=Match(
            has={
                "model.layers.0.self_attn.q_norm.weight": None,
                "model.layers.0.post_attention_layernorm.weight": (2560,),
            }
        ),
        architectures=("zimage", "flux2"),
        facts={"hidden_width": 2560},
        source="model-signatures §5.3",
    ),
    _c(
        id="qwen3-8b",
        role="text_encoder",
        title="Qwen3-8B (4096 wide)",
        match=Match(
            has={
                "model.layers.0.self_attn.q_norm.weight": None,
                "model.layers.0.post_attention_layernorm.weight": (4096,),
            }
        ),
        architectures=("flux2",),
        facts={"hidden_width": 4096},
        source="model-signatures §5.3",
    ),
    _c(
        id="mistral3-24b",
        role="text_encoder",
        title="Mistral-Small-3.1-24B (5120 wide)",
        match=Match(
            lacks=(
                "model.layers.0.self_attn.q_norm.weight",
                "language_model.model.layers.0.self_attn.q_norm.weight",
            ),
            any_of=(
                {"language_model.model.layers.0.post_attention_layernorm.weight": (5120,)},
                {"model.layers.0.post_attention_layernorm.weight": (5120,)},
            ),
        ),
        architectures=("flux2",),
        facts={"hidden_width": 5120},
        source="model-signatures §5.3",
    ),
    _c(
        id="llava-llama3-8b",
        role="text_encoder",
        title="LLaVA-Llama-3-8B text model (4096 wide, vocabulary 128320)",
        match=Match(
            has={"model.embed_tokens.weight": (128320, 4096)},
            lacks=("model.layers.0.self_attn.q_norm.weight",),
        ),
        architectures=("hunyuan_video", "framepack"),
        facts={"hidden_width": 4096},
        source="model-signatures §5.3",
    ),
    _c(
        id="llama31-8b",
        role="text_encoder",
        title="Llama-3.1-8B (4096 wide, vocabulary 128256)",
        match=Match(
            has={"model.embed_tokens.weight": (128256, 4096)},
            lacks=("model.layers.0.self_attn.q_norm.weight",),
        ),
        facts={"hidden_width": 4096},
        source="model-signatures §5.3",
    ),
    # ---- Image encoders (§5.4)
    _c(
        id="siglip-so400m",
        role="image_encoder",
        title="SigLIP so400m/14 @384 vision encoder (1152 wide)",
        match=Match(
            has={
                "vision_model.encoder.layers.0.layer_norm1.weight": (1152,),
                "vision_model.embeddings.position_embedding.weight": (729, 1152),
            }
        ),
        architectures=("framepack", "hunyuan_video_1_5"),
        facts={"hidden_width": 1152},
        source="model-signatures §5.4",
    ),
    _c(
        id="wan-clip-xlm-roberta-vit-h",
        role="image_encoder",
        title="open-clip XLM-RoBERTa-large ViT-H/14 in Wan's layout "
        "(models_clip_open-clip-xlm-roberta-large-vit-huge-14.pth, or a safetensors "
        "conversion with the same keys)",
        match=Match(
            has={
                "visual.patch_embedding.weight": (1280, 3, 14, 14),
                "visual.transformer.31.attn.to_qkv.weight": (3840, 1280),
                "textual.token_embedding.weight": (250002, 1024),
                "log_scale": None,
            }
        ),
        architectures=("wan",),
        facts={"hidden_width": 1280},
        note="the file Musubi's Wan 2.1 I2V CLIP loader takes (strict load, vision and text "
        "towers; .pth or .safetensors)",
        source="Musubi 0.3.4 wan/modules/clip.py (clip_xlm_roberta_vit_h_14: XLMRobertaCLIP "
        "visual + textual; CLIPModel loads .safetensors or .pth, strict=True)",
    ),
    _c(
        id="clip-vit-h-vision",
        role="image_encoder",
        title="CLIP ViT-H/14 vision encoder (ComfyUI clip_vision_h)",
        match=Match(
            has={"vision_model.encoder.layers.30.layer_norm1.weight": (1280,)},
            lacks=("vision_model.encoder.layers.47.layer_norm1.weight",),
        ),
        facts={"hidden_width": 1280},
        note="Musubi's Wan 2.1 I2V loads the original open-clip-xlm-roberta-large-vit-huge-14 "
        ".pth (with its text tower) strictly",
        source="model-signatures §5.4",
    ),
    # ---- appended: families only AI-Toolkit trains (first match wins; no earlier rule
    # matches these, see tests/models/test_identify.py)
    _c(
        id="chroma-dit",
        role="dit",
        title="a Chroma DiT (FLUX.1-shaped, no vector_in, distilled guidance layer)",
        match=Match(
            has={
                "img_in.weight": (3072, 64),
                "txt_in.weight": (3072, 4096),
                "distilled_guidance_layer.in_proj.weight": None,
            },
            lacks=("vector_in.in_layer.weight",),
        ),
        architectures=("chroma",),
        candidates=("Chroma1-Base", "Chroma1-HD"),
        facts={"vae_latent_channels": 16, "text_inputs": {"t5-xxl": 4096}},
        note="AI-Toolkit loads the T5 and VAE of ostris/Flex.1-alpha with it "
        "(extensions_built_in/diffusion_models/chroma/chroma_model.py)",
        source="model-signatures §3.1 (Chroma look-alike row)",
    ),
)


def component_by_id(component_id: str) -> Component:
    """The table row for ``component_id``; ``KeyError`` when there is none."""
    return _BY_ID[component_id]


_BY_ID = {c.id: c for c in COMPONENTS}

LORA_TARGETS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # (regular expression on the module path with '.' and '_' unified to '_', architectures)
    (r"^txtfusion_|_attn_wq$|^blocks_\d+_attn_wq", ("krea2",)),
    (r"visual_transformer_blocks_", ("kandinsky5",)),
    (r"^blocks_\d+_(self_attn|cross_attn)_", ("wan",)),
    (r"^layers_\d+_attention_(to_q|to_k|to_v|to_out)", ("zimage",)),
    (r"^layers_\d+_attention_qkv", ("ideogram4", "zimage")),
    (r"^single_transformer_blocks_\d+_", ("framepack",)),
    (r"^transformer_blocks_\d+_(attn_add_q_proj|img_mlp_net)", ("qwen_image",)),
    (
        r"^double_blocks_\d+_img_mlp_fc1|^double_blocks_\d+_img_attn_qkv",
        ("flux_kontext", "flux2", "hunyuan_video", "hunyuan_video_1_5"),
    ),
)
"""LoRA module-path vocabularies (§8.3). Coarse: widths then narrow FLUX/HunyuanVideo."""
