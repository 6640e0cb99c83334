"""Compile-time refusals: combinations Musubi would reject or that would train wrongly.

Each check either returns warnings (things worth saying but not wrong) or raises
``SpecError`` / ``Unsupported`` with the reason and the fix. Checks that concern the
datasets live in ``dataset_toml``; these concern the recipe, the model and the
accommodations.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kura.backends.musubi.adapter_model import Adapter, Variant
from kura.backends.musubi.adapters import MUSUBI_RELEASE
from kura.backends.musubi.config import ExecConfig
from kura.backends.musubi.contract import CompileInputs
from kura.errors import SpecError, Unsupported
from kura.schema.run import RunSpec

__all__ = [
    "TIMESTEP_SAMPLINGS",
    "WEIGHTING_SCHEMES",
    "check_attention",
    "check_attention_library",
    "check_batch",
    "check_block_swap",
    "check_dual_dit",
    "check_fp8",
    "check_reasons",
    "check_recipe",
    "check_sample_images",
    "check_sampling_roles",
    "check_weight_dtype",
    "resolve_network_module",
    "resolve_timesteps",
    "select_expert",
    "select_variant",
]

TIMESTEP_SAMPLINGS = (
    "sigma",
    "uniform",
    "sigmoid",
    "shift",
    "flux_shift",
    "flux2_shift",
    "ideogram4_shift",
    "qwen_shift",
    "krea2_shift",
    "logsnr",
    "qinglong_flux",
    "qinglong_qwen",
)
"""``--timestep_sampling`` choices in training/parser_common.py at the pinned release."""

WEIGHTING_SCHEMES = ("none", "logit_normal", "mode", "cosmap", "sigma_sqrt")
_NONE_WEIGHTING_ONLY = ("hidream_o1", "ideogram4")
IMAGE_DOC = "src/kura/backends/musubi/docker/Dockerfile"
ATTENTION_LIBRARIES = {"xformers": "xformers", "flash_attn": "flash-attn", "flash3": "flash-attn 3"}
"""Attention backends whose library Musubi does not depend on (its pyproject lists neither)."""


def select_variant(adapter: Adapter, model_version: str | None) -> Variant:
    """The variant for ``model_version``; a miss names the values the adapter knows."""
    if model_version in adapter.variants:
        return adapter.variants[model_version]
    known = [v for v in adapter.variants if v is not None]
    if adapter.version_flag is not None and model_version is None:
        raise SpecError(
            f"{adapter.id} needs a model version ({adapter.version_flag}); none was given",
            hint=f"the model bundle must name one of: {', '.join(known)}",
        )
    if model_version is not None and not known and adapter.version_flag is None:
        raise SpecError(
            f"{adapter.id} takes no model version, got {model_version!r}",
            hint="drop the model version from the bundle, or pick the right architecture",
        )
    raise Unsupported(
        f"Kura's {adapter.id} adapter has no variant {model_version!r} "
        f"(known: {', '.join(known) or 'none'})",
        hint=(
            "this is a gap in Kura's adapter table, not a statement about Musubi: check the "
            "name against Musubi's docs, or set backend.config.command to run it by hand"
        ),
    )


def check_batch(spec: RunSpec, cfg: ExecConfig) -> None:
    """micro-batch × accumulation × GPUs must equal the recipe's effective batch."""
    gpus = spec.execution.gpus
    product = cfg.batch_size * cfg.gradient_accumulation_steps * gpus
    effective = spec.training.effective_batch
    if product == effective:
        return
    per_step = cfg.batch_size * gpus
    if effective % per_step == 0:
        fix = (
            f"set backend.config.gradient_accumulation_steps: {effective // per_step} "
            f"(keeps batch_size {cfg.batch_size} on {gpus} GPU(s))"
        )
    else:
        fix = (
            "pick backend.config.batch_size and gradient_accumulation_steps whose product "
            f"times {gpus} GPU(s) is {effective}; the recipe's effective batch is not changed "
            "to fit the hardware"
        )
    raise SpecError(
        f"micro-batch {cfg.batch_size} × accumulation {cfg.gradient_accumulation_steps} × "
        f"{gpus} GPU(s) = {product}, but training.effective_batch is {effective}",
        hint=fix,
    )


