"""``compile_run``: a run spec plus resolved inputs → files, steps and container.

Pure: no I/O. The result is deterministic (same inputs, byte-identical files and argv).
Files are meant to be written under ``<run_dir>/compiled/``; the steps refer to them there.
"""

from __future__ import annotations

from collections.abc import Callable

from kura.backends.base import CompiledRun, CompileInputs, Step, StepKind
from kura.backends.musubi.adapter_model import Adapter, StepName, Variant
from kura.backends.musubi.adapters import MUSUBI_RELEASE, adapter_for
from kura.backends.musubi.argv import (
    TrainPlan,
    cache_latents_argv,
    cache_text_encoder_argv,
    guard_value,
    run_path,
    train_argv,
)
from kura.backends.musubi.config import (
    ESCAPE_HATCH_KEYS,
    ExecConfig,
    check_command,
    read_exec_config,
)
from kura.backends.musubi.container import HOST_ENV, RUN_ENV, container_spec
from kura.backends.musubi.dataset_toml import PlannedDataset, plan_datasets, render_dataset_toml
from kura.backends.musubi.depth import check_depth
from kura.backends.musubi.rules import (
    check_attention,
    check_attention_library,
    check_batch,
    check_block_swap,
    check_dual_dit,
    check_fp8,
    check_reasons,
    check_recipe,
    check_sample_images,
    check_sampling_roles,
    check_weight_dtype,
    resolve_network_module,
    resolve_timesteps,
    select_expert,
    select_variant,
)
from kura.backends.musubi.sample_inputs import sample_inputs
from kura.errors import SpecError, Unsupported
from kura.schema.run import RunSpec

__all__ = ["KNOWN_ROLES", "compile_run"]

KNOWN_ROLES = ("dit", "dit_high_noise", "vae", "text_encoder", "text_encoder_2", "image_encoder")
COMPILED_DIR = "compiled"
"""Sub-folder of the run that holds the compiled files (``files`` keys are relative to it)."""
DATASET_TOML = "dataset.toml"
_ESCAPE_STEPS: tuple[tuple[StepName, str], ...] = (
    ("cache_latents", "cache_latents_command"),
    ("cache_text_encoder", "cache_text_encoder_command"),
    ("train", "command"),
)
SAMPLE_PROMPTS = "sample_prompts.txt"


def compile_run(spec: RunSpec, inputs: CompileInputs) -> CompiledRun:
    """Compile ``spec`` for Musubi Tuner; refusals raise ``SpecError``/``Unsupported``."""
    _check_roles(inputs)
    guard_value(inputs.run_dir, "run folder")
    if inputs.validation:
        raise Unsupported(
            f"Musubi Tuner {MUSUBI_RELEASE} has no validation datasets and reports no "
            f"held-out loss (run.yaml validation: {', '.join(d.name for d in inputs.validation)})",
            hint="remove `validation` from run.yaml; a sweep on Musubi scores by "
            "`objective.metric: train_loss` or a judge",
        )
    adapter = adapter_for(inputs.architecture)
    if adapter is None:
        return _compile_without_adapter(spec, inputs)
    cfg = read_exec_config(adapter, spec.backend.config)
    variant = select_variant(adapter, inputs.model_version)
    warnings: list[str] = []
    check_recipe(spec)
    check_batch(spec, cfg)
    network_module = resolve_network_module(spec, adapter)
    sampling, shift, weighting, timestep_warnings = resolve_timesteps(spec, adapter)
    warnings += timestep_warnings
    check_fp8(adapter, variant, cfg)
    warnings += check_block_swap(adapter, variant, cfg)
    warnings += check_attention(adapter, cfg)
    warnings += check_attention_library(spec, inputs, cfg)
    inputs, expert = select_expert(adapter, variant, inputs, cfg)
    if expert is not None:
        warnings.append(
            f"Wan 2.2 single-expert training ({expert.expert}-noise DiT only): timesteps "
            f"{expert.min_timestep}-{expert.max_timestep} with --preserve_distribution_shape, "
            "as docs/wan.md recommends (training.min_timestep/max_timestep override the range)"
        )
    warnings += check_weight_dtype(adapter, inputs, cfg)
    warnings += check_depth(cfg, inputs.trainer_facts)
    boundary = check_dual_dit(spec, adapter, variant, inputs, cfg)
    check_sampling_roles(spec, adapter, inputs)
    check_sample_images(spec, adapter, variant)
    planned, dataset_warnings = plan_datasets(spec, inputs, adapter, variant)
    warnings += dataset_warnings
    hidream_task = _hidream_task(adapter, planned, cfg)
    files = _files(spec, planned, cfg)
    dataset_config = run_path(inputs.run_dir, COMPILED_DIR, DATASET_TOML)
    plan = TrainPlan(
        dataset_config=dataset_config,
        network_module=network_module,
        timestep_sampling=sampling,
        discrete_flow_shift=shift,
        weighting_scheme=weighting,
        timestep_boundary=boundary,
        hidream_task=hidream_task,
        sample_prompts_file=(
            run_path(inputs.run_dir, COMPILED_DIR, SAMPLE_PROMPTS)
            if SAMPLE_PROMPTS in files
            else None
        ),
        output_dir=run_path(inputs.run_dir, "output"),
        logging_dir=run_path(inputs.run_dir, "logs"),
        min_timestep=expert.min_timestep if expert else None,
        max_timestep=expert.max_timestep if expert else None,
        preserve_distribution_shape=expert is not None,
    )
    steps = _adapter_steps(spec, adapter, variant, inputs, cfg, plan)
    escape = bool(cfg.commands)
    if escape:
        warnings.append(_escape_warning(cfg.commands))
    warnings += check_reasons(spec)
    return CompiledRun(
        files=files,
        steps=tuple(steps),
        container=container_spec(spec, inputs),
        warnings=tuple(warnings),
        escape_hatch=escape,
        backend="musubi-tuner",
        release=MUSUBI_RELEASE,
    )


