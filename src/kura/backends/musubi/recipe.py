"""The recipe Musubi Tuner will run, read back from ``compiled/steps.json`` (the train step's
argv, flag by flag, as Musubi's parser takes them) and ``compiled/dataset.toml`` (the
micro-batch), each part with where run.yaml's intent differs. The steps an epoch makes come
from the estimator's own count of Musubi's buckets (``estimation.estimate_config``)."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from kura.backends.base import LossLabels, PlanInputs, RecipeItem, TrainerRecipe
from kura.errors import InvalidInput

if TYPE_CHECKING:
    from kura.schema.run import RunSpec

__all__ = ["LOSS_LABELS", "musubi_recipe", "parse_flags"]

LOSS_LABELS = LossLabels(
    loss="Average loss (Musubi's avr_loss: the running mean over the epoch, its progress bar)",
    raw="TensorBoard loss/current (each step's raw loss)",
    learning_rate="TensorBoard lr/… (one series per parameter group)",
)

Flags = Mapping[str, tuple[str, ...]]
"""``--flag`` → its values (empty for a bare switch)."""


def parse_flags(argv: tuple[str, ...] | list[str]) -> tuple[Flags, Flags]:
    """(accelerate's flags, the script's flags) of a train argv: everything after the first
    ``src/musubi_tuner/….py`` is the script's."""
    script = next(
        (i for i, a in enumerate(argv) if a.endswith(".py") and "musubi_tuner" in a), None
    )
    if script is None:
        return {}, {}
    return _flags(argv[:script]), _flags(argv[script + 1 :])


def _flags(argv: tuple[str, ...] | list[str]) -> dict[str, tuple[str, ...]]:
    flags: dict[str, tuple[str, ...]] = {}
    name: str | None = None
    values: list[str] = []
    for token in argv:
        if token.startswith("--"):
            if name is not None:
                flags[name] = tuple(values)
            name, values = token, []
        elif name is not None:
            values.append(token)
    if name is not None:
        flags[name] = tuple(values)
    return flags


def _one(flags: Flags, name: str) -> str | None:
    values = flags.get(name)
    return values[0] if values else None


def _number(raw: str | None) -> float | None:
    return None if raw is None else float(raw)


def _g(value: float) -> str:
    return f"{value:g}"


def musubi_recipe(spec: RunSpec, inputs: PlanInputs, compiled_dir: Path) -> TrainerRecipe:
    from kura.schema.compiled import StepsFile
    from kura.schema.machine import read_machine_file

    steps = read_machine_file(
        StepsFile, compiled_dir / "steps.json", remedy="compile the run again (`kura run plan`)"
    )
    train = next((s for s in steps.steps if s.kind == "train"), None)
    if train is None:
        raise InvalidInput(
            f"{compiled_dir / 'steps.json'} has no train step",
            hint="compile the run again (`kura run plan`)",
            path=compiled_dir / "steps.json",
        )
    launch, flags = parse_flags(train.argv)
    micro = _micro_batch(compiled_dir / "dataset.toml")
    total = _total_steps(spec, inputs, flags)
    source = "compiled/steps.json train argv"
    if not train.generated:
        source += " (your own command, backend.config.command)"
    items = (
        _network(spec, flags, source),
        _optimizer(spec, flags, source),
        _schedule(spec, flags, source),
        _length(spec, flags, source, total),
        _batch(spec, flags, launch, micro, source),
        _precision(spec, flags, source),
        _memory(flags, source),
        _timesteps(spec, flags, source),
    )
    dim, alpha = _number(_one(flags, "--network_dim")), _number(_one(flags, "--network_alpha"))
    scale = alpha / dim if dim and alpha is not None else None
    return TrainerRecipe(
        backend="musubi-tuner",
        files=("compiled/steps.json", "compiled/dataset.toml"),
        items=items,
        lora_scale=scale,
        total_steps=total,
    )


def _micro_batch(path: Path) -> int | None:
    if not path.is_file():
        return None
    document = tomllib.loads(path.read_text(encoding="utf-8"))
    sizes = {
        int(d.get("batch_size", document.get("general", {}).get("batch_size", 1)))
        for d in document.get("datasets", [])
    }
    return sizes.pop() if len(sizes) == 1 else None


def _total_steps(spec: RunSpec, inputs: PlanInputs, flags: Flags) -> int | None:
    """``--max_train_steps``, or the epochs × Musubi's batches per epoch as the estimator
    counts its buckets (None when the datasets are not known)."""
    from kura.backends.musubi.estimation import estimate_config

    if "--max_train_epochs" not in flags:
        steps = _one(flags, "--max_train_steps")
        return int(steps) if steps else None
    epochs = _one(flags, "--max_train_epochs")
    if not inputs.datasets or not epochs:
        return None
    one = spec.model_copy(
        update={"training": spec.training.model_copy(update={"epochs": 1, "max_steps": None})}
    )
    paths = inputs.compile.model_paths if inputs.compile is not None else None
    per_epoch = int(estimate_config(one, inputs.datasets, inputs.media, paths).total_steps)
    return per_epoch * int(epochs)