def check_recipe(spec: RunSpec) -> None:
    """Recipe combinations Musubi refuses or silently overrides."""
    training = spec.training
    if training.epochs is not None and training.max_steps is not None:
        raise SpecError(
            "training.epochs and training.max_steps are both set; Musubi's "
            "--max_train_epochs silently overrides --max_train_steps",
            hint="set training.epochs: null to train by steps, or drop training.max_steps",
        )
    if training.scheduler == "constant" and training.warmup_steps > 0:
        raise SpecError(
            "training.scheduler `constant` refuses warm-up steps in Musubi",
            hint="use scheduler constant_with_warmup, or set training.warmup_steps: 0",
        )


def resolve_network_module(spec: RunSpec, adapter: Adapter) -> str:
    """The spec's network module, or the adapter's; others are refused."""
    module = spec.training.network.module
    if module is None:
        return adapter.network_module
    refused = dict(adapter.network_modules_refused)
    if module in refused:
        raise Unsupported(
            f"training.network.module {module!r} cannot train {adapter.id} in Musubi "
            f"{MUSUBI_RELEASE}: {refused[module]}",
            hint=f"use {adapter.network_module} (Musubi's LoRA module for {adapter.title})",
        )
    allowed = (adapter.network_module, *adapter.network_modules_also)
    if module not in allowed:
        raise SpecError(
            f"training.network.module {module!r} is not one {adapter.id} trains with",
            hint=f"use one of: {', '.join(allowed)} (or leave it unset for the adapter's)",
        )
    return module


def resolve_timesteps(spec: RunSpec, adapter: Adapter) -> tuple[str, float | None, str, list[str]]:
    """Timestep sampling, flow shift and weighting, from the recipe or the adapter."""
    warnings: list[str] = []
    training = spec.training
    sampling = training.timestep_sampling or str(adapter.defaults["timestep_sampling"].value)
    if sampling not in TIMESTEP_SAMPLINGS:
        raise SpecError(
            f"training.timestep_sampling {sampling!r} is not a Musubi choice",
            hint=f"use one of: {', '.join(TIMESTEP_SAMPLINGS)}",
        )
    shift = training.discrete_flow_shift
    if sampling == "shift" and shift is None:
        default = adapter.defaults.get("discrete_flow_shift")
        if default is None:
            raise SpecError(
                f"timestep sampling `shift` needs training.discrete_flow_shift; Kura has no "
                f"documented shift for {adapter.id}",
                hint="set training.discrete_flow_shift",
            )
        shift = float(default.value)
    if sampling not in ("shift", "sigma") and shift is not None:
        warnings.append(
            f"training.discrete_flow_shift {shift} is not used by timestep sampling "
            f"`{sampling}`; it is passed but has no effect"
        )
    weighting = training.weighting_scheme or str(adapter.defaults["weighting_scheme"].value)
    if weighting not in WEIGHTING_SCHEMES:
        raise SpecError(
            f"training.weighting_scheme {weighting!r} is not a Musubi choice",
            hint=f"use one of: {', '.join(WEIGHTING_SCHEMES)}",
        )
    if adapter.id in _NONE_WEIGHTING_ONLY and weighting != "none":
        raise SpecError(
            f"{adapter.id} supports only weighting_scheme `none`",
            hint="set training.weighting_scheme: none",
        )
    return sampling, shift, weighting, warnings


def check_fp8(adapter: Adapter, variant: Variant, cfg: ExecConfig) -> None:
    """fp8 modes the trainer accepts for this architecture."""
    if cfg.fp8_scaled and not cfg.fp8_base:
        raise SpecError(
            "backend.config.fp8_scaled needs fp8_base (Musubi: 'fp8_scaled requires fp8_base')",
            hint="set backend.config.fp8_base: true as well, or drop fp8_scaled",
        )
    if cfg.fp8_base and adapter.fp8_scaled == "required" and not cfg.fp8_scaled:
        raise SpecError(
            f"{adapter.id} supports fp8 only as scaled fp8; plain fp8_base is refused",
            hint="set backend.config.fp8_scaled: true together with fp8_base",
        )
    te = adapter.text_encoder_fp8
    te_set = te is not None and any(key.name == te.name and v for key, v in cfg.arch_keys)
    if te is not None and te_set and not variant.text_encoder_fp8:
        raise SpecError(
            f"backend.config.{te.name} is not available for this {adapter.id} model version",
            hint=f"drop backend.config.{te.name}",
        )