def _check_roles(inputs: CompileInputs) -> None:
    unknown = sorted(set(inputs.model_paths) - set(KNOWN_ROLES))
    if unknown:
        raise SpecError(
            f"unknown model role(s): {', '.join(unknown)}",
            hint=f"Kura's roles are: {', '.join(KNOWN_ROLES)}",
        )


def _hidream_task(adapter: Adapter, planned: list[PlannedDataset], cfg: ExecConfig) -> str | None:
    """HiDream-O1 ``--task``: i2i when every dataset has controls, t2i when none has."""
    if adapter.id != "hidream_o1":
        return None
    with_controls = [p.source.control_dir is not None for p in planned]
    if any(with_controls) and not all(with_controls):
        raise SpecError(
            "hidream_o1 trains either t2i (no control images) or i2i (control images on every "
            "dataset); this run mixes both",
            hint="train the two kinds of data in separate runs",
        )
    task = "i2i" if all(with_controls) else "t2i"
    swap_needs_batch_one = task == "i2i" or cfg.attention == "flash_attn"
    if cfg.blocks_to_swap and swap_needs_batch_one and cfg.batch_size != 1:
        raise SpecError(
            f"hidream_o1 with block swap and {'i2i' if task == 'i2i' else 'flash_attn'} "
            "needs a micro-batch of 1",
            hint="set backend.config.batch_size: 1 and raise gradient_accumulation_steps",
        )
    return task


def _files(spec: RunSpec, planned: list[PlannedDataset], cfg: ExecConfig) -> dict[str, str]:
    files = {DATASET_TOML: render_dataset_toml(planned, cfg.batch_size)}
    prompts = spec.training.sample_prompts
    if prompts:
        for line in prompts:
            if "\n" in line or "\r" in line or "\x00" in line:
                raise SpecError(
                    "a training.sample_prompts entry contains a line break",
                    hint="give one prompt per list item, on one line",
                )
        # The files a prompt names, as the step sees them (mounted in a container).
        files[SAMPLE_PROMPTS] = "".join(f"{line}\n" for line in sample_inputs(spec).lines)
    return files


def _adapter_steps(
    spec: RunSpec,
    adapter: Adapter,
    variant: Variant,
    inputs: CompileInputs,
    cfg: ExecConfig,
    plan: TrainPlan,
) -> list[Step]:
    substitutions = _substitutions(spec, inputs, plan.dataset_config)
    latents = cfg.commands.get("cache_latents_command")
    text = cfg.commands.get("cache_text_encoder_command")
    train = cfg.commands.get("command")
    return [
        _step(
            "cache_latents",
            latents,
            substitutions,
            lambda: cache_latents_argv(adapter, variant, inputs, cfg, plan.dataset_config),
            inputs,
        ),
        _step(
            "cache_text_encoder",
            text,
            substitutions,
            lambda: cache_text_encoder_argv(adapter, variant, inputs, cfg, plan.dataset_config),
            inputs,
        ),
        _step(
            "train",
            train,
            substitutions,
            lambda: train_argv(spec, adapter, variant, inputs, cfg, plan),
            inputs,
        ),
    ]


def _step_env(inputs: CompileInputs) -> dict[str, str]:
    """Every step runs offline; a host step from the trainer environment gets the host
    extras too (an image sets them itself)."""
    if inputs.trainer_bin is None:
        return dict(RUN_ENV)
    return {**RUN_ENV, **HOST_ENV}