def _network(spec: RunSpec, flags: Flags, source: str) -> RecipeItem:
    network = spec.training.network
    module = _one(flags, "--network_module") or "?"
    dim, alpha = _number(_one(flags, "--network_dim")), _number(_one(flags, "--network_alpha"))
    args = flags.get("--network_args", ())
    scale = f"{alpha / dim:.4g}" if dim and alpha is not None else "?"
    runs = f"{module}, rank {_g(dim or 0)}, alpha {_g(alpha or 0)}: LoRA scale alpha/rank = {scale}"
    if args:
        runs += f"; network args {' '.join(args)}"
    intent = f"rank {network.rank}, alpha {network.alpha:g}" + (
        f", module {network.module}" if network.module else ""
    )
    differs = None
    if dim != network.rank or alpha != network.alpha:
        differs = f"Musubi trains rank {_g(dim or 0)} alpha {_g(alpha or 0)}"
    elif network.module and network.module != module:
        differs = f"Musubi builds {module}, not {network.module}"
    return RecipeItem(
        "network",
        runs,
        f"{source}: --network_module, --network_dim, --network_alpha, --network_args",
        {"network_module": module, "network_dim": dim, "network_alpha": alpha, "args": list(args)},
        intent,
        differs,
    )


def _optimizer(spec: RunSpec, flags: Flags, source: str) -> RecipeItem:
    training = spec.training
    name = _one(flags, "--optimizer_type") or "AdamW (Musubi's default)"
    lr = _number(_one(flags, "--learning_rate"))
    args = flags.get("--optimizer_args", ())
    clip = _one(flags, "--max_grad_norm")
    runs = f"{name}, learning rate {_g(lr) if lr is not None else '2e-06 (default)'}"
    runs += f", {' '.join(args)}" if args else ""
    runs += f", gradient clipping at {clip}" if clip else ", gradient clipping at 1.0 (default)"
    intent = f"{training.optimizer}, learning rate {training.learning_rate:g}"
    differs = None
    if name.lower() != training.optimizer.lower() or lr != training.learning_rate:
        differs = f"Musubi runs {name} at {lr}"
    elif list(args) != list(training.optimizer_args):
        differs = f"Musubi's optimizer arguments are {list(args)}"
    return RecipeItem(
        "optimizer",
        runs,
        f"{source}: --optimizer_type, --learning_rate, --optimizer_args, --max_grad_norm",
        {
            "optimizer_type": name,
            "learning_rate": lr,
            "optimizer_args": list(args),
            "max_grad_norm": clip,
        },
        intent,
        differs,
    )


def _schedule(spec: RunSpec, flags: Flags, source: str) -> RecipeItem:
    training = spec.training
    scheduler = _one(flags, "--lr_scheduler") or "constant"
    warmup = int(float(_one(flags, "--lr_warmup_steps") or 0))
    runs = f"{scheduler}, " + (f"{warmup} warm-up steps" if warmup else "no warm-up")
    intent = f"{training.scheduler}, {training.warmup_steps} warm-up steps"
    differs = None
    if scheduler != training.scheduler or warmup != training.warmup_steps:
        differs = f"Musubi schedules {runs}"
    return RecipeItem(
        "schedule",
        runs,
        f"{source}: --lr_scheduler, --lr_warmup_steps",
        {"lr_scheduler": scheduler, "lr_warmup_steps": warmup},
        intent,
        differs,
    )


def _length(spec: RunSpec, flags: Flags, source: str, total: int | None) -> RecipeItem:
    training = spec.training
    epochs = _one(flags, "--max_train_epochs")
    steps = _one(flags, "--max_train_steps")
    if epochs is not None:
        per = f" ({total // int(epochs)} per epoch, Musubi's batches by bucket)" if total else ""
        runs = f"{epochs} epochs = {total if total else '?'} optimizer steps{per}"
    else:
        runs = f"{steps} optimizer steps"
    intent = f"{training.epochs} epochs" if training.epochs else f"{training.max_steps} steps"
    differs = None
    if (epochs is not None and int(epochs) != training.epochs) or (
        epochs is None and steps is not None and int(steps) != training.max_steps
    ):
        differs = f"Musubi trains {runs}"
    return RecipeItem(
        "length",
        runs,
        f"{source}: --max_train_epochs / --max_train_steps",
        {"max_train_epochs": epochs, "max_train_steps": steps, "total_steps": total},
        intent,
        differs,
    )


