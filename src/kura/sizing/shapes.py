"""Architecture shapes: the numbers the estimator multiplies, as data with their sources.

One :class:`ModelShape` per trainable model id (``flux2-klein-9b``, ``wan2.1-t2v-14b`` …),
each tagged with its Kura architecture id. Block lists are :class:`BlockGroup` records: the
lists gradient checkpointing and block swap act on, with the Linear-weight bytes one block
holds (what block swap moves) and the activation coefficient ``c`` (bytes each token costs in
one block's recompute working set).

Sources are cited per field in ``ModelShape.sources``: ``vram.md §n`` is
``/work/shared/research/vram.md`` (Musubi Tuner 0.3.4 snapshot 30c658c, meta-device counts),
``musubi.md §n`` the Musubi reference notes, ``[code] path`` a file read in the Musubi
snapshot for these records, ``[mine]`` a derivation written out in the source string, and
``[assumed]`` a number nobody measured (those records carry a wide uncertainty band).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Literal

from kura.architectures import ARCHITECTURE_IDS
from kura.errors import InvalidInput, NotFound, Unsupported

__all__ = [
    "ARCHITECTURE_IDS",
    "MODEL_SHAPES",
    "OTHER_TRAINER_SHAPES",
    "BlockGroup",
    "ModelShape",
    "base_model",
    "get_shape",
    "shapes_for_architecture",
    "with_depth",
]

MIB = 2**20
GIB = 2**30


SwapRule = Literal["uniform", "flux1", "flux2", "kandinsky"]
TokenLayout = Literal["latent", "framepack", "pixel"]
ActivationSource = Literal["measured", "estimated", "assumed"]
Sees = Literal["sequence", "image", "text"]


@dataclass(frozen=True)
class BlockGroup:
    """One list of transformer blocks (``double``, ``single``, ``main`` …).

    ``lin_mib_bf16`` / ``lin_mib_fp8_scaled`` are the Linear-weight MiB of one block (fp8
    scaled includes its bf16 scale bytes); ``act_bytes_per_token`` is the bytes per token one
    block saves for backward when recomputed (``c_arch``). ``streams`` is 2 for dual-stream
    (MMDiT) blocks, whose tokens each pass through only half the block's weights.
    ``swappable`` is false for lists block swap never touches (Z-Image refiners).
    ``sees`` says which tokens pass through the blocks: the whole sequence, only the image
    tokens (Z-Image noise refiner) or only the text tokens (Z-Image context refiner,
    Kandinsky 5 text blocks).

    A UNet's levels run at different grids and widths: ``token_scale`` is the positions one
    block sees per token of the shape's grid (4 for SDXL's 64x64 level against its 32x32
    one), ``width`` the channels of its input when they are not the shape's ``hidden`` (0:
    ``hidden``), and ``attends`` is false for convolution-only (ResNet) blocks, whose
    ``lin_mib_bf16`` is their convolution weights (a 3x3 conv costs ``2 P`` FLOPs per
    position, as a Linear does per token).
    """

    name: str
    count: int
    lin_mib_bf16: float
    lin_mib_fp8_scaled: float | None
    act_bytes_per_token: float
    streams: int = 1
    swappable: bool = True
    sees: Sees = "sequence"
    token_scale: float = 1.0
    width: int = 0
    attends: bool = True

    @property
    def lin_params(self) -> float:
        """Linear parameters of one block (bf16 bytes / 2)."""
        return self.lin_mib_bf16 * MIB / 2


@dataclass(frozen=True)
class ModelShape:
    """Everything the estimator needs to know about one model's DiT."""

    id: str
    architecture: str
    title: str
    params_b: float
    hidden: int
    groups: tuple[BlockGroup, ...]
    patch: tuple[int, int, int]
    vae_spatial: int
    vae_temporal: int
    latent_channels: int
    text_tokens_max: int
    text_tokens_typical: int
    text_joint: bool
    weights_gib: Mapping[str, float]
    lora_params_per_rank: float
    lora_modules: int
    """Modules Musubi's LoRA network wraps on this DiT ([code] its ``networks/lora_*.py``
    targets, built and counted on Musubi's own DiT by
    ``tests/backends/musubi/musubi_network_harness.py``; Wan 2.2 TI2V-5B, not buildable in
    0.3.4, [mine] 30 blocks x 10)."""
    swap_rule: SwapRule
    swap_limit: int
    activation_source: ActivationSource
    token_layout: TokenLayout = "latent"
    video: bool = False
    musubi_trainable: bool = True
    gc_cpu_offload: bool = True
    extra_fixed_tokens: int = 0
    time_embedding_bytes_per_token_h: float = 0.0
    dense_sdpa_mask: bool = False
    experts: int = 1
    one_expert: str | None = None
    """The shape id of one expert trained alone (Wan 2.2 A14B's single-expert mode)."""
    notes: tuple[str, ...] = ()
    sources: Mapping[str, str] = field(default_factory=dict)

    @property
    def fp8_modes(self) -> tuple[str, ...]:
        """Weight modes this model can train with (``none``, ``base``, ``scaled``)."""
        return tuple(mode for mode in ("none", "base", "scaled") if mode in self.weights_gib)

    @property
    def n_blocks(self) -> int:
        return sum(group.count for group in self.groups)

    @property
    def token_pixels(self) -> int:
        """Pixels along one side of a token: VAE spatial compression x spatial patch."""
        return self.vae_spatial * self.patch[1]

    def width_of(self, group: BlockGroup) -> int:
        """Channels of the tensor one block of ``group`` takes in."""
        return group.width or self.hidden

    def lin_mib(self, group: BlockGroup, fp8: str) -> float:
        """Linear-weight MiB of one block of ``group`` under weight mode ``fp8``."""
        if fp8 == "none":
            return group.lin_mib_bf16
        if fp8 == "base":
            return group.lin_mib_bf16 / 2
        if group.lin_mib_fp8_scaled is None:
            return group.lin_mib_bf16 / 2
        return group.lin_mib_fp8_scaled