def check_block_swap(adapter: Adapter, variant: Variant, cfg: ExecConfig) -> list[str]:
    """Block-swap count within the model's limit; H2D-only mode's preconditions."""
    warnings: list[str] = []
    swap = cfg.blocks_to_swap
    if swap > 0 and variant.swap_limit is None:
        warnings.append(
            f"{adapter.id}: Kura cannot check blocks_to_swap {swap} before the model loads "
            f"({variant.swap_limit_source}); Musubi asserts it at start-up"
        )
    elif variant.swap_limit is not None and swap > variant.swap_limit:
        raise SpecError(
            f"backend.config.blocks_to_swap {swap} is over {adapter.id}'s limit of "
            f"{variant.swap_limit} for this model ({variant.swap_limit_source})",
            hint=f"set blocks_to_swap ≤ {variant.swap_limit}, or add fp8_base to save memory",
        )
    if cfg.block_swap_h2d_only:
        if swap == 0:
            raise SpecError(
                "backend.config.block_swap_h2d_only has no effect without blocks_to_swap",
                hint="set blocks_to_swap, or drop block_swap_h2d_only",
            )
        if not cfg.gradient_checkpointing:
            raise SpecError(
                "block_swap_h2d_only requires gradient_checkpointing in training "
                "(Musubi: '--block_swap_h2d_only requires --gradient_checkpointing')",
                hint="set backend.config.gradient_checkpointing: true",
            )
    if cfg.block_swap_ring_size is not None and not cfg.block_swap_h2d_only:
        raise SpecError(
            "backend.config.block_swap_ring_size is used only with block_swap_h2d_only",
            hint="set block_swap_h2d_only: true, or drop block_swap_ring_size",
        )
    if cfg.use_pinned_memory_for_block_swap and swap == 0:
        raise SpecError(
            "use_pinned_memory_for_block_swap has no effect without blocks_to_swap",
            hint="set blocks_to_swap, or drop use_pinned_memory_for_block_swap",
        )
    if cfg.gradient_checkpointing_cpu_offload and not cfg.gradient_checkpointing:
        raise SpecError(
            "gradient_checkpointing_cpu_offload needs gradient_checkpointing",
            hint="set backend.config.gradient_checkpointing: true",
        )
    return warnings


def check_attention(adapter: Adapter, cfg: ExecConfig) -> list[str]:
    """One attention backend the training script accepts."""
    if cfg.attention == "sage_attn":
        raise SpecError(
            "sage_attn cannot train (Musubi: 'SageAttention doesn't support training currently')",
            hint=f"set backend.config.attention to one of: {', '.join(adapter.attention)}",
        )
    if cfg.attention not in adapter.attention:
        raise SpecError(
            f"backend.config.attention {cfg.attention!r} is not available for {adapter.id}",
            hint=f"use one of: {', '.join(adapter.attention)}",
        )
    if not cfg.split_attn and cfg.attention in adapter.split_attn_for:
        raise SpecError(
            f"{adapter.id} with attention {cfg.attention} needs split_attn "
            f"({adapter.split_attn_source})",
            hint="set backend.config.split_attn: true, or use attention sdpa",
        )
    if not cfg.split_attn and cfg.batch_size > 1 and cfg.attention in adapter.split_attn_for_batch:
        raise SpecError(
            f"{adapter.id} with attention {cfg.attention} and micro-batch {cfg.batch_size} "
            f"needs split_attn ({adapter.split_attn_source})",
            hint="set backend.config.split_attn: true, or backend.config.batch_size: 1 with "
            "more gradient_accumulation_steps",
        )
    warnings = []
    if adapter.id == "qwen_image" and cfg.attention != "sdpa" and not cfg.split_attn:
        warnings.append("qwen_image: docs/qwen_image.md advises split_attn with non-sdpa attention")
    return warnings