def _batch(
    spec: RunSpec, flags: Flags, launch: Flags, micro: int | None, source: str
) -> RecipeItem:
    accumulation = int(_one(flags, "--gradient_accumulation_steps") or 1)
    gpus = int(_one(launch, "--num_processes") or 1)
    effective = micro * accumulation * gpus if micro is not None else None
    runs = (
        f"micro-batch {micro if micro is not None else '? (datasets differ)'} × accumulation "
        f"{accumulation} × {gpus} GPU{'s' if gpus > 1 else ''} = {effective or '?'}"
    )
    intent = f"effective batch {spec.training.effective_batch}"
    differs = None
    if effective is not None and effective != spec.training.effective_batch:
        differs = f"Musubi's effective batch is {effective}"
    return RecipeItem(
        "batch",
        runs,
        f"compiled/dataset.toml batch_size; {source}: --gradient_accumulation_steps, "
        "accelerate --num_processes",
        {"batch_size": micro, "gradient_accumulation_steps": accumulation, "num_processes": gpus},
        intent,
        differs,
    )


def _precision(spec: RunSpec, flags: Flags, source: str) -> RecipeItem:
    mixed = _one(flags, "--mixed_precision") or "no"
    save = _one(flags, "--save_precision") or "fp32 (default)"
    runs = f"{mixed} mixed precision; the LoRA saved as {save}"
    differs = None
    if _one(flags, "--save_precision") not in (None, spec.training.save_precision):
        differs = f"Musubi saves the LoRA as {save}"
    return RecipeItem(
        "precision",
        runs,
        f"{source}: --mixed_precision, --save_precision",
        {"mixed_precision": mixed, "save_precision": save},
        f"LoRA saved as {spec.training.save_precision}",
        differs,
    )


_MEMORY_FLAGS = (
    ("--gradient_checkpointing", "gradient checkpointing"),
    ("--gradient_checkpointing_cpu_offload", "its activations offloaded to the CPU"),
    ("--fp8_base", "fp8 base weights"),
    ("--fp8_scaled", "scaled fp8"),
    ("--fp8_llm", "fp8 text encoder"),
    ("--fp8_t5", "fp8 T5"),
    ("--fp8_vl", "fp8 vision-language encoder"),
    ("--fp8_text_encoder", "fp8 text encoder"),
    ("--split_attn", "split attention"),
    ("--offload_inactive_dit", "the inactive DiT offloaded"),
    ("--use_pinned_memory_for_block_swap", "pinned swap memory"),
    ("--block_swap_h2d_only", "host-to-device-only swap"),
)


def _memory(flags: Flags, source: str) -> RecipeItem:
    found = [label for flag, label in _MEMORY_FLAGS if flag in flags]
    swapped = _one(flags, "--blocks_to_swap")
    if swapped:
        found.append(f"{swapped} blocks swapped to the CPU")
    attention = next(
        (f[2:] for f in flags if f in ("--sdpa", "--flash_attn", "--xformers", "--sage_attn")),
        None,
    )
    runs = ", ".join(found) or "no memory aid"
    if attention:
        runs += f" ({attention} attention)"
    return RecipeItem(
        "memory",
        runs,
        f"{source}: the memory flags (backend.config, set by the fit ladder or by you)",
        {"aids": found, "blocks_to_swap": swapped, "attention": attention},
    )


def _timesteps(spec: RunSpec, flags: Flags, source: str) -> RecipeItem:
    training = spec.training
    sampling = _one(flags, "--timestep_sampling") or "sigma (default)"
    shift = _one(flags, "--discrete_flow_shift")
    weighting = _one(flags, "--weighting_scheme") or "none"
    low, high = _one(flags, "--min_timestep"), _one(flags, "--max_timestep")
    boundary = _one(flags, "--timestep_boundary")
    runs = sampling + (f", shift {shift}" if shift else "") + f", weighting {weighting}"
    if low or high:
        runs += f", timesteps {low or 0}–{high or 1000}"
        if "--preserve_distribution_shape" in flags:
            runs += " (distribution shape preserved)"
    if boundary:
        runs += f", experts switch at {boundary}"
    asked = [
        (name, value)
        for name, value in (
            ("timestep_sampling", training.timestep_sampling),
            ("discrete_flow_shift", training.discrete_flow_shift),
            ("weighting_scheme", training.weighting_scheme),
            ("min_timestep", training.min_timestep),
            ("max_timestep", training.max_timestep),
        )
        if value is not None
    ]
    compiled = {
        "timestep_sampling": _one(flags, "--timestep_sampling"),
        "discrete_flow_shift": _number(shift),
        "weighting_scheme": _one(flags, "--weighting_scheme"),
        "min_timestep": None if low is None else int(low),
        "max_timestep": None if high is None else int(high),
    }
    off = [f"{name} {value} → {compiled[name]}" for name, value in asked if compiled[name] != value]
    return RecipeItem(
        "timesteps",
        runs,
        f"{source}: --timestep_sampling, --discrete_flow_shift, --weighting_scheme, "
        "--min_timestep/--max_timestep, --timestep_boundary",
        {**compiled, "timestep_boundary": boundary},
        ", ".join(f"{name} {value}" for name, value in asked) or None,
        "; ".join(off) or None,
    )