def _shapes(*records: ModelShape) -> Mapping[str, ModelShape]:
    return MappingProxyType({record.id: record for record in records})


_V11 = "vram.md §1.1"
_V12 = "vram.md §1.2"
_V13 = "vram.md §1.3"
_V21 = "vram.md §2.1 / musubi.md §1.1"

# FLUX-style blocks measured on CPU at 178 k / 166 k bytes per token (vram.md §1.3).
_FLUX1_GROUPS = (
    BlockGroup("double", 19, 648, 439, 178e3, streams=2),
    BlockGroup("single", 38, 270, 165, 166e3),
)
# FLUX.2 klein 4B was measured at 62 h / 58 h; 9B and dev scale with h (vram.md §1.3).
_FLUX2_C = (62.0, 58.0)

MODEL_SHAPES: Mapping[str, ModelShape] = _shapes(
    ModelShape(
        id="flux1-kontext-dev",
        architecture="flux_kontext",
        title="FLUX.1 Kontext [dev]",
        params_b=11.90,
        hidden=3072,
        groups=_FLUX1_GROUPS,
        patch=(1, 2, 2),
        vae_spatial=8,
        vae_temporal=1,
        latent_channels=16,
        text_tokens_max=512,
        text_tokens_typical=512,
        text_joint=True,
        weights_gib={"none": 22.17, "base": 11.08, "scaled": 14.40},
        lora_params_per_rank=3.50e6,
        lora_modules=228,
        swap_rule="flux1",
        swap_limit=34,
        activation_source="measured",
        notes=("Kontext adds the control image's tokens: pass reference_images=1.",),
        sources={
            "shape": _V11,
            "weights": _V12,
            "activations": _V13 + " (FLUX.1 double/single 178 k/166 k)",
            "swap": _V21 + " (17 double + 35 single)",
            "text": _V11 + " (T5-XXL 512 padded, joint)",
        },
    ),
    ModelShape(
        id="flux2-dev",
        architecture="flux2",
        title="FLUX.2 [dev]",
        params_b=32.22,
        hidden=6144,
        groups=(
            BlockGroup("double", 8, 1872, 965, _FLUX2_C[0] * 6144, streams=2),
            BlockGroup("single", 48, 936, 483, _FLUX2_C[1] * 6144),
        ),
        patch=(1, 2, 2),
        vae_spatial=8,
        vae_temporal=1,
        latent_channels=32,
        text_tokens_max=512,
        text_tokens_typical=512,
        text_joint=True,
        weights_gib={"none": 60.02, "scaled": 31.68},
        lora_params_per_rank=6.09e6,
        lora_modules=160,
        swap_rule="flux2",
        swap_limit=29,
        activation_source="estimated",
        sources={
            "shape": _V11,
            "weights": _V12,
            "activations": _V13 + " (klein 4B 62 h / 58 h scaled to h = 6144)",
            "swap": _V21 + " ([code] flux_2/flux2_models.py enable_block_swap split)",
        },
    ),
    ModelShape(
        id="flux2-klein-9b",
        architecture="flux2",
        title="FLUX.2 [klein] 9B",
        params_b=9.08,
        hidden=4096,
        groups=(
            BlockGroup("double", 8, 832, 429, _FLUX2_C[0] * 4096, streams=2),
            BlockGroup("single", 24, 416, 215, _FLUX2_C[1] * 4096),
        ),
        patch=(1, 2, 2),
        vae_spatial=8,
        vae_temporal=1,
        latent_channels=32,
        text_tokens_max=512,
        text_tokens_typical=512,
        text_joint=True,
        weights_gib={"none": 16.91, "scaled": 9.04},
        lora_params_per_rank=2.59e6,
        lora_modules=112,
        swap_rule="flux2",
        swap_limit=16,
        activation_source="estimated",
        sources={
            "shape": _V11,
            "weights": _V12,
            "activations": _V13 + " (klein 4B 62 h / 58 h scaled to h = 4096)",
            "swap": _V21,
        },
    ),
    ModelShape(
        id="flux2-klein-4b",
        architecture="flux2",
        title="FLUX.2 [klein] 4B",
        params_b=3.88,
        hidden=3072,
        groups=(
            BlockGroup("double", 5, 468, 241, 192e3, streams=2),
            BlockGroup("single", 20, 234, 121, 178e3),
        ),
        patch=(1, 2, 2),
        vae_spatial=8,
        vae_temporal=1,
        latent_channels=32,
        text_tokens_max=512,
        text_tokens_typical=512,
        text_joint=True,
        weights_gib={"none": 7.22, "scaled": 3.90},
        lora_params_per_rank=1.44e6,
        lora_modules=80,
        swap_rule="flux2",
        swap_limit=13,
        activation_source="measured",
        sources={
            "shape": _V11,
            "weights": _V12,
            "activations": _V13 + " (192 k / 178 k)",
            "swap": _V21,
        },
    ),
    ModelShape(
        id="qwen-image",
        architecture="qwen_image",
        title="Qwen-Image (also Edit, Edit-2509/2511, Layered)",
        params_b=20.43,
        hidden=3072,
        groups=(BlockGroup("main", 60, 648, 334, 172e3, streams=2),),
        patch=(1, 2, 2),
        vae_spatial=8,
        vae_temporal=1,
        latent_channels=16,
        text_tokens_max=1024,
        text_tokens_typical=100,
        text_joint=True,
        weights_gib={"none": 38.05, "base": 19.03, "scaled": 19.66},
        lora_params_per_rank=9.22e6,
        lora_modules=840,
        swap_rule="uniform",
        swap_limit=59,
        activation_source="measured",
        notes=(
            "Edit variants add the control image's tokens: pass reference_images=1.",
            "Text length is the caption's actual length (<= 1024), not padded.",
        ),
        sources={
            "shape": _V11,
            "weights": _V12 + " (fp8_scaled since 2025-09-23)",
            "activations": _V13 + " (172 k)",
            "swap": _V21,
            "text": _V11 + "; typical 100 as in vram.md §3 predictions",
        },
    ),
    ModelShape(
        id="qwen-image-2025-08",
        architecture="qwen_image",
        title="Qwen-Image with Musubi before 2025-09-23 (modulation kept bf16 under fp8_scaled)",
        params_b=20.43,
        hidden=3072,
        groups=(BlockGroup("main", 60, 648, 438, 172e3, streams=2),),
        patch=(1, 2, 2),
        vae_spatial=8,
        vae_temporal=1,
        latent_channels=16,
        text_tokens_max=1024,
        text_tokens_typical=100,
        text_joint=True,
        weights_gib={"none": 38.05, "base": 19.03, "scaled": 25.8},
        lora_params_per_rank=9.22e6,
        lora_modules=840,
        swap_rule="uniform",
        swap_limit=59,
        activation_source="measured",
        notes=("Only for reproducing measurements taken before Musubi PR #575.",),
        sources={
            "shape": _V11,
            "weights": _V12 + " (old fp8_scaled 25.8 GiB, 438 MiB per block)",
            "activations": _V13,
            "swap": _V21,
        },
    ),
    ModelShape(
        id="zimage",
        architecture="zimage",
        title="Z-Image (Base / Turbo / De-Turbo)",
        params_b=6.15,
        hidden=3840,
        groups=(
            BlockGroup("main", 30, 345, 182, 343e3),
            BlockGroup("noise_refiner", 2, 345, 182, 343e3, swappable=False, sees="image"),
            BlockGroup("context_refiner", 2, 345, 182, 343e3, swappable=False, sees="text"),
        ),
        patch=(1, 2, 2),
        vae_spatial=8,
        vae_temporal=1,
        latent_channels=16,
        text_tokens_max=512,
        text_tokens_typical=128,
        text_joint=True,
        weights_gib={"none": 11.46, "base": 5.73, "scaled": 6.04},
        lora_params_per_rank=2.19e6,
        lora_modules=210,
        swap_rule="uniform",
        swap_limit=28,
        activation_source="measured",
        sources={
            "shape": _V11 + " (30 main + 2 + 2 refiners, same block width)",
            "weights": _V12,
            "activations": _V13 + " (343 k)",
            "swap": _V21 + " (refiners never swapped)",
            "text": _V11
            + " (actual length <= 512, padded to a multiple of 32); typical 128 [assumed]",
        },
    ),
    ModelShape(
        id="wan2.1-t2v-14b",
        architecture="wan",
        title="Wan 2.1 T2V 14B",
        params_b=14.29,
        hidden=5120,
        groups=(BlockGroup("main", 40, 670, 346, 383e3),),
        patch=(1, 2, 2),
        vae_spatial=8,
        vae_temporal=4,
        latent_channels=16,
        text_tokens_max=512,
        text_tokens_typical=512,
        text_joint=False,
        weights_gib={"none": 26.61, "base": 13.31, "scaled": 13.94},
        lora_params_per_rank=4.79e6,
        lora_modules=400,
        swap_rule="uniform",
        swap_limit=39,
        activation_source="measured",
        video=True,
        sources={
            "shape": _V11,
            "weights": _V12,
            "activations": _V13 + " (383 k; cross-attention to 512 text tokens ~26 MB/block)",
            "swap": _V21,
        },
    ),
    ModelShape(
        id="wan2.1-i2v-14b",
        architecture="wan",
        title="Wan 2.1 I2V 14B",
        params_b=16.39,
        hidden=5120,
        groups=(BlockGroup("main", 40, 770, 397, 383e3),),
        patch=(1, 2, 2),
        vae_spatial=8,
        vae_temporal=4,
        latent_channels=16,
        text_tokens_max=512 + 257,
        text_tokens_typical=512 + 257,
        text_joint=False,
        weights_gib={"none": 30.54, "base": 15.27, "scaled": 15.97},
        lora_params_per_rank=5.61e6,
        lora_modules=480,
        swap_rule="uniform",
        swap_limit=39,
        activation_source="measured",
        video=True,
        sources={
            "shape": _V11 + " (incl. CLIP-image cross-attention, +257 tokens)",
            "weights": _V12,
            "activations": _V13 + " (Wan 2.1 14B 383 k)",
            "swap": _V21,
        },
    ),
    ModelShape(
        id="wan2.1-1.3b",
        architecture="wan",
        title="Wan 2.1 T2V 1.3B",
        params_b=1.42,
        hidden=1536,
        groups=(BlockGroup("main", 30, 88.5, 45.6, 134e3),),
        patch=(1, 2, 2),
        vae_spatial=8,
        vae_temporal=4,
        latent_channels=16,
        text_tokens_max=512,
        text_tokens_typical=512,
        text_joint=False,
        weights_gib={"none": 2.64, "base": 1.32, "scaled": 1.39},
        lora_params_per_rank=1.37e6,
        lora_modules=300,
        swap_rule="uniform",
        swap_limit=29,
        activation_source="measured",
        video=True,
        sources={"shape": _V11, "weights": _V12, "activations": _V13 + " (134 k)", "swap": _V21},
    ),
    ModelShape(
        id="wan2.2-a14b",
        architecture="wan",
        title="Wan 2.2 A14B, both experts (high + low noise)",
        params_b=14.29,
        hidden=5120,
        groups=(BlockGroup("main", 40, 670, 346, 547e3),),
        patch=(1, 2, 2),
        vae_spatial=8,
        vae_temporal=4,
        latent_channels=16,
        text_tokens_max=512,
        text_tokens_typical=512,
        text_joint=False,
        weights_gib={"none": 26.61, "base": 13.31, "scaled": 13.94},
        lora_params_per_rank=4.79e6,
        lora_modules=400,
        swap_rule="uniform",
        swap_limit=39,
        activation_source="measured",
        video=True,
        time_embedding_bytes_per_token_h=28.0,
        experts=2,
        one_expert="wan2.2-a14b-single",
        notes=(
            "The inactive expert stays on the GPU unless offload_inactive_dit (then CPU); "
            "with block swap both experts' unswapped blocks stay on the GPU "
            "(wan_train_network.py load_transformer / swap_high_low_weights).",
        ),
        sources={
            "shape": _V11 + " (per expert)",
            "weights": _V12 + " (per expert; inactive expert: §1.2 notes)",
            "activations": _V13 + " (547 k with per-token time embedding)",
            "time_embedding": "[code] wan/modules/model.py: e0 [B, L, 6, C] and e [B, L, C] "
            "in fp32 live for the whole step: 7 x 4 = 28 bytes per token per h",
            "swap": _V21,
        },
    ),
    ModelShape(
        id="wan2.2-a14b-single",
        architecture="wan",
        title="Wan 2.2 A14B, one expert",
        params_b=14.29,
        hidden=5120,
        groups=(BlockGroup("main", 40, 670, 346, 547e3),),
        patch=(1, 2, 2),
        vae_spatial=8,
        vae_temporal=4,
        latent_channels=16,
        text_tokens_max=512,
        text_tokens_typical=512,
        text_joint=False,
        weights_gib={"none": 26.61, "base": 13.31, "scaled": 13.94},
        lora_params_per_rank=4.79e6,
        lora_modules=400,
        swap_rule="uniform",
        swap_limit=39,
        activation_source="measured",
        video=True,
        time_embedding_bytes_per_token_h=28.0,
        sources={
            "shape": _V11,
            "weights": _V12,
            "activations": _V13 + " (547 k)",
            "time_embedding": "[code] wan/modules/model.py (fp32 e0 [B, L, 6, C] + e [B, L, C])",
            "swap": _V21,
        },
    ),
    ModelShape(
        id="wan2.2-ti2v-5b",
        architecture="wan",
        title="Wan 2.2 TI2V 5B",
        params_b=5.00,
        hidden=3072,
        groups=(BlockGroup("main", 30, 312, 161, 107 * 3072),),
        patch=(1, 2, 2),
        vae_spatial=16,
        vae_temporal=4,
        latent_channels=48,
        text_tokens_max=512,
        text_tokens_typical=512,
        text_joint=False,
        weights_gib={"none": 9.31, "base": 4.66, "scaled": 4.89},
        lora_params_per_rank=2.52e6,
        lora_modules=300,
        swap_rule="uniform",
        swap_limit=29,
        activation_source="estimated",
        video=True,
        musubi_trainable=False,
        time_embedding_bytes_per_token_h=28.0,
        notes=("Not trainable in Musubi Tuner 0.3.4 (no ti2v-5B task); numbers for completeness.",),
        sources={
            "shape": _V11,
            "weights": _V12,
            "activations": _V13 + " (~107 h, not measured)",
            "swap": "[assumed] blocks - 1 as for the other Wan models",
        },
    ),
    ModelShape(
        id="hunyuan-video",
        architecture="hunyuan_video",
        title="HunyuanVideo 13B",
        params_b=12.82,
        hidden=3072,
        groups=(
            BlockGroup("double", 20, 648, None, 164e3, streams=2),
            BlockGroup("single", 40, 270, None, 157e3),
        ),
        patch=(1, 2, 2),
        vae_spatial=8,
        vae_temporal=4,
        latent_channels=16,
        text_tokens_max=256,
        text_tokens_typical=256,
        text_joint=True,
        weights_gib={"none": 23.88, "base": 11.94},
        lora_params_per_rank=3.69e6,
        lora_modules=240,
        swap_rule="flux1",
        swap_limit=38,
        activation_source="measured",
        video=True,
        dense_sdpa_mask=True,
        notes=("--fp8_scaled is not supported for HunyuanVideo (plain fp8 cast only).",),
        sources={
            "shape": _V11,
            "weights": _V12,
            "activations": _V13 + " (164 k / 157 k)",
            "mask": "vram.md §3.3: with --sdpa and no --split_attn a dense N x N bool mask; "
            "[mine] SDPA's memory-efficient kernel converts it to a bf16 bias it saves for "
            "backward, so 3 bytes x N^2 per sample",
            "swap": _V21 + " (19 double + 39 single)",
        },
    ),
    ModelShape(
        id="hunyuan-video-1.5",
        architecture="hunyuan_video_1_5",
        title="HunyuanVideo 1.5",
        params_b=8.33,
        hidden=2048,
        groups=(BlockGroup("double", 54, 288, 149, 53 * 2048, streams=2),),
        patch=(1, 1, 1),
        vae_spatial=16,
        vae_temporal=4,
        latent_channels=32,
        text_tokens_max=1128,
        text_tokens_typical=300,
        text_joint=True,
        weights_gib={"none": 15.51, "base": 7.75, "scaled": 8.15},
        lora_params_per_rank=5.53e6,
        lora_modules=756,
        swap_rule="uniform",
        swap_limit=51,
        activation_source="estimated",
        video=True,
        sources={
            "shape": _V11,
            "weights": _V12,
            "activations": _V13 + " (~53 h, not measured)",
            "swap": _V21,
            "text": _V11 + " (Qwen2.5-VL <= 1000 + byT5 <= 128); typical 300 [assumed]",
        },
    ),
    ModelShape(
        id="framepack",
        architecture="framepack",
        title="FramePack (HunyuanVideo packed)",
        params_b=12.87,
        hidden=3072,
        groups=(
            BlockGroup("double", 20, 648, 439, 164e3, streams=2),
            BlockGroup("single", 40, 270, 165, 157e3),
        ),
        patch=(1, 2, 2),
        vae_spatial=8,
        vae_temporal=4,
        latent_channels=16,
        text_tokens_max=256,
        text_tokens_typical=256,
        text_joint=True,
        weights_gib={"none": 23.98, "base": 11.99, "scaled": 15.81},
        lora_params_per_rank=4.30e6,
        lora_modules=440,
        swap_rule="flux1",
        swap_limit=38,
        activation_source="measured",
        token_layout="framepack",
        video=True,
        extra_fixed_tokens=729,
        notes=(
            "Tokens: noisy window + 2 clean 1x frames + clean 2x (2x4x4) + clean 4x (4x8x8) "
            "sections, plus ~729 SigLIP image tokens.",
        ),
        sources={
            "shape": _V11,
            "weights": _V12,
            "activations": _V13 + " (HunyuanVideo 164 k / 157 k)",
            "tokens": _V11 + " (FramePack formula, 640x640 -> ~18.4 k)",
            "swap": _V21,
        },
    ),
    ModelShape(
        id="kandinsky5-lite-video",
        architecture="kandinsky5",
        title="Kandinsky 5 Lite video (2B)",
        params_b=2.01,
        hidden=1792,
        groups=(
            BlockGroup("text", 2, 84, 43, 65 * 1792, sees="text"),
            BlockGroup("visual", 32, 114, 59, 65 * 1792),
        ),
        patch=(1, 2, 2),
        vae_spatial=8,
        vae_temporal=4,
        latent_channels=16,
        text_tokens_max=256,
        text_tokens_typical=256,
        text_joint=False,
        weights_gib={"none": 3.74, "scaled": 1.94},
        lora_params_per_rank=1.56e6,
        lora_modules=332,
        swap_rule="kandinsky",
        swap_limit=31,
        activation_source="estimated",
        video=True,
        notes=("Any fp8 request quantises with block scaling: plan it as fp8 scaled.",),
        sources={
            "shape": _V11,
            "weights": _V12,
            "activations": _V13 + " (~60-75 h, not measured; 65 h used)",
            "swap": _V21 + " (no assert; effective max 1 text + 30 visual)",
        },
    ),
    ModelShape(
        id="kandinsky5-lite-image",
        architecture="kandinsky5",
        title="Kandinsky 5 Lite image (6B)",
        params_b=6.02,
        hidden=2560,
        groups=(
            BlockGroup("text", 2, 165, 85, 65 * 2560, sees="text"),
            BlockGroup("visual", 50, 223, 115, 65 * 2560),
        ),
        patch=(1, 2, 2),
        vae_spatial=8,
        vae_temporal=1,
        latent_channels=16,
        text_tokens_max=512,
        text_tokens_typical=512,
        text_joint=False,
        weights_gib={"none": 11.22, "scaled": 5.80},
        lora_params_per_rank=3.42e6,
        lora_modules=512,
        swap_rule="kandinsky",
        swap_limit=49,
        activation_source="estimated",
        musubi_trainable=False,
        notes=("musubi.md §1.0: Kandinsky-5 image Lite models are not supported for training.",),
        sources={
            "shape": _V11,
            "weights": _V12,
            "activations": _V13 + " (~60-75 h, not measured; 65 h used)",
            "swap": _V21,
        },
    ),
    ModelShape(
        id="kandinsky5-pro-video",
        architecture="kandinsky5",
        title="Kandinsky 5 Pro video (19B)",
        params_b=19.31,
        hidden=4096,
        groups=(
            BlockGroup("text", 4, 432, 223, 65 * 4096, sees="text"),
            BlockGroup("visual", 60, 584, 301, 65 * 4096),
        ),
        patch=(1, 2, 2),
        vae_spatial=8,
        vae_temporal=4,
        latent_channels=16,
        text_tokens_max=256,
        text_tokens_typical=256,
        text_joint=False,
        weights_gib={"none": 35.97, "scaled": 18.57},
        lora_params_per_rank=6.68e6,
        lora_modules=624,
        swap_rule="kandinsky",
        swap_limit=60,
        activation_source="estimated",
        video=True,
        notes=("10 s / HD variants use NABLA sparse attention: attention FLOPs over-estimated.",),
        sources={
            "shape": _V11,
            "weights": _V12,
            "activations": _V13 + " (~60-75 h, not measured; 65 h used)",
            "swap": _V21 + " (effective max 2 text + 58 visual)",
        },
    ),
    ModelShape(
        id="krea2",
        architecture="krea2",
        title="Krea 2 (RAW / Turbo)",
        params_b=12.82,
        hidden=6144,
        groups=(BlockGroup("main", 28, 828, 427, 58 * 6144),),
        patch=(1, 2, 2),
        vae_spatial=8,
        vae_temporal=1,
        latent_channels=16,
        text_tokens_max=512,
        text_tokens_typical=512,
        text_joint=True,
        weights_gib={"none": 23.88, "scaled": 12.91},
        lora_params_per_rank=3.67e6,
        lora_modules=264,
        swap_rule="uniform",
        swap_limit=26,
        activation_source="estimated",
        gc_cpu_offload=False,
        notes=(
            "--fp8_base must be paired with --fp8_scaled.",
            "Activation CPU offload arrived in a later Musubi PR than 0.3.4's base.",
        ),
        sources={
            "shape": _V11 + " (GQA 48 q / 12 kv heads; incl. 0.34 B text-fusion transformer)",
            "weights": _V12,
            "activations": _V13 + " (~58 h = 356 k, not measured)",
            "swap": _V21,
        },
    ),
    ModelShape(
        id="ideogram4",
        architecture="ideogram4",
        title="Ideogram 4",
        params_b=9.24,
        hidden=4608,
        groups=(BlockGroup("main", 34, 503.9, 259.9, 60 * 4608),),
        patch=(1, 2, 2),
        vae_spatial=8,
        vae_temporal=1,
        latent_channels=32,
        text_tokens_max=512,
        text_tokens_typical=128,
        text_joint=True,
        weights_gib={"scaled": 9.12},
        lora_params_per_rank=2.663e6,
        lora_modules=170,
        swap_rule="uniform",
        swap_limit=33,
        activation_source="assumed",
        notes=(
            "The DiT ships as fp8 scaled only (no bf16 weights); LoRA cannot be merged into it.",
            "SageAttention is impossible (head dim 256).",
        ),
        sources={
            "shape": "[code] ideogram4/ideogram4_model.py Ideogram4Config: emb_dim 4608, 34 "
            "layers, 18 heads x 256, SwiGLU 12288, adaLN 512 -> 4 x 4608; FLUX.2 VAE "
            "(32 ch) with 2x2 patch (in_channels 128)",
            "weights": "[mine] per block 4h^2 + 3 x 4608 x 12288 + 512 x 18432 = 264.2 M "
            "Linear params -> 503.9 MiB bf16, 259.9 MiB fp8+scale; 34 blocks + 245 M "
            "bf16 feature projection (53248 -> 4608) = 9.12 GiB",
            "lora": "[code] networks/lora_ideogram4.py (adaln_modulation excluded): "
            "per block 4h + 2h + 3 x (h + 12288) = 78 336 per rank x 34",
            "activations": "[assumed] ~60 h, not measured",
            "swap": "[code] ideogram4_model.py enable_block_swap: <= num_blocks - 1 = 33",
            "text": "musubi.md §1.12 (cache sized at 128 tokens); max 512 [assumed]",
        },
    ),
    ModelShape(
        id="hidream-o1",
        architecture="hidream_o1",
        title="HiDream-O1-Image (Qwen3-VL decoder, pixel space)",
        params_b=8.15,
        hidden=4096,
        groups=(BlockGroup("main", 36, 368, 190, 60 * 4096),),
        patch=(1, 32, 32),
        vae_spatial=1,
        vae_temporal=1,
        latent_channels=3,
        text_tokens_max=512,
        text_tokens_typical=128,
        text_joint=True,
        weights_gib={"none": 15.18, "scaled": 8.92},
        lora_params_per_rank=2.73e6,
        lora_modules=255,
        swap_rule="uniform",
        swap_limit=35,
        activation_source="assumed",
        token_layout="pixel",
        notes=(
            "Decoder size comes from the HF config at run time; these numbers assume the "
            "Qwen3-VL-8B text decoder (36 layers, h 4096, SwiGLU 12288, GQA 32/8) and are "
            "unverified.",
            "--fp8_scaled requires --fp8_base; plain fp8 is rejected.",
        ),
        sources={
            "shape": "[code] hidream_o1/hidream_o1_utils.py (32x32 pixel patch tokens, no VAE); "
            "decoder dims [assumed] Qwen3-VL-8B",
            "weights": "[mine] 36 x 193 M Linear + 0.62 B embeddings + ~0.58 B vision "
            "encoder = 8.15 B [assumed]; fp8 scaled: 36 x 190 MiB blocks + 1.2 B bf16 rest",
            "lora": "[mine] per layer q 8192 + k,v 2 x 5120 + o 8192 + 3 x 16384 = 75 776 "
            "per rank x 36 [assumed dims]",
            "activations": "[assumed] ~60 h",
            "swap": "musubi.md §1.1 (<= layers - 1)",
        },
    ),
)