def check_attention_library(spec: RunSpec, inputs: CompileInputs, cfg: ExecConfig) -> list[str]:
    """An attention backend needs its library where the step runs: Kura's image has only
    what Musubi itself depends on (PyTorch SDPA); the others are refused for it."""
    library = ATTENTION_LIBRARIES.get(cfg.attention)
    if library is None:
        return []
    if spec.execution.executor == "host":
        return [
            f"attention {cfg.attention} needs the {library} package in the Musubi checkout's "
            "environment (Musubi does not install it); `kura doctor musubi` checks the image only"
        ]
    if inputs.container_image in (None, f"kura/musubi-tuner:{MUSUBI_RELEASE}"):
        raise Unsupported(
            f"attention {cfg.attention} needs the {library} package, which Kura's Musubi "
            f"image ({IMAGE_DOC}) does not install (Musubi does not depend on it): the first "
            "step would crash",
            hint="use backend.config.attention: sdpa, or set executor.musubi_image in "
            f"kura.toml to an image that provides {library} for its torch/CUDA",
        )
    return [
        f"attention {cfg.attention} needs the {library} package in image "
        f"{inputs.container_image}; Kura cannot see inside it before launch"
    ]


def check_weight_dtype(adapter: Adapter, inputs: CompileInputs, cfg: ExecConfig) -> list[str]:
    """Wan / HunyuanVideo 1.5: mixed precision must match the DiT weight file."""
    if adapter.weight_dtype_rule != "match_mixed_precision":
        return []
    warnings = []
    for role in ("dit", "dit_high_noise"):
        if role not in inputs.model_paths:
            continue
        dtype = inputs.weight_dtypes.get(role)
        if dtype is None:
            warnings.append(
                f"{adapter.id}: the {role} weight dtype is unknown, so Kura could not check "
                f"mixed precision {cfg.mixed_precision} against it"
            )
            continue
        if dtype == "fp8":
            if cfg.fp8_scaled:
                raise SpecError(
                    f"the {role} file is already fp8; it cannot be scaled to fp8 again",
                    hint="drop backend.config.fp8_scaled, or use bf16/fp16 weights",
                )
            if not cfg.fp8_base:
                raise SpecError(
                    f"the {role} file is fp8; it trains only with fp8_base",
                    hint="set backend.config.fp8_base: true, or use bf16/fp16 weights",
                )
            continue
        if dtype in ("bf16", "fp16") and cfg.mixed_precision not in (dtype, "no"):
            raise SpecError(
                f"the {role} weights are {dtype}, so mixed precision must be {dtype} or no, "
                f"got {cfg.mixed_precision}",
                hint=f"set backend.config.mixed_precision: {dtype}, or use {cfg.mixed_precision} "
                "weights",
            )
    return warnings


@dataclass(frozen=True)
class ExpertRange:
    """One Wan 2.2 expert trained alone: its timestep range (docs/wan.md table)."""

    expert: str
    min_timestep: int
    max_timestep: int


def select_expert(
    adapter: Adapter, variant: Variant, inputs: CompileInputs, cfg: ExecConfig
) -> tuple[CompileInputs, ExpertRange | None]:
    """Wan 2.2 single-expert training: only the chosen expert is passed (as ``--dit``), with
    its recommended timestep range. docs/wan.md: "if you want to train with either the
    high-noise model or the low-noise model, specify the model with `--dit` as in Wan2.1 ...
    it is recommended to specify the range of timesteps described in the table below, and
    `--preserve_distribution_shape`" (low 0-boundary, high boundary-1000; the boundary is
    875 for T2V and 900 for I2V). The expert is ``backend.config.dit_expert``, or the one
    role given when only one of ``dit`` / ``dit_high_noise`` is."""
    paths = dict(inputs.model_paths)
    expert = cfg.dit_expert
    if expert is None and variant.dual_dit_boundary is not None:
        if "dit_high_noise" in paths and "dit" not in paths:
            expert = "high"
        elif "dit" in paths and "dit_high_noise" not in paths:
            expert = "low"
    if expert is None:
        return inputs, None
    if variant.dual_dit_boundary is None:
        raise SpecError(
            f"backend.config.dit_expert applies to dual-DiT models; {adapter.id} "
            f"{inputs.model_version} has one DiT",
            hint="drop backend.config.dit_expert",
        )
    role = "dit_high_noise" if expert == "high" else "dit"
    if role not in paths:
        raise SpecError(
            f"backend.config.dit_expert: {expert} needs the {role} model, which is not given",
            hint=f"give model.paths.{role}, or set dit_expert to the expert you have",
        )
    dtypes = dict(inputs.weight_dtypes)
    paths["dit"] = paths.pop(role)
    paths.pop("dit_high_noise", None)
    if role in dtypes:
        dtypes["dit"] = dtypes.pop(role)
    dtypes.pop("dit_high_noise", None)
    boundary = int(variant.dual_dit_boundary.value)
    span = (0, boundary) if expert == "low" else (boundary, 1000)
    return replace(inputs, model_paths=paths, weight_dtypes=dtypes), ExpertRange(expert, *span)


