"""What AI-Toolkit trains, per Kura bundle: its ``model.arch``, how its LoRA is written,
which memory aids its model class honours.

Data, checked against ostris/ai-toolkit 27a03a9 (v0.12.26): ``arch`` ids are the ``arch``
attributes of the registered model classes (``extensions_built_in/diffusion_models/*``,
``toolkit/models/wan21``) or the legacy ids ``toolkit/config_modules.py::ModelConfig``
maps (``sdxl``); the default repositories are the UI presets
(``ui/src/app/jobs/new/options.tsx``); ``layer_offloading`` is listed where the class file
reads the key (a grep of the class files); ``peft`` is True where
``toolkit/lora_special.py`` switches to PEFT format (every transformer class), which sets
alpha = rank; accuracy-recovery adapters are the UI's ``… with ARA`` options.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

__all__ = [
    "AITK_COMMIT",
    "AITK_MODELS",
    "AITK_RELEASE",
    "KURA_ARCHITECTURES",
    "AitkModel",
    "SampleControl",
    "SampleDefaults",
    "bundles_for",
    "model_for",
]

AITK_RELEASE = "0.12.26"
AITK_COMMIT = "27a03a91f23eb1b757d5ec2e80ee3e129cfcc350"


SampleControl = Literal["required", "optional", "ignored"]
"""Whether the model class's sampler opens a sample's ``ctrl_img``: it raises without one
(``required``), reads one when given (``optional``), or never reads it (``ignored``)."""


@dataclass(frozen=True)
class SampleDefaults:
    """The sampling settings AI-Toolkit's own examples (``config/examples/*``) or, where it has
    none for the architecture, its UI job (``ui/src/app/jobs/new/options.tsx`` over
    ``ui/src/helpers/defaultSamples.ts``) write. ``SampleConfig``'s own defaults (cfg 7, 20
    steps, ``neg: False``, ``toolkit/config_modules.py:86-90``) are SD 1.5's, so Kura writes
    these instead."""

    guidance_scale: float
    sample_steps: int
    source: str


_UI_SAMPLES = "ui/src/helpers/defaultSamples.ts:47-48 (the UI's job; options.tsx sets none)"
_UI_DEFAULT = SampleDefaults(4.0, 30, _UI_SAMPLES)


@dataclass(frozen=True)
class AitkModel:
    """One Kura bundle as AI-Toolkit trains it."""

    bundle: str
    architecture: str
    """The Kura architecture id."""
    arch: str
    """AI-Toolkit's ``model.arch``."""
    source: str
    """The class file (relative to the AI-Toolkit checkout) that trains it."""
    peft: bool = True
    layer_offloading: bool = False
    ara: Mapping[str, str] = field(default_factory=dict)
    """qtype → accuracy-recovery adapter (``repo/file.safetensors``)."""
    refuses_unload_text_encoder: bool = False
    video: bool = False
    control: bool = False
    """Edit models: each item needs a control image (``datasets[].control_path``)."""
    comfy_prefix: str = "diffusion_model."
    """What the saved LoRA keys start with (the class's ``convert_lora_weights_before_save``)."""
    two_experts: bool = False
    """Wan 2.2 A14B: one job trains both experts and saves two files."""
    sample_control: SampleControl = "ignored"
    """Required: ``flux_kontext.py:213-216``, ``qwen_image_edit_plus.py:179`` (via
    ``get_prompt_embeds``), ``wan21_i2v.py:415-416``, and ``qwen_image_edit.py:98-122`` hands
    ``None`` to diffusers' ``QwenImageEditPipeline``, which reads ``image.size``
    (``pipeline_qwenimage_edit.py:676``). Optional: ``flux2_model.py:303-318``,
    ``wan22_14b_i2v_model.py:41``, ``wan22_5b_model.py:175``. Ignored elsewhere (Qwen-Image
    raises on one, ``qwen_image.py:263-266``)."""
    samples: SampleDefaults = _UI_DEFAULT
    samples_after_caching: bool = True
    """False where sampling crashes once ``cache_text_embeddings`` has unloaded the text
    encoders: AI-Toolkit swaps them for ``FakeTextEncoder`` (``toolkit/unloader.py:10-21``,
    ``:54-60``), and diffusers' SDXL pipeline, which the legacy SDXL class samples with
    (``toolkit/stable_diffusion_model.py:1563``), reads ``text_encoder_2.config``
    (``pipeline_stable_diffusion_xl.py:1128``): seen in a real tiny SDXL run."""
    quantizes: bool = True
    """``quantize`` / ``quantize_te`` act: the legacy SDXL class never quantizes its UNet or
    its text encoders (``toolkit/stable_diffusion_model.py:335-367``; the quantize calls at
    ``:428``, ``:452`` are SD3's), so there the keys would do nothing."""
    locon: bool = False
    """``network_type: locon`` builds modules: ``LycorisSpecialNetwork`` wraps only modules of
    the UNet class names ``Transformer2DModel``/``ResnetBlock2D``/``Downsample2D``/
    ``Upsample2D`` (``toolkit/lycoris_special.py:117-122``, ``:366-368``, matched by class
    name at ``:236-237``), which no DiT has: there it trains nothing."""