# Chroma 1: FLUX.1-schnell's blocks without their modulation Linears (img_mod / txt_mod 2 x
# 3072 x 18432 per double block, modulation 3072 x 9216 per single block), which the
# approximator (distilled_guidance_layer) replaces for every block at once.
_CHROMA_GROUPS = (
    BlockGroup("double", 19, 432, None, 178e3, streams=2),
    BlockGroup("single", 38, 216, None, 166e3),
)
_AITK_CHROMA = "[code] ai-toolkit 27a03a9 extensions_built_in/diffusion_models/chroma/"

# SDXL's UNet as block lists by level (diffusers UNet2DConditionModel, the SDXL config:
# block_out_channels 320/640/1280, transformer_layers_per_block 1/2/10 with no attention at
# the first level, layers_per_block 2, cross_attention_dim 2048, use_linear_projection).
# The token grid is the 32x32 level's (32 px per token); the 64x64 and 128x128 levels see
# 4x and 16x its positions.
_SDXL_GROUPS = (
    BlockGroup("attn_32", 60, 56.88, None, 54 * 1280),
    BlockGroup("attn_64", 10, 14.84, None, 54 * 640, token_scale=4, width=640),
    BlockGroup("resnet_32", 7, 67.96, None, 16 * 1280, width=1280, attends=False),
    BlockGroup("resnet_64", 5, 25.35, None, 16 * 640, token_scale=4, width=640, attends=False),
    BlockGroup("resnet_128", 5, 6.60, None, 16 * 320, token_scale=16, width=320, attends=False),
)
_DIFFUSERS_SDXL = (
    "[code] diffusers UNet2DConditionModel with stabilityai/stable-diffusion-xl-base-1.0's "
    "unet/config.json, which ai-toolkit 27a03a9 toolkit/stable_diffusion_model.py:335-367 "
    "loads through StableDiffusionXLPipeline; parameters, layers per width, cross-attention "
    "k/v and LoRA targets checked on that UNet built on the meta device "
    "(tests/backends/aitoolkit/aitk_shapes_harness.py)"
)

