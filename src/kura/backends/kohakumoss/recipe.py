"""The recipe KohakuMoss will run, read back from ``compiled/kohakumoss/train.py`` as
KohakuMoss itself composes it (``config_knobs``, answered with compile's own check of the
configs: the train script's defaults, the preset layers, Kura's knobs), each part with
where run.yaml's intent differs: KohakuMoss takes its optimizer, schedule shape, timesteps
and batching from its own knobs, so a run.yaml value that is not passed is said to
differ."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kura.backends.base import LossLabels, PlanInputs, RecipeItem, TrainerRecipe
from kura.errors import KuraError

if TYPE_CHECKING:
    from kura.backends.kohakumoss.env import EnvLocation
    from kura.schema.run import RunSpec

__all__ = ["LOSS_LABELS", "composed_knobs", "moss_recipe"]

LOSS_LABELS = LossLabels(
    loss="Last loss (the newest loss KohakuMoss logged in metrics.jsonl)",
    raw="metrics.jsonl loss (each logged step's raw loss)",
    learning_rate="metrics.jsonl lr",
)
TRAIN = "compiled/kohakumoss/train.py"


def composed_knobs(env: EnvLocation, compiled_dir: Path) -> Mapping[str, Any]:
    """The train config's knobs as KohakuMoss composes them (``config_knobs``), from the
    same check of the compiled configs compile ran (``config_problems``: one answer)."""
    from kura.backends.kohakumoss.queries import config_problems

    folder = compiled_dir / "kohakumoss"
    configs = [folder / "train.py", folder / "data.py"]
    if (folder / "val_data.py").is_file():
        configs.append(folder / "val_data.py")
    knobs = config_problems(env, configs)[0].knobs
    if knobs is None:
        raise KuraError(
            f"KohakuMoss's checker crashed on {configs[0]}: its knobs cannot be read back",
            hint="fix the value its problems name in backend.config, then plan again",
        )
    return knobs


def moss_recipe(spec: RunSpec, inputs: PlanInputs, compiled_dir: Path) -> TrainerRecipe:
    from kura.backends.kohakumoss.env import EnvLocation, require_env
    from kura.schema.compiled import StepsFile
    from kura.schema.machine import read_machine_file

    steps = read_machine_file(
        StepsFile, compiled_dir / "steps.json", remedy="compile the run again (`kura run plan`)"
    )
    kogine = Path(steps.steps[0].argv[0])
    env = require_env(EnvLocation(kogine.parent.parent, "compiled/steps.json"))
    k = composed_knobs(env, compiled_dir)
    dim, alpha = float(k.get("DIM", 0)), float(k.get("ALPHA", 0))
    scale = alpha / dim if dim else None
    total = int(k["STEPS"]) if isinstance(k.get("STEPS"), int) else None
    items = (
        _network(spec, k, scale),
        _optimizer(spec, k),
        _schedule(spec, k),
        _length(spec, k),
        _batch(spec, k),
        _precision(k),
        _memory(spec, k),
        _timesteps(spec, k),
    )
    return TrainerRecipe("kohakumoss", (TRAIN,), items, lora_scale=scale, total_steps=total)


def _network(spec: RunSpec, k: Mapping[str, Any], scale: float | None) -> RecipeItem:
    recipe = spec.training.network
    algo, preset = k.get("ALGO", "lora"), k.get("PRESET", "attn-mlp")
    dim, alpha = k.get("DIM"), k.get("ALPHA")
    runs = f"{algo} on {preset}, DIM {dim}, ALPHA {alpha}"
    runs += f": LoRA scale ALPHA/DIM = {scale:.4g}" if scale is not None else ""
    differs = None
    if dim != recipe.rank or float(alpha or 0) != float(recipe.alpha):
        differs = f"KohakuMoss trains DIM {dim} ALPHA {alpha}"
    return RecipeItem(
        "network",
        runs,
        f"{TRAIN} (composed): ALGO, PRESET, DIM, ALPHA",
        {"ALGO": algo, "PRESET": preset, "DIM": dim, "ALPHA": alpha},
        f"rank {recipe.rank}, alpha {recipe.alpha:g}",
        differs,
    )


def _optimizer(spec: RunSpec, k: Mapping[str, Any]) -> RecipeItem:
    training = spec.training
    name, lr = str(k.get("OPTIMIZER", "adamw")), k.get("LR")
    runs = (
        f"{name}, learning rate {lr}, weight decay {k.get('WEIGHT_DECAY')}, betas "
        f"{tuple(k.get('BETAS') or ())}, gradient clipping at {k.get('GRAD_CLIP')}"
    )
    differs = None
    if name != training.optimizer.lower():
        differs = (
            f"KohakuMoss runs its OPTIMIZER {name} (training.optimizer is not passed: set "
            "backend.config.OPTIMIZER)"
        )
    elif lr != training.learning_rate:
        differs = f"KohakuMoss trains at LR {lr}"
    elif training.optimizer_args:
        differs = (
            "training.optimizer_args are not passed (KohakuMoss's WEIGHT_DECAY, BETAS and "
            "OPTIMIZER_KWARGS knobs apply)"
        )
    return RecipeItem(
        "optimizer",
        runs,
        f"{TRAIN} (composed): OPTIMIZER, LR, WEIGHT_DECAY, BETAS, GRAD_CLIP",
        {key: k.get(key) for key in ("OPTIMIZER", "LR", "WEIGHT_DECAY", "BETAS", "GRAD_CLIP")},
        f"{training.optimizer}, learning rate {training.learning_rate:g}",
        differs,
    )


def _mapping(value: object) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def _schedule(spec: RunSpec, k: Mapping[str, Any]) -> RecipeItem:
    training = spec.training
    schedule = _mapping(k.get("SCHEDULE"))
    mode, warmup = str(schedule.get("mode", "?")), int(schedule.get("warmup", 0) or 0)
    runs = f"{mode}, " + (f"{warmup} warm-up steps" if warmup else "no warm-up")
    if "min_value" in schedule:
        runs += f", down to {schedule['min_value']}× the learning rate"
    differs = None
    if mode != training.scheduler:
        differs = f"KohakuMoss's SCHEDULE is {mode} (training.scheduler is not passed)"
    elif warmup != training.warmup_steps:
        differs = f"KohakuMoss warms up {warmup} steps"
    return RecipeItem(
        "schedule",
        runs,
        f"{TRAIN} (composed): SCHEDULE",
        {"SCHEDULE": dict(schedule)},
        f"{training.scheduler}, {training.warmup_steps} warm-up steps",
        differs,
    )


def _length(spec: RunSpec, k: Mapping[str, Any]) -> RecipeItem:
    steps = k.get("STEPS")
    differs = None
    if steps != spec.training.max_steps:
        differs = f"KohakuMoss trains STEPS {steps}"
    return RecipeItem(
        "length",
        f"STEPS {steps} optimizer steps (KohakuMoss counts steps; its data plan below shows the "
        "batches an epoch makes)",
        f"{TRAIN} (composed): STEPS",
        {"STEPS": steps},
        f"{spec.training.max_steps} steps"
        if spec.training.max_steps
        else f"{spec.training.epochs} epochs",
        differs,
    )


def _batch(spec: RunSpec, k: Mapping[str, Any]) -> RecipeItem:
    batching, accumulation = k.get("BATCHING", "tokens"), k.get("GRAD_ACC", 1)
    if batching == "count":
        runs = f"BATCH_SIZE {k.get('BATCH_SIZE')} samples × GRAD_ACC {accumulation}"
    else:
        runs = (
            f"token-budget batches ({batching}): up to MAX_TOKENS {k.get('MAX_TOKENS')} image + "
            f"text tokens per batch × GRAD_ACC {accumulation}; the samples a step takes vary"
        )
    differs = (
        "KohakuMoss packs batches by tokens: training.effective_batch is not passed"
        if batching != "count"
        else None
    )
    return RecipeItem(
        "batch",
        runs,
        f"{TRAIN} (composed): BATCHING, MAX_TOKENS, BATCH_SIZE, GRAD_ACC",
        {key: k.get(key) for key in ("BATCHING", "MAX_TOKENS", "BATCH_SIZE", "GRAD_ACC")},
        f"effective batch {spec.training.effective_batch}",
        differs,
    )


def _precision(k: Mapping[str, Any]) -> RecipeItem:
    base = k.get("BASE_PRECISION") or "compute"
    return RecipeItem(
        "precision",
        f"PRECISION {k.get('PRECISION')}; frozen base weights at {base} precision",
        f"{TRAIN} (composed): PRECISION, BASE_PRECISION",
        {"PRECISION": k.get("PRECISION"), "BASE_PRECISION": k.get("BASE_PRECISION")},
    )


_MANUAL = ("CHECKPOINT", "STREAM", "STREAM_RESIDENT", "ACT_OFFLOAD", "OPTIM_STATE", "GRAD_OFFLOAD")


def _memory(spec: RunSpec, k: Mapping[str, Any]) -> RecipeItem:
    profile = k.get("MEMORY_PROFILE")
    layer = spec.backend.config.get("vram_layer", "24g")
    runs = f"MEMORY_PROFILE {profile} (the vram_{layer} layer"
    runs += ", or the fit ladder)" if "MEMORY_PROFILE" in spec.backend.config else ")"
    manual = {key: k[key] for key in _MANUAL if k.get(key) is not None}
    if manual:
        runs += "; " + ", ".join(f"{key} {value}" for key, value in manual.items())
    return RecipeItem(
        "memory",
        runs,
        f"{TRAIN} (composed): MEMORY_PROFILE and the manual memory knobs",
        {"MEMORY_PROFILE": profile, "vram_layer": layer, **manual},
    )


def _timesteps(spec: RunSpec, k: Mapping[str, Any]) -> RecipeItem:
    training = spec.training
    kwargs = _mapping(k.get("TIMESTEP_KWARGS"))
    runs = f"TIMESTEP {k.get('TIMESTEP')}" + (
        " (" + ", ".join(f"{key} {value}" for key, value in kwargs.items()) + ")" if kwargs else ""
    )
    runs += f", WEIGHTING {k.get('WEIGHTING')}"
    asked = [
        f"{name} {value}"
        for name, value in (
            ("timestep_sampling", training.timestep_sampling),
            ("discrete_flow_shift", training.discrete_flow_shift),
            ("weighting_scheme", training.weighting_scheme),
        )
        if value is not None
    ]
    return RecipeItem(
        "timesteps",
        runs,
        f"{TRAIN} (composed): TIMESTEP, TIMESTEP_KWARGS, WEIGHTING",
        {
            "TIMESTEP": k.get("TIMESTEP"),
            "TIMESTEP_KWARGS": dict(kwargs),
            "WEIGHTING": k.get("WEIGHTING"),
        },
        ", ".join(asked) or None,
        f"{', '.join(asked)} not passed (KohakuMoss's own TIMESTEP applies)" if asked else None,
    )