def _m(**kwargs: object) -> AitkModel:
    return AitkModel(**kwargs)  # type: ignore[arg-type]


_ARA = "ostris/accuracy_recovery_adapters/"
_QWEN = "extensions_built_in/diffusion_models/qwen_image/"
_WAN22 = "extensions_built_in/diffusion_models/wan22/"
_EX = "config/examples/"
_QWEN_EDIT_PLUS_SAMPLES = SampleDefaults(
    3.0, 25, _EX + "train_lora_qwen_image_edit_2509_32gb.yaml:101-102"
)
_SDXL_SAMPLES = SampleDefaults(6.0, 30, "ui/src/app/jobs/new/options.tsx:592 (cfg), " + _UI_SAMPLES)

_TABLE: tuple[AitkModel, ...] = (
    _m(
        bundle="aitk-flux1-kontext-dev",
        architecture="flux_kontext",
        arch="flux_kontext",
        source="extensions_built_in/diffusion_models/flux_kontext/flux_kontext.py",
        control=True,
        sample_control="required",
        samples=SampleDefaults(4.0, 20, _EX + "train_lora_flux_kontext_24gb.yaml:102-103"),
    ),
    _m(
        bundle="aitk-flux2-dev",
        architecture="flux2",
        arch="flux2",
        source="extensions_built_in/diffusion_models/flux2/flux2_model.py",
        layer_offloading=True,
        sample_control="optional",
    ),
    _m(
        bundle="aitk-flux2-klein-base-4b",
        architecture="flux2",
        arch="flux2_klein_4b",
        source="extensions_built_in/diffusion_models/flux2/flux2_klein_model.py",
        layer_offloading=True,
        sample_control="optional",
    ),
    _m(
        bundle="aitk-flux2-klein-base-9b",
        architecture="flux2",
        arch="flux2_klein_9b",
        source="extensions_built_in/diffusion_models/flux2/flux2_klein_model.py",
        layer_offloading=True,
        sample_control="optional",
    ),
    _m(
        bundle="aitk-qwen-image",
        architecture="qwen_image",
        arch="qwen_image",
        source=_QWEN + "qwen_image.py",
        layer_offloading=True,
        ara={"uint3": _ARA + "qwen_image_torchao_uint3.safetensors"},
        samples=SampleDefaults(3.0, 25, _EX + "train_lora_qwen_image_24gb.yaml:91-92"),
    ),
    _m(
        bundle="aitk-qwen-image-edit",
        architecture="qwen_image",
        arch="qwen_image_edit",
        source=_QWEN + "qwen_image_edit.py",
        layer_offloading=True,
        control=True,
        refuses_unload_text_encoder=True,
        ara={"uint3": _ARA + "qwen_image_edit_torchao_uint3.safetensors"},
        sample_control="required",
        samples=SampleDefaults(3.0, 25, _EX + "train_lora_qwen_image_edit_32gb.yaml:98-99"),
    ),
    _m(
        bundle="aitk-qwen-image-edit-2509",
        architecture="qwen_image",
        arch="qwen_image_edit_plus",
        source=_QWEN + "qwen_image_edit_plus.py",
        layer_offloading=True,
        control=True,
        ara={"uint3": _ARA + "qwen_image_edit_2509_torchao_uint3.safetensors"},
        sample_control="required",
        samples=_QWEN_EDIT_PLUS_SAMPLES,
    ),
    _m(
        bundle="aitk-qwen-image-edit-2511",
        architecture="qwen_image",
        arch="qwen_image_edit_plus",
        source=_QWEN + "qwen_image_edit_plus.py",
        layer_offloading=True,
        control=True,
        ara={"uint3": _ARA + "qwen_image_edit_2511_torchao_uint3.safetensors"},
        sample_control="required",
        samples=_QWEN_EDIT_PLUS_SAMPLES,
    ),
    _m(
        bundle="aitk-zimage-base",
        architecture="zimage",
        arch="zimage",
        source="extensions_built_in/diffusion_models/z_image/z_image.py",
        layer_offloading=True,
        samples=SampleDefaults(
            4.0, 30, "ui/src/app/jobs/new/options.tsx:698 (steps), " + _UI_SAMPLES
        ),
    ),
    _m(
        bundle="aitk-wan2.1-t2v-14b",
        architecture="wan",
        arch="wan21",
        source="toolkit/models/wan21/wan21.py",
        layer_offloading=True,
        video=True,
        samples=SampleDefaults(5.0, 30, _EX + "train_lora_wan21_14b_24gb.yaml:97-98"),
    ),
    _m(
        bundle="aitk-wan2.1-t2v-1.3b",
        architecture="wan",
        arch="wan21",
        source="toolkit/models/wan21/wan21.py",
        layer_offloading=True,
        video=True,
        samples=SampleDefaults(5.0, 30, _EX + "train_lora_wan21_1b_24gb.yaml:86-87"),
    ),
    _m(
        bundle="aitk-wan2.1-i2v-14b",
        architecture="wan",
        arch="wan21_i2v",
        source="toolkit/models/wan21/wan21_i2v.py",
        layer_offloading=True,
        video=True,
        sample_control="required",
    ),
    _m(
        bundle="aitk-wan2.2-t2v-a14b",
        architecture="wan",
        arch="wan22_14b",
        source=_WAN22 + "wan22_14b_model.py",
        layer_offloading=True,
        video=True,
        two_experts=True,
        ara={"uint4": _ARA + "wan22_14b_t2i_torchao_uint4.safetensors"},
        samples=SampleDefaults(3.5, 25, _EX + "train_lora_wan22_14b_24gb.yaml:107-108"),
    ),
    _m(
        bundle="aitk-wan2.2-i2v-a14b",
        architecture="wan",
        arch="wan22_14b_i2v",
        source=_WAN22 + "wan22_14b_i2v_model.py",
        layer_offloading=True,
        video=True,
        two_experts=True,
        ara={"uint4": _ARA + "wan22_14b_i2v_torchao_uint4.safetensors"},
        sample_control="optional",
    ),
    _m(
        bundle="aitk-wan2.2-ti2v-5b",
        architecture="wan",
        arch="wan22_5b",
        source=_WAN22 + "wan22_5b_model.py",
        layer_offloading=True,
        video=True,
        sample_control="optional",
    ),
    _m(
        bundle="aitk-hidream-o1",
        architecture="hidream_o1",
        arch="hidream_o1",
        source="extensions_built_in/diffusion_models/hidream/hidream_o1_model.py",
        layer_offloading=True,
    ),
    _m(
        bundle="aitk-ideogram4",
        architecture="ideogram4",
        arch="ideogram4",
        source="extensions_built_in/diffusion_models/ideogram4/ideogram4.py",
        layer_offloading=True,
        samples=SampleDefaults(
            4.0, 30, "ui/src/helpers/defaultSamples.ts:975-976 (defaultIdeogramSamplesConfig)"
        ),
    ),
    _m(
        bundle="aitk-krea2",
        architecture="krea2",
        arch="krea2",
        source="extensions_built_in/diffusion_models/krea2/krea2.py",
        layer_offloading=True,
    ),
    # AI-Toolkit only (Musubi Tuner has neither)
    _m(
        bundle="sdxl-base-1.0",
        architecture="sdxl",
        arch="sdxl",
        source="toolkit/stable_diffusion_model.py",
        peft=False,
        comfy_prefix="lora_unet_",
        samples=_SDXL_SAMPLES,
        samples_after_caching=False,
        locon=True,
        quantizes=False,
    ),
    _m(
        bundle="aitk-sdxl-base-1.0",
        architecture="sdxl",
        arch="sdxl",
        source="toolkit/stable_diffusion_model.py",
        peft=False,
        comfy_prefix="lora_unet_",
        samples=_SDXL_SAMPLES,
        samples_after_caching=False,
        locon=True,
        quantizes=False,
    ),
    _m(
        bundle="chroma1-base",
        architecture="chroma",
        arch="chroma",
        source="extensions_built_in/diffusion_models/chroma/chroma_model.py",
        samples=SampleDefaults(4.0, 25, _EX + "train_lora_chroma_24gb.yaml:100-101"),
    ),
)

AITK_MODELS: Mapping[str, AitkModel] = MappingProxyType({m.bundle: m for m in _TABLE})
"""Kura bundle id → how AI-Toolkit trains it."""

KURA_ARCHITECTURES: frozenset[str] = frozenset(m.architecture for m in _TABLE)
"""Kura architectures AI-Toolkit trains (through at least one bundle above)."""


def model_for(bundle: str) -> AitkModel | None:
    return AITK_MODELS.get(bundle)


def bundles_for(architecture: str) -> tuple[str, ...]:
    return tuple(m.bundle for m in _TABLE if m.architecture == architecture)