def _step(
    name: StepName,
    command: tuple[str, ...] | None,
    substitutions: dict[str, str],
    generate: Callable[[], list[str]],
    inputs: CompileInputs,
) -> Step:
    """The generated step, or the escape-hatch argv when one replaces it."""
    cwd, env = inputs.trainer_dir, _step_env(inputs)
    if command is None:
        return Step(name=name, argv=tuple(generate()), env=env, cwd=cwd, kind=_kind(name))
    return Step(
        name=name,
        argv=tuple(_substitute(command, substitutions)),
        env=env,
        cwd=cwd,
        kind=_kind(name),
        generated=False,
    )


def _kind(name: StepName) -> StepKind:
    return "train" if name == "train" else "cache"


def _substitutions(spec: RunSpec, inputs: CompileInputs, dataset_config: str) -> dict[str, str]:
    """Placeholders an escape-hatch argv element may be exactly equal to."""
    values = {
        "{run_dir}": inputs.run_dir,
        "{musubi_dir}": inputs.trainer_dir,
        "{dataset_config}": dataset_config,
        "{output_dir}": run_path(inputs.run_dir, "output"),
        "{logging_dir}": run_path(inputs.run_dir, "logs"),
        "{output_name}": spec.id,
    }
    if spec.training.sample_prompts:
        values["{sample_prompts}"] = run_path(inputs.run_dir, COMPILED_DIR, SAMPLE_PROMPTS)
    for role, path in inputs.model_paths.items():
        values[f"{{model.{role}}}"] = path
    return values


def _substitute(command: tuple[str, ...], substitutions: dict[str, str]) -> list[str]:
    return [substitutions.get(element, element) for element in command]


def _escape_warning(commands: dict[str, tuple[str, ...]]) -> str:
    names = ", ".join(f"backend.config.{k}" for k in ESCAPE_HATCH_KEYS if k in commands)
    return f"escape hatch: {names} replace(s) Kura's generated command(s); Kura did not check them"


def _compile_without_adapter(spec: RunSpec, inputs: CompileInputs) -> CompiledRun:
    """An architecture Kura has no record of: only the escape hatch can run it."""
    config = spec.backend.config
    if "command" not in config:
        raise Unsupported(
            f"Kura has no built-in Musubi adapter for {inputs.architecture!r} "
            "(this says nothing about whether Musubi supports it)",
            hint="add an adapter record to kura.backends.musubi.adapters, or set "
            "backend.config.command (and cache_latents_command / cache_text_encoder_command) "
            "to the argv lists Musubi's docs give for it",
        )
    allowed = (*ESCAPE_HATCH_KEYS, "batch_size", "gradient_accumulation_steps")
    unknown = sorted(set(config) - set(allowed))
    if unknown:
        raise SpecError(
            f"unknown backend.config key(s) for {inputs.architecture!r} (no adapter): "
            f"{', '.join(unknown)}",
            hint=f"without an adapter only {', '.join(allowed)} apply; put the rest in the "
            "command itself",
        )
    commands = {k: check_command(k, config[k]) for k in ESCAPE_HATCH_KEYS if k in config}
    batch = _plain_int(config, "batch_size")
    accumulation = _plain_int(config, "gradient_accumulation_steps")
    product = batch * accumulation * spec.execution.gpus
    if product != spec.training.effective_batch:
        raise SpecError(
            f"micro-batch {batch} × accumulation {accumulation} × {spec.execution.gpus} GPU(s) "
            f"= {product}, but training.effective_batch is {spec.training.effective_batch}",
            hint="set backend.config.batch_size / gradient_accumulation_steps to match",
        )
    planned, warnings = plan_datasets(spec, inputs, None, None)
    files = {DATASET_TOML: render_dataset_toml(planned, batch)}
    dataset_config = run_path(inputs.run_dir, COMPILED_DIR, DATASET_TOML)
    substitutions = _substitutions(spec, inputs, dataset_config)
    steps = [
        Step(
            name=name,
            argv=tuple(_substitute(commands[key], substitutions)),
            env=_step_env(inputs),
            cwd=inputs.trainer_dir,
            kind=_kind(name),
            generated=False,
        )
        for name, key in _ESCAPE_STEPS
        if key in commands
    ]
    warnings = [
        *warnings,
        f"no Kura adapter for {inputs.architecture!r}: only the dataset TOML is generated",
        _escape_warning(commands),
        *check_reasons(spec),
    ]
    return CompiledRun(
        files=files,
        steps=tuple(steps),
        container=container_spec(spec, inputs),
        warnings=tuple(warnings),
        escape_hatch=True,
        backend="musubi-tuner",
        release=MUSUBI_RELEASE,
    )


def _plain_int(config: dict[str, object], key: str) -> int:
    """An integer key; unset means 1, Musubi's own default for both keys it is used for."""
    value = config.get(key, 1)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SpecError(
            f"backend.config.{key} must be an integer ≥ 1, got {value!r}",
            hint=f"set backend.config.{key}",
        )
    return value