OTHER_TRAINER_SHAPES: Mapping[str, ModelShape] = _shapes(
    ModelShape(
        id="chroma1",
        architecture="chroma",
        title="Chroma1 (Base / HD), FLUX.1-schnell-derived",
        params_b=8.90,
        hidden=3072,
        groups=_CHROMA_GROUPS,
        patch=(1, 2, 2),
        vae_spatial=8,
        vae_temporal=1,
        latent_channels=16,
        text_tokens_max=512,
        text_tokens_typical=512,
        text_joint=True,
        weights_gib={"none": 16.58},
        lora_params_per_rank=3.63e6,
        lora_modules=243,
        swap_rule="flux1",
        swap_limit=0,
        activation_source="estimated",
        musubi_trainable=False,
        gc_cpu_offload=False,
        notes=(
            "Only AI-Toolkit trains it; it builds a dense B x heads x L x L attention mask "
            "(AI-Toolkit's Chroma components count it).",
        ),
        sources={
            "shape": _AITK_CHROMA + "src/model.py:38-52 (ChromaParams: hidden 3072, 24 heads, "
            "mlp_ratio 4, 19 double + 38 single blocks, approximator 64 -> 5120 x 5 -> 3072); "
            "chroma_model.py:152-170 counts the blocks from the checkpoint; every count "
            "here is checked on AI-Toolkit's own Chroma built on the meta device "
            "(tests/backends/aitoolkit/aitk_shapes_harness.py)",
            "weights": "[mine] FLUX.1's blocks (vram.md §1.1: 648 / 270 MiB) less their "
            "modulation Linears (216 / 54 MiB): 19 x 226.5 M + 38 x 113.2 M = 8.61 B, plus "
            "the approximator 0.28 B and the embedders = 8.90 B, 16.58 GiB bf16",
            "lora": "[code] chroma_model.py:87 target_lora_modules ['Chroma'] (every Linear, "
            "toolkit/lora_special.py); [mine] (in + out) per Linear: 98 304 per double, "
            "43 008 per single block, 115 776 for the approximator = 3.63 M per rank",
            "activations": "vram.md §1.3 (FLUX.1 double/single 178 k/166 k; the modulation "
            "vectors are per sample, not per token) [estimated]",
            "text": "chroma_model.py:388-397 (T5-XXL only, padded to 512), joint",
        },
    ),
    ModelShape(
        id="sdxl-unet",
        architecture="sdxl",
        title="Stable Diffusion XL base 1.0 UNet (a UNet sized by level, not a DiT)",
        params_b=2.567,
        hidden=1280,
        groups=_SDXL_GROUPS,
        patch=(1, 4, 4),
        vae_spatial=8,
        vae_temporal=1,
        latent_channels=4,
        text_tokens_max=77,
        text_tokens_typical=77,
        text_joint=False,
        weights_gib={"none": 4.78},
        lora_params_per_rank=2.66e6,
        lora_modules=722,
        swap_rule="uniform",
        swap_limit=0,
        activation_source="assumed",
        musubi_trainable=False,
        gc_cpu_offload=False,
        notes=(
            "A UNet approximated as block lists by level: weights exact, FLOPs and "
            "activations per level [mine]; its band is wider.",
        ),
        sources={
            "shape": _DIFFUSERS_SDXL,
            "weights": "[mine] per transformer layer 18 d^2 (self-attention 4, cross q/o 2, "
            "GEGLU 12) + proj_in/out shares: 60 x 29.8 M at d 1280, 10 x 7.8 M at d 640; "
            "ResNets (3x3 convs, shortcuts, resamplers) 249 M / 66 M / 17 M at the 32/64/128 "
            "levels; cross-attention k/v (2048 -> d) 341 M and time embeddings 25 M outside "
            "the blocks (they see 77 text tokens or one vector) = 2.567 B, as vram.md §1.1 "
            "[ext]",
            "lora": "[mine] kohya's Transformer2DModel targets, (in + out) per Linear: "
            "28 d + 4096 per layer + proj_in/out = 2.66 M per rank over 722 modules (a rank "
            "32 UNet LoRA is the familiar ~170 MB fp16 file)",
            "flops": "[mine] forward at 1024^2: 4.0 TFLOP in the 32x32 level's layers, "
            "1.1 in the 64x64 one's, 1.6 in the ResNets: 6.7 TFLOP; checked against "
            "sd-scripts' 1.23 s/it on a 3090 without checkpointing (vram.md §3.2 row 46)",
            "activations": "[assumed] 54 d bytes per position per transformer layer "
            "(27 bf16 tensors of width d saved: attention, cross-attention, GEGLU 8 d), 16 C "
            "per ResNet block; not measured",
            "text": "CLIP-L + OpenCLIP bigG, 77 tokens, 2048-d context (vram.md §1.1), "
            "cross-attention",
        },
    ),
)
"""Models only other trainers train (AI-Toolkit's Chroma and SDXL): Musubi's estimator
never sees them (:func:`shapes_for_architecture`), :func:`get_shape` finds them."""


