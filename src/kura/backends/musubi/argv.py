"""Argument vectors for the three Musubi steps, in a fixed order.

Every value is one argv element after its flag; nothing passes through a shell. Values
that argparse would read as an option (a leading ``-``) or that ``exec`` cannot carry (a
NUL byte) are refused rather than rewritten.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from kura.backends.musubi.adapter_model import Adapter, ConfigKey, RoleFlag, StepName, Variant
from kura.backends.musubi.config import ExecConfig
from kura.backends.musubi.contract import CompileInputs
from kura.errors import SpecError
from kura.schema.run import RunSpec

__all__ = [
    "TrainPlan",
    "cache_latents_argv",
    "cache_text_encoder_argv",
    "executable",
    "guard_value",
    "script_path",
    "train_argv",
]


@dataclass(frozen=True)
class TrainPlan:
    """Values the train argv needs that the compiler resolved beforehand."""

    dataset_config: str
    network_module: str
    timestep_sampling: str
    discrete_flow_shift: float | None
    weighting_scheme: str
    timestep_boundary: int | None
    hidream_task: str | None
    sample_prompts_file: str | None
    output_dir: str
    logging_dir: str
    min_timestep: int | None = None
    max_timestep: int | None = None
    preserve_distribution_shape: bool = False


def guard_value(value: str, what: str) -> str:
    """Refuse a value argparse would misread as an option, or exec could not pass."""
    if "\x00" in value:
        raise SpecError(f"{what} contains a NUL byte", hint=f"fix {what}")
    if value.startswith("-") and not _is_number(value):
        raise SpecError(
            f"{what} {value!r} starts with '-', which the trainer would read as an option",
            hint="use an absolute path or a name that does not start with '-'",
        )
    return value


def _is_number(value: str) -> bool:
    try:
        float(value)
    except ValueError:
        return False
    return True


def script_path(script: str) -> str:
    """A Musubi entry script as run from the checkout root."""
    return f"src/musubi_tuner/{script}.py"


def _num(value: float) -> str:
    return repr(float(value))


def _roles(
    step: StepName,
    roles: tuple[RoleFlag, ...],
    inputs: CompileInputs,
    adapter: Adapter,
    *,
    force: bool = False,
) -> list[str]:
    out: list[str] = []
    for role in roles:
        path = inputs.model_paths.get(role.role)
        if path is None:
            if role.required or force:
                raise SpecError(
                    f"{adapter.id} step {step} needs the {role.role} model ({role.flag})",
                    hint=f"add a {role.role} file to the model bundle or model.paths",
                )
            continue
        out += [role.flag, guard_value(path, f"model path for {role.role}")]
    return out


def _version(step: StepName, adapter: Adapter, inputs: CompileInputs) -> list[str]:
    if adapter.version_flag is None or step not in adapter.version_steps:
        return []
    assert inputs.model_version is not None
    return [adapter.version_flag, guard_value(inputs.model_version, "model version")]


def _arch_keys(step: StepName, cfg: ExecConfig) -> list[str]:
    out: list[str] = []
    for key, value in cfg.arch_keys:
        if step in key.steps:
            out += _key_flag(key, value)
    return out


def _key_flag(key: ConfigKey, value: object) -> list[str]:
    if key.kind == "bool":
        return [key.flag] if value else []
    return [key.flag, guard_value(str(value), f"backend.config.{key.name}")]


def executable(inputs: CompileInputs, name: str) -> str:
    """``name`` (``python``, ``accelerate``) from the trainer environment's folder when the
    step runs on the host, so the approved argv names the exact interpreter; the bare name
    in an image, whose PATH has it."""
    if inputs.trainer_bin is None:
        return name
    return posixpath.join(inputs.trainer_bin, name)


def _python_step(
    adapter: Adapter, step: StepName, inputs: CompileInputs, dataset_config: str
) -> list[str]:
    return [
        executable(inputs, "python"),
        script_path(adapter.scripts[step]),
        "--dataset_config",
        guard_value(dataset_config, "dataset config path"),
    ]


def cache_latents_argv(
    adapter: Adapter, variant: Variant, inputs: CompileInputs, cfg: ExecConfig, dataset_config: str
) -> list[str]:
    """``python src/musubi_tuner/<arch>_cache_latents.py …``."""
    step: StepName = "cache_latents"
    argv = _python_step(adapter, step, inputs, dataset_config)
    argv += _roles(step, adapter.roles[step], inputs, adapter)
    argv += _roles(step, variant.step_roles.get(step, ()), inputs, adapter)
    argv += _version(step, adapter, inputs)
    argv += list(variant.step_flags.get(step, ()))
    argv += _arch_keys(step, cfg)
    return argv


def cache_text_encoder_argv(
    adapter: Adapter, variant: Variant, inputs: CompileInputs, cfg: ExecConfig, dataset_config: str
) -> list[str]:
    """``python src/musubi_tuner/<arch>_cache_text_encoder_outputs.py …``."""
    step: StepName = "cache_text_encoder"
    argv = _python_step(adapter, step, inputs, dataset_config)
    argv += _roles(step, adapter.roles[step], inputs, adapter)
    argv += _roles(step, variant.step_roles.get(step, ()), inputs, adapter)
    argv += _version(step, adapter, inputs)
    argv += list(variant.step_flags.get(step, ()))
    te = adapter.text_encoder_fp8
    fp8_te = te is not None and any(key.name == te.name and v for key, v in cfg.arch_keys)
    if adapter.id == "hidream_o1" and fp8_te:
        argv += _roles(step, (RoleFlag("dit", "--dit"),), inputs, adapter)
    argv += _arch_keys(step, cfg)
    return argv


def _accelerate(spec: RunSpec, inputs: CompileInputs, cfg: ExecConfig) -> list[str]:
    gpus = spec.execution.gpus
    argv = [
        executable(inputs, "accelerate"),
        "launch",
        "--num_processes",
        str(gpus),
        "--num_machines",
        "1",
        "--mixed_precision",
        cfg.mixed_precision,
        "--dynamo_backend",
        "no",
        "--num_cpu_threads_per_process",
        str(cfg.num_cpu_threads_per_process),
    ]
    if gpus > 1:
        argv.append("--multi_gpu")
    return argv


def _list_flag(flag: str, values: list[str], what: str) -> list[str]:
    if not values:
        return []
    return [flag, *(guard_value(v, what) for v in values)]


def _network(spec: RunSpec, plan: TrainPlan) -> list[str]:
    network = spec.training.network
    return [
        "--network_module",
        plan.network_module,
        "--network_dim",
        str(network.rank),
        "--network_alpha",
        _num(network.alpha),
        *_list_flag("--network_args", network.args, "training.network.args item"),
    ]


def _optimizer(spec: RunSpec) -> list[str]:
    training = spec.training
    argv = [
        "--optimizer_type",
        guard_value(training.optimizer, "training.optimizer"),
        *_list_flag("--optimizer_args", training.optimizer_args, "training.optimizer_args item"),
        "--learning_rate",
        _num(training.learning_rate),
        "--lr_scheduler",
        guard_value(training.scheduler, "training.scheduler"),
    ]
    if training.warmup_steps:
        argv += ["--lr_warmup_steps", str(training.warmup_steps)]
    if training.max_grad_norm is not None:
        argv += ["--max_grad_norm", _num(training.max_grad_norm)]
    if training.epochs is not None:
        argv += ["--max_train_epochs", str(training.epochs)]
    else:
        argv += ["--max_train_steps", str(training.max_steps)]
    argv += ["--seed", str(training.seed)]
    return argv


def _memory(cfg: ExecConfig) -> list[str]:
    argv = [
        "--mixed_precision",
        cfg.mixed_precision,
        "--gradient_accumulation_steps",
        str(cfg.gradient_accumulation_steps),
        f"--{cfg.attention}",
    ]
    if cfg.split_attn:
        argv.append("--split_attn")
    if cfg.gradient_checkpointing:
        argv.append("--gradient_checkpointing")
    if cfg.gradient_checkpointing_cpu_offload:
        argv.append("--gradient_checkpointing_cpu_offload")
    if cfg.fp8_base:
        argv.append("--fp8_base")
    if cfg.fp8_scaled:
        argv.append("--fp8_scaled")
    if cfg.blocks_to_swap:
        argv += ["--blocks_to_swap", str(cfg.blocks_to_swap)]
        if cfg.use_pinned_memory_for_block_swap:
            argv.append("--use_pinned_memory_for_block_swap")
        if cfg.block_swap_h2d_only:
            argv.append("--block_swap_h2d_only")
            if cfg.block_swap_ring_size is not None:
                argv += ["--block_swap_ring_size", str(cfg.block_swap_ring_size)]
    return argv


def _timesteps(spec: RunSpec, plan: TrainPlan) -> list[str]:
    training = spec.training
    argv = ["--timestep_sampling", plan.timestep_sampling]
    if plan.discrete_flow_shift is not None:
        argv += ["--discrete_flow_shift", _num(plan.discrete_flow_shift)]
    argv += ["--weighting_scheme", plan.weighting_scheme]
    low = training.min_timestep if training.min_timestep is not None else plan.min_timestep
    high = training.max_timestep if training.max_timestep is not None else plan.max_timestep
    if low is not None:
        argv += ["--min_timestep", str(low)]
    if high is not None:
        argv += ["--max_timestep", str(high)]
    if training.preserve_distribution_shape or plan.preserve_distribution_shape:
        argv.append("--preserve_distribution_shape")
    if plan.timestep_boundary is not None:
        argv += ["--timestep_boundary", str(plan.timestep_boundary)]
    return argv


def _outputs(spec: RunSpec, cfg: ExecConfig, plan: TrainPlan) -> list[str]:
    training = spec.training
    argv = ["--max_data_loader_n_workers", str(cfg.max_data_loader_n_workers)]
    if cfg.persistent_data_loader_workers:
        argv.append("--persistent_data_loader_workers")
    argv += [
        "--output_dir",
        guard_value(plan.output_dir, "output folder"),
        "--output_name",
        guard_value(spec.id, "run id"),
        "--save_every_n_epochs",
        str(training.save_every_n_epochs),
        "--save_precision",
        training.save_precision,
        "--save_state",
        "--logging_dir",
        guard_value(plan.logging_dir, "logging folder"),
    ]
    if plan.sample_prompts_file is not None:
        argv += ["--sample_prompts", guard_value(plan.sample_prompts_file, "sample prompts file")]
        if training.sample_every_n_epochs is not None:
            argv += ["--sample_every_n_epochs", str(training.sample_every_n_epochs)]
        if training.sample_at_first:
            argv.append("--sample_at_first")
    return argv


def train_argv(
    spec: RunSpec,
    adapter: Adapter,
    variant: Variant,
    inputs: CompileInputs,
    cfg: ExecConfig,
    plan: TrainPlan,
) -> list[str]:
    """``accelerate launch … src/musubi_tuner/<arch>_train_network.py …``."""
    step: StepName = "train"
    sampling = plan.sample_prompts_file is not None
    argv = _accelerate(spec, inputs, cfg)
    argv += [script_path(adapter.scripts[step]), "--dataset_config", plan.dataset_config]
    argv += _version(step, adapter, inputs)
    if plan.hidream_task is not None:
        argv += ["--task", plan.hidream_task]
    argv += _roles(step, adapter.roles[step], inputs, adapter)
    argv += _roles(step, variant.step_roles.get(step, ()), inputs, adapter, force=sampling)
    if plan.timestep_boundary is not None:
        argv += _roles(step, (RoleFlag("dit_high_noise", "--dit_high_noise"),), inputs, adapter)
    if sampling:
        argv += _roles(step, adapter.sample_roles, inputs, adapter, force=True)
    argv += list(variant.step_flags.get(step, ()))
    argv += _network(spec, plan)
    argv += _optimizer(spec)
    argv += _memory(cfg)
    argv += _arch_keys(step, cfg)
    argv += _timesteps(spec, plan)
    argv += _outputs(spec, cfg, plan)
    return argv


def run_path(run_dir: str, *parts: str) -> str:
    """A path under the run folder as the trainer sees it."""
    return posixpath.join(run_dir, *parts)
