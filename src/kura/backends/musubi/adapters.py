"""The Musubi Tuner adapter table: one data record per Kura architecture.

Every flag name, script name and limit here was read from Musubi Tuner at the release in
``MUSUBI_RELEASE`` (tag ``v0.3.4``): the argument parsers of the ``*_train_network.py`` /
``*_cache_*.py`` scripts, ``training/parser_common.py``, ``dataset/config_utils.py`` and
the model classes' block-swap assertions, plus the ``docs/*.md`` training examples for
the defaults. Each default records its source.

When the pin moves, re-check: the ``--model_version`` / ``--task`` choices (FLUX.2 names
changed in PR #858), the block-swap assertions in the model files, the default save
precision (fp32 since 2026-06-13), the dataset TOML schema in ``config_utils.py``, the
text-encoder fp8 flag names, and whether ``--block_swap_h2d_only`` /
``--block_swap_ring_size`` still exist. Then regenerate ``docs/musubi-adapters.md``::

    python -m kura.backends.musubi.adapter_doc > docs/musubi-adapters.md
"""

from __future__ import annotations

from kura.backends.musubi.adapter_model import (
    Adapter,
    ConfigKey,
    Default,
    RoleFlag,
    StepName,
    Variant,
)

__all__ = ["ADAPTERS", "MUSUBI_RELEASE", "MUSUBI_TAG", "adapter_for"]

MUSUBI_RELEASE = "0.3.4"
MUSUBI_TAG = f"v{MUSUBI_RELEASE}"

_SWAP_SRC_HV = "hunyuan_model/models.py: N//2 double + (N-N//2)*2+1 single, each <= count-1 (20+40)"
_PARSER = "training/parser_common.py default"
_DATASET = "dataset/config_utils.py default"


def _defaults(doc: str, **overrides: Default) -> dict[str, Default]:
    """The defaults every adapter shares, with their sources, plus per-arch overrides."""
    example = f"docs/{doc} training example"
    base = {
        "mixed_precision": Default("bf16", example),
        "attention": Default("sdpa", f"{example}; the trainer requires one attention flag"),
        # Off unless the planner turns it on with a reason: a memory aid is never a hidden
        # default (the doc examples enable it because they are sized for 24 GB cards).
        "gradient_checkpointing": Default(False, f"{_PARSER} (store_true)"),
        "batch_size": Default(1, _DATASET),
        "gradient_accumulation_steps": Default(1, _PARSER),
        "max_data_loader_n_workers": Default(2, example),
        "persistent_data_loader_workers": Default(True, example),
        "num_cpu_threads_per_process": Default(1, f"{example} (accelerate launch line)"),
        "weighting_scheme": Default("none", f"{_PARSER} ('none')"),
    }
    base.update(overrides)
    return base


def _te_fp8(name: str, steps: tuple[StepName, ...], help_text: str) -> ConfigKey:
    return ConfigKey(name=name, kind="bool", flag=f"--{name}", steps=steps, help=help_text)


_HV_VAE_KEYS = (
    ConfigKey(
        "vae_chunk_size",
        "int",
        "--vae_chunk_size",
        ("cache_latents",),
        "HunyuanVideo VAE causal-conv chunk size at caching (lower VRAM).",
    ),
    ConfigKey(
        "vae_tiling",
        "bool",
        "--vae_tiling",
        ("cache_latents",),
        "Spatial VAE tiling at caching (lower VRAM).",
    ),
    ConfigKey(
        "vae_spatial_tile_sample_min_size",
        "int",
        "--vae_spatial_tile_sample_min_size",
        ("cache_latents",),
        "Tile size for VAE tiling at caching.",
    ),
)
_NUMPY_MEMMAP = ConfigKey(
    "disable_numpy_memmap",
    "bool",
    "--disable_numpy_memmap",
    ("train",),
    "Load weights without numpy memory mapping (more RAM, sometimes faster).",
)

QWEN_IMAGE_LAYERS = ConfigKey(
    "num_layers",
    "int",
    "--num_layers",
    ("train",),
    "Blocks of the DiT Musubi builds (default 60, the released Qwen-Image): only for a DiT "
    "of another depth, such as a test model; it must equal the file's own block count.",
)
"""``qwen_image_train_network.py --num_layers`` (passed to ``load_qwen_image_model``)."""