_DEPTH = re.compile(r"^(?P<base>.+)@(?P<blocks>\d+)-blocks$")


def with_depth(model_id: str, blocks: int) -> str:
    """The id of ``model_id`` built with ``blocks`` transformer blocks instead of its
    released count (Musubi's ``--num_layers``, Qwen-Image only): ``qwen-image@1-blocks``."""
    return f"{model_id}@{blocks}-blocks"


def base_model(model_id: str) -> str:
    """``model_id`` without a depth (:func:`with_depth`): the released model's id, which
    the encoder and calibration tables are keyed by."""
    found = _DEPTH.match(model_id)
    return found["base"] if found else model_id


def get_shape(model_id: str) -> ModelShape:
    """The shape record for ``model_id`` (a :func:`with_depth` id: the record resized to
    that depth); :class:`NotFound` lists the known ids."""
    found = _DEPTH.match(model_id)
    if found:
        return _resized(get_shape(found["base"]), int(found["blocks"]))
    found_shape = MODEL_SHAPES.get(model_id) or OTHER_TRAINER_SHAPES.get(model_id)
    if found_shape is not None:
        return found_shape
    known = ", ".join(sorted({**MODEL_SHAPES, **OTHER_TRAINER_SHAPES}))
    raise NotFound(f"unknown model id {model_id!r}", hint=f"known model ids: {known}")