def check_dual_dit(
    spec: RunSpec, adapter: Adapter, variant: Variant, inputs: CompileInputs, cfg: ExecConfig
) -> int | None:
    """Wan 2.2 dual-DiT training: the integer boundary, or ``None`` when single-DiT."""
    dual = "dit_high_noise" in inputs.model_paths
    offload = any(k.name == "offload_inactive_dit" and v for k, v in cfg.arch_keys)
    boundary = spec.training.timestep_boundary
    if not dual:
        if boundary is not None:
            raise SpecError(
                "training.timestep_boundary applies only to Wan 2.2 dual-DiT training",
                hint="give the dit_high_noise model, or drop training.timestep_boundary",
            )
        if offload:
            raise SpecError(
                "offload_inactive_dit applies only to Wan 2.2 dual-DiT training",
                hint="drop backend.config.offload_inactive_dit",
            )
        return None
    if variant.dual_dit_boundary is None:
        raise SpecError(
            f"a dit_high_noise model was given, but {adapter.id} {inputs.model_version} has no "
            "high-noise expert",
            hint="use task t2v-A14B or i2v-A14B, or drop the dit_high_noise model",
        )
    if offload and cfg.blocks_to_swap > 0:
        raise SpecError(
            "offload_inactive_dit cannot be combined with block swap "
            "(Musubi: 'Block swap is not supported with offloading inactive DiT')",
            hint="drop one of backend.config.offload_inactive_dit / blocks_to_swap",
        )
    if boundary is not None:
        return boundary
    return int(variant.dual_dit_boundary.value)


def check_sampling_roles(spec: RunSpec, adapter: Adapter, inputs: CompileInputs) -> None:
    """Sampling during training needs the roles the trainer decodes and encodes with."""
    if not spec.training.sample_prompts:
        return
    missing = [r.role for r in adapter.sample_roles if r.role not in inputs.model_paths]
    if missing:
        raise SpecError(
            f"training.sample_prompts needs model role(s) {', '.join(missing)} for {adapter.id}",
            hint="add them to the model bundle (model.paths), or drop training.sample_prompts",
        )


def check_sample_images(spec: RunSpec, adapter: Adapter, variant: Variant) -> None:
    """An image-to-video model samples from a start image: every sample prompt must name
    one with ``--i`` (:attr:`Variant.sample_image` says where the trainer needs it), or
    training dies at its start or at the first sampling point."""
    if variant.sample_image is None:
        return
    from kura.backends.musubi.prompts import read_options

    missing = [
        index
        for index, line in enumerate(spec.training.sample_prompts)
        if "image_path" not in read_options(line)
    ]
    if missing:
        shown = "training.sample_prompts" + ", ".join(f"[{i}]" for i in missing[:5])
        raise SpecError(
            f"{adapter.id} samples from a start image, but {shown} "
            f"name{'s' if len(missing) == 1 else ''} none ({variant.sample_image})",
            hint="add `--i /absolute/path/to/start.png` to every sample prompt, or turn "
            "sampling off with training.sample_prompts: []",
        )


def check_reasons(spec: RunSpec) -> list[str]:
    """Accommodations without a reason are allowed but called out."""
    missing = sorted(set(spec.backend.config) - set(spec.backend.reasons))
    if not missing:
        return []
    return [f"backend.config key(s) without a reason in backend.reasons: {', '.join(missing)}"]