def _wan_variant(
    *,
    limit: int,
    controls: tuple[int, int | None] | None = None,
    clip: bool = False,
    i2v: bool = False,
    boundary: int | None = None,
    note: str = "",
) -> Variant:
    """``clip`` (Wan 2.1 I2V/FLF2V) and ``i2v`` (Wan 2.2 I2V) tasks sample from a start
    image: wan_train_network.py:57 (``"i2v" in task or "flf2v" in task``) opens
    ``image_path`` at :322-323."""
    step_flags: dict[StepName, tuple[str, ...]] = {}
    step_roles: dict[StepName, tuple[RoleFlag, ...]] = {}
    if clip:
        step_roles["cache_latents"] = (RoleFlag("image_encoder", "--clip"),)
        step_roles["train"] = (RoleFlag("image_encoder", "--clip", required=False),)
    elif i2v:
        step_flags["cache_latents"] = ("--i2v",)
    return Variant(
        cache_suffix="wan",
        swap_limit=limit,
        swap_limit_source=f"wan/modules/model.py: <= {limit + 1} blocks - 1",
        controls=controls,
        step_flags=step_flags,
        step_roles=step_roles,
        dual_dit_boundary=(
            Default(boundary, "docs/wan.md Wan2.2 boundary (integer form; the parser is type=int)")
            if boundary is not None
            else None
        ),
        note=note,
        sample_image=(
            "wan_train_network.py:322-323 opens the prompt's image_path for I2V sampling"
            if clip or i2v
            else None
        ),
    )


def _k5_variant(limit: int, blocks: str) -> Variant:
    return Variant(
        cache_suffix="k5",
        swap_limit=limit,
        swap_limit_source=(
            f"kandinsky5/models/dit.py clamps silently past this ({blocks}); Kura refuses instead"
        ),
    )


_FP_SAMPLE_IMAGE = (
    "fpack_train_network.py:100-101 asserts 'image_path should be set for I2V training'"
)
_FLUX2_SWAP = "flux_2/flux2_models.py split rule, each part <= count-2"
_QIE_CONTROL = Default(
    1024,
    "docs/dataset_config.md (Qwen-Image-Edit): 'If you want to resize the control images the "
    "same as the official code, specify [1024,1024]. We strongly recommend specifying this "
    "value.'",
)
_NO_ARCH_DETECTION = (
    "networks/network_arch.py detect_arch_config finds none of its block classes in this "
    "model and raises 'Cannot auto-detect architecture'"
)