def _resized(shape: ModelShape, blocks: int) -> ModelShape:
    """``shape`` with ``blocks`` blocks in its one block list: each removed block takes its
    Linear weights off the parameters and every weight mode, its share of the LoRA (which
    wraps only block modules) and one block off the swap limit ([mine]: the rest of the
    model, embedders and final layer, is what the released count leaves)."""
    if len(shape.groups) != 1 or shape.swap_rule != "uniform":
        raise Unsupported(
            f"the estimator resizes only a model with one block list, not {shape.id}",
            hint="backend.config.num_layers is Qwen-Image's (Musubi's --num_layers)",
        )
    group = shape.groups[0]
    if not 1 <= blocks <= group.count:
        raise InvalidInput(
            f"{shape.title} has 1..{group.count} blocks, not {blocks}",
            hint=f"set backend.config.num_layers between 1 and {group.count}",
        )
    removed = group.count - blocks
    weights = {
        mode: gib - removed * shape.lin_mib(group, mode) / 1024
        for mode, gib in shape.weights_gib.items()
    }
    return replace(
        shape,
        id=with_depth(shape.id, blocks),
        title=f"{shape.title}, {blocks} of its {group.count} blocks",
        params_b=shape.params_b - removed * group.lin_params / 1e9,
        groups=(replace(group, count=blocks),),
        weights_gib=MappingProxyType(weights),
        lora_params_per_rank=shape.lora_params_per_rank * blocks / group.count,
        swap_limit=max(0, shape.swap_limit - removed),
        notes=(
            *shape.notes,
            f"Sized for a DiT of {blocks} blocks (backend.config.num_layers), not the "
            f"released {group.count}.",
        ),
    )


def shapes_for_architecture(architecture: str) -> tuple[ModelShape, ...]:
    """Every model id of one Kura architecture; :class:`NotFound` for an unknown one."""
    if architecture not in ARCHITECTURE_IDS:
        raise NotFound(
            f"unknown architecture {architecture!r}",
            hint="known architectures: " + ", ".join(ARCHITECTURE_IDS),
        )
    found = tuple(shape for shape in MODEL_SHAPES.values() if shape.architecture == architecture)
    if not found:
        raise NotFound(
            f"Musubi's estimator has no model shape for {architecture}",
            hint="Musubi Tuner does not train it; see `kura model bundles` for its backends",
        )
    return found