ADAPTERS: dict[str, Adapter] = {
    "hunyuan_video": Adapter(
        id="hunyuan_video",
        title="HunyuanVideo",
        doc="docs/hunyuan_video.md",
        scripts={
            "cache_latents": "cache_latents",
            "cache_text_encoder": "cache_text_encoder_outputs",
            "train": "hv_train_network",
        },
        network_module="networks.lora",
        network_modules_also=("networks.loha", "networks.lokr"),
        roles={
            "cache_latents": (RoleFlag("vae", "--vae"),),
            "cache_text_encoder": (
                RoleFlag("text_encoder", "--text_encoder1"),
                RoleFlag("text_encoder_2", "--text_encoder2"),
            ),
            "train": (RoleFlag("dit", "--dit"),),
        },
        sample_roles=(
            RoleFlag("vae", "--vae"),
            RoleFlag("text_encoder", "--text_encoder1"),
            RoleFlag("text_encoder_2", "--text_encoder2"),
        ),
        version_flag=None,
        version_steps=(),
        variants={None: Variant("hv", 38, _SWAP_SRC_HV)},
        fp8_base=True,
        fp8_scaled="absent",
        fp8_source="hv_train_network.py defines no --fp8_scaled",
        text_encoder_fp8=_te_fp8(
            "fp8_llm", ("cache_text_encoder", "train"), "LLM text encoder in fp8."
        ),
        attention=("sdpa", "flash_attn", "xformers"),
        accepts_image=True,
        accepts_video=True,
        model_fps=24,
        resolution_multiple=16,
        weight_dtype_rule="none",
        extra_config=(
            *_HV_VAE_KEYS,
            ConfigKey(
                "img_in_txt_in_offloading",
                "bool",
                "--img_in_txt_in_offloading",
                ("train",),
                "Offload img_in/txt_in to CPU (HunyuanVideo only).",
            ),
        ),
        defaults=_defaults(
            "hunyuan_video.md",
            timestep_sampling=Default("shift", "docs/hunyuan_video.md training example"),
            discrete_flow_shift=Default(7.0, "docs/hunyuan_video.md training example"),
            frame_extraction=Default("head", _DATASET),
        ),
        split_attn_for=("xformers",),
        split_attn_source="hunyuan_model/attention.py: assert split_attn or cu_seqlens_q is "
        "None, 'Xformers only supports splitting'",
        notes=("`--fp8_scaled` does not exist for HunyuanVideo training; only `--fp8_base`.",),
    ),
    "hunyuan_video_1_5": Adapter(
        id="hunyuan_video_1_5",
        title="HunyuanVideo 1.5",
        doc="docs/hunyuan_video_1_5.md",
        scripts={
            "cache_latents": "hv_1_5_cache_latents",
            "cache_text_encoder": "hv_1_5_cache_text_encoder_outputs",
            "train": "hv_1_5_train_network",
        },
        network_module="networks.lora_hv_1_5",
        network_modules_also=("networks.loha", "networks.lokr"),
        roles={
            "cache_latents": (RoleFlag("vae", "--vae"),),
            "cache_text_encoder": (
                RoleFlag("text_encoder", "--text_encoder"),
                RoleFlag("text_encoder_2", "--byt5"),
            ),
            "train": (
                RoleFlag("dit", "--dit"),
                RoleFlag("vae", "--vae"),
                RoleFlag("text_encoder", "--text_encoder"),
                RoleFlag("text_encoder_2", "--byt5"),
            ),
        },
        sample_roles=(),
        version_flag="--task",
        version_steps=("train",),
        variants={
            "t2v": Variant(
                "hv15", 51, "hunyuan_video_1_5_models.py: blocks_to_swap < 54 double - 2"
            ),
            "i2v": Variant(
                "hv15",
                51,
                "hunyuan_video_1_5_models.py: blocks_to_swap < 54 double - 2",
                sample_image="hv_1_5_train_network.py:136-137 asserts 'image_path should be "
                "set for I2V training'",
                step_flags={"cache_latents": ("--i2v",)},
                step_roles={
                    "cache_latents": (RoleFlag("image_encoder", "--image_encoder"),),
                    "train": (RoleFlag("image_encoder", "--image_encoder"),),
                },
            ),
        },
        fp8_base=True,
        fp8_scaled="optional",
        fp8_source="hv_1_5_train_network.py --fp8_scaled; trainer_base asserts it needs --fp8_base",
        text_encoder_fp8=_te_fp8(
            "fp8_vl", ("cache_text_encoder", "train"), "Qwen2.5-VL text encoder in fp8."
        ),
        attention=("sdpa", "flash_attn", "xformers", "flash3"),
        accepts_image=True,
        accepts_video=True,
        model_fps=24,
        resolution_multiple=16,
        weight_dtype_rule="match_mixed_precision",
        extra_config=(
            ConfigKey(
                "vae_sample_size",
                "int",
                "--vae_sample_size",
                ("cache_latents", "train"),
                "VAE tile size (0 = no tiling; 256 is better than the default 128).",
            ),
            ConfigKey(
                "vae_enable_patch_conv",
                "bool",
                "--vae_enable_patch_conv",
                ("cache_latents", "train"),
                "Patch-wise VAE convolution (lower VRAM).",
            ),
        ),
        split_attn_for=("xformers",),
        split_attn_source="docs/hunyuan_video_1_5.md: '--xformers for xformers (requires "
        "--split_attn)'",
        defaults=_defaults(
            "hunyuan_video_1_5.md",
            timestep_sampling=Default("shift", "docs/hunyuan_video_1_5.md training example"),
            discrete_flow_shift=Default(2.0, "docs/hunyuan_video_1_5.md training example"),
            frame_extraction=Default("head", _DATASET),
        ),
        notes=(
            "An fp16 DiT checkpoint cannot train under bf16 mixed precision "
            "(the loader refuses to override its dtype).",
        ),
    ),
    "wan": Adapter(
        id="wan",
        title="Wan 2.1 / 2.2",
        doc="docs/wan.md",
        scripts={
            "cache_latents": "wan_cache_latents",
            "cache_text_encoder": "wan_cache_text_encoder_outputs",
            "train": "wan_train_network",
        },
        network_module="networks.lora_wan",
        network_modules_also=("networks.loha", "networks.lokr"),
        roles={
            "cache_latents": (RoleFlag("vae", "--vae"),),
            "cache_text_encoder": (RoleFlag("text_encoder", "--t5"),),
            "train": (RoleFlag("dit", "--dit"),),
        },
        sample_roles=(RoleFlag("vae", "--vae"), RoleFlag("text_encoder", "--t5")),
        version_flag="--task",
        version_steps=("train",),
        variants={
            "t2v-1.3B": _wan_variant(limit=29),
            "t2v-14B": _wan_variant(limit=39),
            "t2i-14B": _wan_variant(limit=39),
            "i2v-14B": _wan_variant(limit=39, clip=True),
            "flf2v-14B": _wan_variant(limit=39, clip=True),
            "t2v-1.3B-FC": _wan_variant(limit=29, controls=(1, 1), note="Fun-Control"),
            "t2v-14B-FC": _wan_variant(limit=39, controls=(1, 1), note="Fun-Control"),
            "i2v-14B-FC": _wan_variant(limit=39, controls=(1, 1), clip=True, note="Fun-Control"),
            "t2v-A14B": _wan_variant(limit=39, boundary=875, note="Wan2.2; dual DiT optional"),
            "i2v-A14B": _wan_variant(
                limit=39, i2v=True, boundary=900, note="Wan2.2; dual DiT optional"
            ),
        },
        fp8_base=True,
        fp8_scaled="optional",
        fp8_source="docs/wan.md dtype matrix; wan_train_network.py --fp8_scaled",
        text_encoder_fp8=_te_fp8("fp8_t5", ("cache_text_encoder", "train"), "T5 in fp8."),
        attention=("sdpa", "flash_attn", "xformers", "flash3"),
        accepts_image=True,
        accepts_video=True,
        model_fps=16,
        resolution_multiple=16,
        weight_dtype_rule="match_mixed_precision",
        extra_config=(
            ConfigKey(
                "vae_cache_cpu",
                "bool",
                "--vae_cache_cpu",
                ("cache_latents", "train"),
                "Keep the VAE cache on the CPU.",
            ),
            ConfigKey(
                "offload_inactive_dit",
                "bool",
                "--offload_inactive_dit",
                ("train",),
                "Wan2.2 dual DiT: keep the inactive expert on the CPU (not with block swap).",
            ),
            _NUMPY_MEMMAP,
        ),
        defaults=_defaults(
            "wan.md",
            timestep_sampling=Default("shift", "docs/wan.md training example"),
            discrete_flow_shift=Default(3.0, "docs/wan.md training example"),
            frame_extraction=Default("head", _DATASET),
        ),
        notes=(
            "Wan2.2 A14B: give `dit` (low noise) and `dit_high_noise` to train both experts "
            "with `--timestep_boundary` (an integer); give only `dit` to train one expert.",
            "Wan2.2 14B uses the Wan2.1 VAE and no CLIP; Wan2.2 TI2V-5B is not in WAN_CONFIGS.",
            "fp16 weights need mixed precision fp16, bf16 weights bf16; "
            "`--fp8_scaled` is refused on an fp8 checkpoint.",
        ),
    ),
    "framepack": Adapter(
        id="framepack",
        title="FramePack (HunyuanVideo-based I2V)",
        doc="docs/framepack.md",
        scripts={
            "cache_latents": "fpack_cache_latents",
            "cache_text_encoder": "fpack_cache_text_encoder_outputs",
            "train": "fpack_train_network",
        },
        network_module="networks.lora_framepack",
        network_modules_also=("networks.loha", "networks.lokr"),
        roles={
            "cache_latents": (
                RoleFlag("vae", "--vae"),
                RoleFlag("image_encoder", "--image_encoder"),
            ),
            "cache_text_encoder": (
                RoleFlag("text_encoder", "--text_encoder1"),
                RoleFlag("text_encoder_2", "--text_encoder2"),
            ),
            "train": (
                RoleFlag("dit", "--dit"),
                RoleFlag("vae", "--vae"),
                RoleFlag("text_encoder", "--text_encoder1"),
                RoleFlag("text_encoder_2", "--text_encoder2"),
                RoleFlag("image_encoder", "--image_encoder"),
            ),
        },
        sample_roles=(),
        version_flag=None,
        version_steps=(),
        variants={
            None: Variant("fp", 38, _SWAP_SRC_HV, sample_image=_FP_SAMPLE_IMAGE),
            "f1": Variant(
                "fp",
                38,
                _SWAP_SRC_HV,
                sample_image=_FP_SAMPLE_IMAGE,
                step_flags={"cache_latents": ("--f1",), "train": ("--f1",)},
                note="FramePack-F1: `--f1` on latent caching and training",
            ),
        },
        fp8_base=True,
        fp8_scaled="optional",
        fp8_source="fpack_train_network.py --fp8_scaled (docs/framepack.md recommends it)",
        text_encoder_fp8=_te_fp8(
            "fp8_llm", ("cache_text_encoder", "train"), "LLM text encoder in fp8."
        ),
        attention=("sdpa", "flash_attn", "xformers", "flash3"),
        accepts_image=False,
        accepts_video=True,
        model_fps=30,
        resolution_multiple=16,
        weight_dtype_rule="none",
        extra_config=(*_HV_VAE_KEYS, _NUMPY_MEMMAP),
        split_attn_for_batch=("sdpa", "xformers"),
        split_attn_source="docs/framepack.md: batch size > 1 with --sdpa or --xformers 'will "
        "always result in an error, please specify --split_attn'",
        framepack_window=9,
        defaults=_defaults(
            "framepack.md",
            timestep_sampling=Default("shift", "docs/framepack.md training example"),
            discrete_flow_shift=Default(3.0, "docs/framepack.md training example"),
            frame_extraction=Default("full", "docs/framepack.md dataset recommendation"),
        ),
        notes=(
            "One-frame training (`--one_frame`, `fp_1f_*` dataset keys) is not supported by "
            "Kura: the escape hatch cannot carry its dataset keys, so such runs are refused.",
            "Every item needs at least 37 frames (one section of the 9-frame latent window); "
            "each item trains as floor((latent frames - 1) / 9) sections.",
        ),
    ),
    "flux_kontext": Adapter(
        id="flux_kontext",
        title="FLUX.1 Kontext [dev]",
        doc="docs/flux_kontext.md",
        scripts={
            "cache_latents": "flux_kontext_cache_latents",
            "cache_text_encoder": "flux_kontext_cache_text_encoder_outputs",
            "train": "flux_kontext_train_network",
        },
        network_module="networks.lora_flux",
        network_modules_also=("networks.loha", "networks.lokr"),
        roles={
            "cache_latents": (RoleFlag("vae", "--vae"),),
            "cache_text_encoder": (
                RoleFlag("text_encoder", "--text_encoder1"),
                RoleFlag("text_encoder_2", "--text_encoder2"),
            ),
            "train": (
                RoleFlag("dit", "--dit"),
                RoleFlag("vae", "--vae"),
                RoleFlag("text_encoder", "--text_encoder1"),
                RoleFlag("text_encoder_2", "--text_encoder2"),
            ),
        },
        sample_roles=(),
        version_flag=None,
        version_steps=(),
        variants={
            None: Variant(
                "fk",
                34,
                "flux/flux_models.py: N//2 double + (N-N//2)*2+1 single, each <= count-2 (19+38)",
                controls=(1, 1),
            )
        },
        fp8_base=True,
        fp8_scaled="optional",
        fp8_source="flux_kontext_train_network.py --fp8_scaled (docs recommend the pair)",
        text_encoder_fp8=_te_fp8("fp8_t5", ("cache_text_encoder", "train"), "T5 in fp8."),
        attention=("sdpa", "flash_attn", "xformers", "flash3"),
        accepts_image=True,
        accepts_video=False,
        model_fps=None,
        resolution_multiple=16,
        weight_dtype_rule="none",
        extra_config=(),
        defaults=_defaults(
            "flux_kontext.md",
            timestep_sampling=Default("flux_shift", "docs/flux_kontext.md training example"),
        ),
        notes=("Every item needs exactly one control image (the cache step refuses others).",),
    ),
    "flux2": Adapter(
        id="flux2",
        title="FLUX.2 dev / klein",
        doc="docs/flux_2.md",
        scripts={
            "cache_latents": "flux_2_cache_latents",
            "cache_text_encoder": "flux_2_cache_text_encoder_outputs",
            "train": "flux_2_train_network",
        },
        network_module="networks.lora_flux_2",
        network_modules_also=("networks.loha", "networks.lokr"),
        roles={
            "cache_latents": (RoleFlag("vae", "--vae"),),
            "cache_text_encoder": (RoleFlag("text_encoder", "--text_encoder"),),
            "train": (
                RoleFlag("dit", "--dit"),
                RoleFlag("vae", "--vae"),
                RoleFlag("text_encoder", "--text_encoder"),
            ),
        },
        sample_roles=(),
        version_flag="--model_version",
        version_steps=("cache_latents", "cache_text_encoder", "train"),
        variants={
            "dev": Variant(
                "f2d", 29, _FLUX2_SWAP + " (8+48)", controls=(0, None), text_encoder_fp8=False
            ),
            "klein-4b": Variant("f2k4b", 13, _FLUX2_SWAP + " (5+20)", controls=(0, None)),
            "klein-base-4b": Variant("f2k4b", 13, _FLUX2_SWAP + " (5+20)", controls=(0, None)),
            "klein-9b": Variant("f2k9b", 16, _FLUX2_SWAP + " (8+24)", controls=(0, None)),
            "klein-base-9b": Variant("f2k9b", 16, _FLUX2_SWAP + " (8+24)", controls=(0, None)),
        },
        fp8_base=True,
        fp8_scaled="required",
        fp8_source="docs/flux_2.md: 'for DiT, specify both' (the code does not enforce it)",
        text_encoder_fp8=_te_fp8(
            "fp8_text_encoder",
            ("cache_text_encoder", "train"),
            "Qwen3 text encoder in fp8 (klein only; not for the dev Mistral encoder).",
        ),
        attention=("sdpa", "flash_attn", "xformers"),
        accepts_image=True,
        accepts_video=False,
        model_fps=None,
        resolution_multiple=16,
        weight_dtype_rule="none",
        extra_config=(_NUMPY_MEMMAP,),
        defaults=_defaults(
            "flux_2.md",
            timestep_sampling=Default("flux2_shift", "docs/flux_2.md training example"),
        ),
        notes=(
            "Train on the base klein models; dev and klein 4B/9B are distilled (docs/flux_2.md).",
            "Base and distilled klein of one size share a cache suffix; Kura keeps a cache "
            "folder per model version.",
        ),
    ),
    "qwen_image": Adapter(
        id="qwen_image",
        title="Qwen-Image / Edit / Edit-2509 / Edit-2511",
        doc="docs/qwen_image.md",
        scripts={
            "cache_latents": "qwen_image_cache_latents",
            "cache_text_encoder": "qwen_image_cache_text_encoder_outputs",
            "train": "qwen_image_train_network",
        },
        network_module="networks.lora_qwen_image",
        network_modules_also=("networks.loha", "networks.lokr"),
        roles={
            "cache_latents": (RoleFlag("vae", "--vae"),),
            "cache_text_encoder": (RoleFlag("text_encoder", "--text_encoder"),),
            "train": (
                RoleFlag("dit", "--dit"),
                RoleFlag("vae", "--vae"),
                RoleFlag("text_encoder", "--text_encoder"),
            ),
        },
        sample_roles=(),
        version_flag="--model_version",
        version_steps=("cache_latents", "cache_text_encoder", "train"),
        variants={
            "original": Variant("qi", 59, "qwen_image_model.py: <= 60 blocks - 1"),
            "edit": Variant(
                "qie",
                59,
                "qwen_image_model.py: <= 60 blocks - 1",
                controls=(1, 1),
                control_resolution=_QIE_CONTROL,
            ),
            "edit-2509": Variant(
                "qie",
                59,
                "qwen_image_model.py: <= 60 blocks - 1",
                controls=(1, None),
                control_resolution=_QIE_CONTROL,
            ),
            "edit-2511": Variant(
                "qie",
                59,
                "qwen_image_model.py: <= 60 blocks - 1",
                controls=(1, None),
                control_resolution=_QIE_CONTROL,
            ),
        },
        fp8_base=True,
        fp8_scaled="optional",
        fp8_source="qwen_image_train_network.py --fp8_scaled (docs recommend the pair)",
        text_encoder_fp8=_te_fp8(
            "fp8_vl", ("cache_text_encoder", "train"), "Qwen2.5-VL text encoder in fp8."
        ),
        attention=("sdpa", "flash_attn", "xformers"),
        accepts_image=True,
        accepts_video=False,
        model_fps=None,
        resolution_multiple=16,
        weight_dtype_rule="none",
        extra_config=(_NUMPY_MEMMAP, QWEN_IMAGE_LAYERS),
        defaults=_defaults(
            "qwen_image.md",
            timestep_sampling=Default("shift", "docs/qwen_image.md training example"),
            discrete_flow_shift=Default(2.2, "docs/qwen_image.md training example"),
        ),
        notes=(
            "`layered` (multiple-target datasets) is not supported by Kura (the escape hatch "
            "cannot carry its dataset layout); such runs are refused.",
            "All Edit variants share the `qie` cache suffix; Kura keeps a cache folder per "
            "model version so a switch never reuses another variant's text-encoder cache.",
            "Attention other than sdpa should add `split_attn` (docs/qwen_image.md).",
        ),
    ),
    "zimage": Adapter(
        id="zimage",
        title="Z-Image (Base / De-Turbo)",
        doc="docs/zimage.md",
        scripts={
            "cache_latents": "zimage_cache_latents",
            "cache_text_encoder": "zimage_cache_text_encoder_outputs",
            "train": "zimage_train_network",
        },
        network_module="networks.lora_zimage",
        network_modules_also=("networks.loha", "networks.lokr"),
        roles={
            "cache_latents": (RoleFlag("vae", "--vae"),),
            "cache_text_encoder": (RoleFlag("text_encoder", "--text_encoder"),),
            "train": (
                RoleFlag("dit", "--dit"),
                RoleFlag("vae", "--vae"),
                RoleFlag("text_encoder", "--text_encoder"),
            ),
        },
        sample_roles=(),
        version_flag=None,
        version_steps=(),
        variants={None: Variant("zi", 28, "zimage/zimage_model.py: <= 30 blocks - 2")},
        fp8_base=True,
        fp8_scaled="required",
        fp8_source="docs/zimage.md: 'specify both together' (the code does not enforce it)",
        text_encoder_fp8=_te_fp8(
            "fp8_llm", ("cache_text_encoder", "train"), "Qwen3 text encoder in fp8."
        ),
        attention=("sdpa", "flash_attn", "xformers", "flash3"),
        accepts_image=True,
        accepts_video=False,
        model_fps=None,
        resolution_multiple=16,
        weight_dtype_rule="none",
        extra_config=(
            ConfigKey(
                "use_32bit_attention",
                "bool",
                "--use_32bit_attention",
                ("train",),
                "Compute attention in fp32.",
            ),
        ),
        split_attn_for=("xformers",),
        split_attn_source="docs/zimage.md: '--xformers for xformers (requires --split_attn)'",
        defaults=_defaults(
            "zimage.md",
            timestep_sampling=Default("shift", "docs/zimage.md training example"),
            discrete_flow_shift=Default(2.0, "docs/zimage.md training example"),
        ),
        notes=("A Z-Image LoRA needs a conversion before ComfyUI loads it.",),
    ),
    "kandinsky5": Adapter(
        id="kandinsky5",
        title="Kandinsky 5 (video)",
        doc="docs/kandinsky5.md",
        scripts={
            "cache_latents": "kandinsky5_cache_latents",
            "cache_text_encoder": "kandinsky5_cache_text_encoder_outputs",
            "train": "kandinsky5_train_network",
        },
        network_module="networks.lora_kandinsky",
        network_modules_also=(),
        network_modules_refused=(
            ("networks.loha", _NO_ARCH_DETECTION),
            ("networks.lokr", _NO_ARCH_DETECTION),
        ),
        roles={
            "cache_latents": (RoleFlag("vae", "--vae"),),
            "cache_text_encoder": (
                RoleFlag("text_encoder", "--text_encoder_qwen"),
                RoleFlag("text_encoder_2", "--text_encoder_clip"),
            ),
            "train": (RoleFlag("dit", "--dit"), RoleFlag("vae", "--vae")),
        },
        sample_roles=(
            RoleFlag("text_encoder", "--text_encoder_qwen"),
            RoleFlag("text_encoder_2", "--text_encoder_clip"),
        ),
        version_flag="--task",
        version_steps=("train",),
        variants={
            "k5-lite-t2v-5s-sd": _k5_variant(31, "32 visual + 2 text blocks"),
            "k5-lite-t2v-10s-sd": _k5_variant(31, "32 visual + 2 text blocks"),
            "k5-lite-i2v-5s-sd": _k5_variant(31, "32 visual + 2 text blocks"),
            "k5-lite-t2v-5s-distil-sd": _k5_variant(31, "32 visual + 2 text blocks"),
            "k5-lite-t2v-10s-distil-sd": _k5_variant(31, "32 visual + 2 text blocks"),
            "k5-lite-t2v-5s-nocfg-sd": _k5_variant(31, "32 visual + 2 text blocks"),
            "k5-lite-t2v-10s-nocfg-sd": _k5_variant(31, "32 visual + 2 text blocks"),
            "k5-lite-t2v-5s-pretrain-sd": _k5_variant(31, "32 visual + 2 text blocks"),
            "k5-lite-t2v-10s-pretrain-sd": _k5_variant(31, "32 visual + 2 text blocks"),
            "k5-pro-t2v-5s-sd": _k5_variant(60, "60 visual + 4 text blocks"),
            "k5-pro-t2v-5s-hd": _k5_variant(60, "60 visual + 4 text blocks"),
            "k5-pro-t2v-10s-sd": _k5_variant(60, "60 visual + 4 text blocks"),
            "k5-pro-t2v-10s-hd": _k5_variant(60, "60 visual + 4 text blocks"),
            "k5-pro-i2v-5s-sd": _k5_variant(60, "60 visual + 4 text blocks"),
            "k5-pro-i2v-5s-hd": _k5_variant(60, "60 visual + 4 text blocks"),
        },
        fp8_base=True,
        fp8_scaled="optional",
        fp8_source="docs/kandinsky5.md: --fp8_base already implies scaled fp8",
        text_encoder_fp8=_te_fp8(
            "quantized_qwen",
            ("cache_text_encoder",),
            "Load the Qwen text encoder in 4-bit at caching (the only TE reduction K5 has).",
        ),
        attention=("sdpa", "flash_attn", "xformers", "flash3"),
        accepts_image=True,
        accepts_video=True,
        model_fps=24,
        resolution_multiple=16,
        weight_dtype_rule="none",
        extra_config=(
            ConfigKey(
                "nabla_resize",
                "bool",
                "--nabla_resize",
                ("cache_latents",),
                "Resize for NABLA attention at caching.",
            ),
            ConfigKey(
                "offload_dit_during_sampling",
                "bool",
                "--offload_dit_during_sampling",
                ("train",),
                "Move the DiT to the CPU while sampling.",
            ),
        ),
        defaults=_defaults(
            "kandinsky5.md",
            timestep_sampling=Default("shift", "docs/kandinsky5.md training example"),
            discrete_flow_shift=Default(5.0, "docs/kandinsky5.md training example"),
            max_data_loader_n_workers=Default(1, "docs/kandinsky5.md training example"),
            frame_extraction=Default("head", _DATASET),
        ),
        notes=(
            "`--fp8_base` already implies scaled fp8 for Kandinsky 5.",
            "The doc example's `--scheduler_scale 10.0` is not emitted: Kura has no recipe "
            "key for it yet (use the escape hatch to pass it).",
            "The Lite image tasks (`k5-lite-t2i-hd`, `k5-lite-i2i-hd`) are left out: the doc "
            "says image Lite models are not supported. LoHa/LoKr are not supported.",
        ),
    ),
    "hidream_o1": Adapter(
        id="hidream_o1",
        title="HiDream-O1-Image",
        doc="docs/hidream_o1.md",
        scripts={
            "cache_latents": "hidream_o1_cache_pixel",
            "cache_text_encoder": "hidream_o1_cache_text_encoder_outputs",
            "train": "hidream_o1_train_network",
        },
        network_module="networks.lora_hidream_o1",
        network_modules_also=(),
        network_modules_refused=(
            ("networks.loha", _NO_ARCH_DETECTION),
            ("networks.lokr", _NO_ARCH_DETECTION),
        ),
        roles={
            "cache_latents": (),
            "cache_text_encoder": (),
            "train": (RoleFlag("dit", "--dit"),),
        },
        sample_roles=(),
        version_flag="--model_type",
        version_steps=("cache_text_encoder", "train"),
        variants={
            "full": Variant(
                "ho1",
                None,
                "hidream_o1/qwen3_vl_transformers.py: <= decoder layers - 1 (read from the HF "
                "config at run time)",
                controls=(0, None),
            ),
            "dev": Variant(
                "ho1",
                None,
                "hidream_o1/qwen3_vl_transformers.py: <= decoder layers - 1 (read from the HF "
                "config at run time)",
                controls=(0, None),
            ),
        },
        fp8_base=True,
        fp8_scaled="required",
        fp8_source="hidream_o1_train_network.py raises on --fp8_base without --fp8_scaled",
        text_encoder_fp8=_te_fp8(
            "fp8_te",
            ("cache_text_encoder",),
            "Cache text embeddings in fp8 (the cache step then also needs the DiT).",
        ),
        attention=("sdpa", "flash_attn"),
        accepts_image=True,
        accepts_video=False,
        model_fps=None,
        resolution_multiple=32,
        weight_dtype_rule="none",
        extra_config=(),
        defaults=_defaults(
            "hidream_o1.md",
            timestep_sampling=Default("uniform", "docs/hidream_o1.md training example"),
        ),
        notes=(
            "`--task` is derived from the data: `i2i` when every dataset has control images, "
            "`t2i` when none has; mixing is refused.",
            "Pixel-space model: no VAE; widths and heights must be multiples of 32.",
            "Block swap with `--task i2i` or `flash_attn` needs a micro-batch of 1.",
        ),
    ),
    "ideogram4": Adapter(
        id="ideogram4",
        title="Ideogram 4",
        doc="docs/ideogram4.md",
        scripts={
            "cache_latents": "ideogram4_cache_latents",
            "cache_text_encoder": "ideogram4_cache_text_encoder_outputs",
            "train": "ideogram4_train_network",
        },
        network_module="networks.lora_ideogram4",
        network_modules_also=(),
        network_modules_refused=(
            ("networks.loha", _NO_ARCH_DETECTION),
            ("networks.lokr", _NO_ARCH_DETECTION),
        ),
        roles={
            "cache_latents": (RoleFlag("vae", "--vae"),),
            "cache_text_encoder": (RoleFlag("text_encoder", "--text_encoder"),),
            "train": (RoleFlag("dit", "--dit"),),
        },
        sample_roles=(RoleFlag("vae", "--vae"), RoleFlag("text_encoder", "--text_encoder")),
        version_flag=None,
        version_steps=(),
        variants={
            None: Variant(
                "i4",
                33,
                "ideogram4_train_network.py: '--blocks_to_swap for Ideogram 4 must be <= 33'",
            )
        },
        fp8_base=False,
        fp8_scaled="absent",
        fp8_source="docs/ideogram4.md: the DiT file is already fp8; no --fp8_scaled flag",
        text_encoder_fp8=ConfigKey(
            name="text_cache_dtype",
            kind="str",
            flag="--text_cache_dtype",
            steps=("cache_text_encoder",),
            help="Storage dtype of the text-encoder cache (fp8_e4m3fn halves it).",
            choices=("bf16", "fp8_e4m3fn", "float32"),
        ),
        attention=("sdpa", "flash_attn", "xformers"),
        accepts_image=True,
        accepts_video=False,
        model_fps=None,
        resolution_multiple=16,
        weight_dtype_rule="none",
        extra_config=(),
        defaults=_defaults(
            "ideogram4.md",
            timestep_sampling=Default(
                "ideogram4_shift", "ideogram4_train_network.py parser set_defaults"
            ),
        ),
        notes=(
            "The DiT file is already fp8 (no bf16 weights exist): `fp8_base`/`fp8_scaled` are "
            "refused. The doc gives no LR/rank/epochs; the recipe must set them.",
            "Sampling during training needs the text encoder and VAE paths.",
        ),
    ),
    "krea2": Adapter(
        id="krea2",
        title="Krea 2 (RAW)",
        doc="docs/krea2.md",
        scripts={
            "cache_latents": "krea2_cache_latents",
            "cache_text_encoder": "krea2_cache_text_encoder_outputs",
            "train": "krea2_train_network",
        },
        network_module="networks.lora_krea2",
        network_modules_also=(),
        network_modules_refused=(
            ("networks.loha", _NO_ARCH_DETECTION),
            ("networks.lokr", _NO_ARCH_DETECTION),
        ),
        roles={
            "cache_latents": (RoleFlag("vae", "--vae"),),
            "cache_text_encoder": (RoleFlag("text_encoder", "--text_encoder"),),
            "train": (RoleFlag("dit", "--dit"), RoleFlag("vae", "--vae")),
        },
        sample_roles=(RoleFlag("text_encoder", "--text_encoder"),),
        version_flag=None,
        version_steps=(),
        variants={None: Variant("kr2", 26, "krea2/krea2_mmdit.py: <= 28 main blocks - 2")},
        fp8_base=True,
        fp8_scaled="required",
        fp8_source="krea2_train_network.py raises on --fp8_base without --fp8_scaled",
        text_encoder_fp8=None,
        attention=("sdpa", "flash_attn", "xformers"),
        accepts_image=True,
        accepts_video=False,
        model_fps=None,
        resolution_multiple=16,
        weight_dtype_rule="none",
        extra_config=(),
        defaults=_defaults(
            "krea2.md",
            timestep_sampling=Default("shift", "docs/krea2.md training example"),
            discrete_flow_shift=Default(2.5, "docs/krea2.md training example"),
        ),
        notes=("Train on RAW; Turbo is for inference.",),
    ),
}


def adapter_for(architecture: str) -> Adapter | None:
    """The adapter record for a Kura architecture id, or ``None`` when Kura has none."""
    return ADAPTERS.get(architecture)
