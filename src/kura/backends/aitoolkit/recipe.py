"""The recipe AI-Toolkit will run, read back from ``compiled/aitk-job.yaml`` (the one
``diffusion_trainer`` process Kura writes), each part with where run.yaml's intent differs:
a PEFT-format model ignores ``linear_alpha`` (the LoRA scale is 1.0), a warm-up makes the
scheduler ``constant_with_warmup``, epochs become steps."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kura.backends.base import LossLabels, PlanInputs, RecipeItem, TrainerRecipe
from kura.errors import InvalidInput

if TYPE_CHECKING:
    from kura.schema.run import RunSpec

__all__ = ["LOSS_LABELS", "aitk_recipe"]

LOSS_LABELS = LossLabels(
    loss="Last loss (AI-Toolkit's progress line: the step's raw loss)",
    raw="loss_log.db loss/loss (each step's raw loss)",
    learning_rate="loss_log.db learning_rate",
)
JOB = "compiled/aitk-job.yaml"


def _section(process: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = process.get(name) or {}
    return value if isinstance(value, dict) else {}


def aitk_recipe(spec: RunSpec, inputs: PlanInputs, compiled_dir: Path) -> TrainerRecipe:
    from kura.backends.aitoolkit.archs import model_for
    from kura.backends.aitoolkit.compile import JOB_FILE
    from kura.plainyaml import read_yaml

    path = compiled_dir / JOB_FILE
    job = read_yaml(path)
    processes = (job.get("config") or {}).get("process") or []
    if len(processes) != 1 or not isinstance(processes[0], dict):
        raise InvalidInput(
            f"{path} does not hold the one process Kura writes",
            hint="compile the run again (`kura run plan`)",
            path=path,
        )
    process = processes[0]
    network = _section(process, "network")
    train = _section(process, "train")
    model = _section(process, "model")
    save = _section(process, "save")
    bundle = str((job.get("meta") or {}).get("kura_bundle") or spec.model.base)
    aitk_model = model_for(bundle)
    peft = aitk_model.peft if aitk_model is not None else True
    scale = _scale(network, peft)
    steps = int(train.get("steps", 1000))
    items = (
        _network(spec, network, peft, scale),
        _optimizer(spec, train),
        _schedule(spec, train),
        _length(spec, train, steps),
        _batch(spec, train),
        _precision(spec, train, save),
        _memory(train, model),
        _timesteps(spec, train),
        *_sampling(process, aitk_model.samples.source if aitk_model is not None else None),
        *_clips(process),
    )
    return TrainerRecipe("ai-toolkit", (JOB,), items, lora_scale=scale, total_steps=steps)


def _scale(network: Mapping[str, Any], peft: bool) -> float | None:
    """What AI-Toolkit multiplies the LoRA update by.

    PEFT format (every transformer model class): alpha = rank for LoRA, DoRA and LoKr alike
    (``toolkit/lora_special.py:422-433``; ``old_lokr_format`` is off unless the job sets it,
    ``:415-420``, ``toolkit/config_modules.py:214``), so 1.0; the file it saves carries no
    alpha, or LoKr's alpha = rank (``toolkit/network_mixins.py:607-616``). A UNet (SDXL):
    alpha / rank, as ``LoRAModule`` (``lora_special.py:115-116``), ``DoRAModule``
    (``toolkit/models/DoRA.py:65-66``) and LoCon (``toolkit/lycoris_special.py:97-99``) set
    it, ``linear_alpha`` defaulting to 1.0 (``config_modules.py``, NetworkConfig); a LoKr
    layer whose factors are both full uses 1.0 (``toolkit/models/lokr.py:212-214``)."""
    rank = network.get("linear")
    if not rank:
        return None
    if peft:
        return 1.0
    alpha = network.get("linear_alpha", 1.0)
    return float(alpha) / float(rank)


def _network(
    spec: RunSpec, network: Mapping[str, Any], peft: bool, scale: float | None
) -> RecipeItem:
    recipe = spec.training.network
    kind = str(network.get("type", "lora"))
    rank = network.get("linear")
    alpha = network.get("linear_alpha")
    runs = f"{kind}, rank {rank}"
    runs += (
        ", alpha = rank (PEFT format)"
        if alpha is None and peft
        else f", alpha {alpha if alpha is not None else 1.0:g}"
    )
    runs += f": LoRA scale {scale:.4g}" if scale is not None else ""
    intent = f"rank {recipe.rank}, alpha {recipe.alpha:g} (scale {recipe.alpha / recipe.rank:.4g})"
    differs = None
    if rank != recipe.rank:
        differs = f"AI-Toolkit trains rank {rank}"
    elif scale is not None and abs(scale - recipe.alpha / recipe.rank) > 1e-9:
        differs = (
            f"AI-Toolkit trains in PEFT format, which ignores alpha: the LoRA scale is "
            f"{scale:g}, not {recipe.alpha / recipe.rank:.4g}"
        )
    return RecipeItem(
        "network",
        runs,
        f"{JOB} process[0].network: type, linear, linear_alpha",
        {"type": kind, "linear": rank, "linear_alpha": alpha, "peft": peft},
        intent,
        differs,
    )


def _optimizer(spec: RunSpec, train: Mapping[str, Any]) -> RecipeItem:
    training = spec.training
    name = str(train.get("optimizer", "adamw"))
    lr = float(train.get("lr", 1e-6))
    params = dict(train.get("optimizer_params") or {})
    clip = train.get("max_grad_norm", 1.0)
    runs = f"{name}, learning rate {lr:g}"
    runs += "".join(f", {k} {v}" for k, v in params.items())
    runs += f", gradient clipping at {clip}"
    intent = f"{training.optimizer}, learning rate {training.learning_rate:g}" + "".join(
        f", {arg}" for arg in training.optimizer_args
    )
    differs = None
    if name != training.optimizer.lower() or lr != training.learning_rate:
        differs = f"AI-Toolkit runs {name} at {lr:g}"
    return RecipeItem(
        "optimizer",
        runs,
        f"{JOB} process[0].train: optimizer, lr, optimizer_params, max_grad_norm",
        {"optimizer": name, "lr": lr, "optimizer_params": params, "max_grad_norm": clip},
        intent,
        differs,
    )


def _schedule(spec: RunSpec, train: Mapping[str, Any]) -> RecipeItem:
    training = spec.training
    scheduler = str(train.get("lr_scheduler", "constant"))
    params = dict(train.get("lr_scheduler_params") or {})
    warmup = int(params.get("num_warmup_steps", 0))
    runs = f"{scheduler}, " + (f"{warmup} warm-up steps" if warmup else "no warm-up")
    intent = f"{training.scheduler}, {training.warmup_steps} warm-up steps"
    differs = None
    if warmup != training.warmup_steps:
        differs = f"AI-Toolkit warms up {warmup} steps"
    elif scheduler != training.scheduler:
        differs = (
            f"AI-Toolkit warms up only with {scheduler}"
            if scheduler == "constant_with_warmup"
            else f"AI-Toolkit schedules {scheduler}"
        )
    return RecipeItem(
        "schedule",
        runs,
        f"{JOB} process[0].train: lr_scheduler, lr_scheduler_params",
        {"lr_scheduler": scheduler, "lr_scheduler_params": params},
        intent,
        differs,
    )


def _length(spec: RunSpec, train: Mapping[str, Any], steps: int) -> RecipeItem:
    training = spec.training
    if training.max_steps is not None:
        intent = f"{training.max_steps} steps"
        runs = f"{steps} optimizer steps"
        differs = None if steps == training.max_steps else f"AI-Toolkit trains {steps} steps"
    else:
        intent = f"{training.epochs} epochs"
        per = steps // training.epochs if training.epochs else None
        runs = (
            f"{steps} optimizer steps (AI-Toolkit counts steps: {training.epochs} epochs × "
            f"{per} per epoch)"
        )
        differs = None
    return RecipeItem(
        "length",
        runs,
        f"{JOB} process[0].train.steps",
        {"steps": steps},
        intent,
        differs,
    )


def _batch(spec: RunSpec, train: Mapping[str, Any]) -> RecipeItem:
    micro = int(train.get("batch_size", 1))
    accumulation = int(train.get("gradient_accumulation", 1))
    effective = micro * accumulation
    differs = None
    if effective != spec.training.effective_batch:
        differs = f"AI-Toolkit's effective batch is {effective}"
    return RecipeItem(
        "batch",
        f"micro-batch {micro} × accumulation {accumulation} × 1 GPU = {effective}",
        f"{JOB} process[0].train: batch_size, gradient_accumulation",
        {"batch_size": micro, "gradient_accumulation": accumulation},
        f"effective batch {spec.training.effective_batch}",
        differs,
    )


_SAVE_DTYPES = {
    "float32": "fp32",
    "fp32": "fp32",
    "float16": "fp16",
    "fp16": "fp16",
    "bf16": "bf16",
}


def _precision(spec: RunSpec, train: Mapping[str, Any], save: Mapping[str, Any]) -> RecipeItem:
    dtype = str(train.get("dtype", "fp32"))
    saved = str(save.get("dtype", "float16"))
    differs = None
    if _SAVE_DTYPES.get(saved, saved) != spec.training.save_precision:
        differs = f"AI-Toolkit saves the LoRA as {saved}"
    return RecipeItem(
        "precision",
        f"trains in {dtype}; the LoRA saved as {saved}",
        f"{JOB} process[0].train.dtype, process[0].save.dtype",
        {"dtype": dtype, "save_dtype": saved},
        f"LoRA saved as {spec.training.save_precision}",
        differs,
    )


def _memory(train: Mapping[str, Any], model: Mapping[str, Any]) -> RecipeItem:
    found: list[str] = []
    if train.get("gradient_checkpointing", True):
        found.append("gradient checkpointing")
    if model.get("quantize"):
        found.append(f"base quantised ({model.get('qtype', 'qfloat8')})")
    if model.get("quantize_te"):
        found.append(f"text encoder quantised ({model.get('qtype_te', 'qfloat8')})")
    if model.get("low_vram"):
        found.append("low_vram")
    if model.get("layer_offloading"):
        found.append(
            f"layer offloading ({model.get('layer_offloading_transformer_percent', 1.0):g} of "
            f"the transformer, {model.get('layer_offloading_text_encoder_percent', 1.0):g} of "
            "the text encoder)"
        )
    if train.get("cache_text_embeddings"):
        found.append("text embeddings cached (the encoder freed)")
    if train.get("unload_text_encoder"):
        found.append("text encoder unloaded (captions ignored)")
    return RecipeItem(
        "memory",
        ", ".join(found) or "no memory aid",
        f"{JOB} process[0].train and process[0].model (backend.config, set by you or the plan)",
        {"aids": found},
    )


def _timesteps(spec: RunSpec, train: Mapping[str, Any]) -> RecipeItem:
    asked = spec.training.timestep_sampling
    written = train.get("timestep_type")
    runs = f"timestep_type {written}" if written else "timestep_type sigmoid (AI-Toolkit's default)"
    runs += "; the model class brings its own noise scheduler"
    differs = None
    if asked is not None and written != asked:
        differs = f"AI-Toolkit samples timesteps by {written or 'sigmoid'}"
    return RecipeItem(
        "timesteps",
        runs,
        f"{JOB} process[0].train.timestep_type",
        {"timestep_type": written},
        None if asked is None else f"timestep_sampling {asked}",
        differs,
    )


def _sampling(process: Mapping[str, Any], source: str | None) -> tuple[RecipeItem, ...]:
    """The sampler settings the job writes (never ``SampleConfig``'s SD 1.5 defaults)."""
    sample = _section(process, "sample")
    if not sample:
        return ()
    items = [i for i in sample.get("samples") or [] if isinstance(i, dict)]
    controls = sum(1 for i in items if i.get("ctrl_img"))
    runs = (
        f"{len(items)} prompt{'s' if len(items) != 1 else ''} every {sample.get('sample_every')} "
        f"steps at {sample.get('width')}×{sample.get('height')}: guidance "
        f"{float(sample.get('guidance_scale', 7)):g}, {sample.get('sample_steps', 20)} steps, "
        + ("negative prompt " + repr(sample["neg"]) if sample.get("neg") else "no negative prompt")
    )
    if controls:
        runs += f", {controls} with a control image"
    where = f"{JOB} process[0].sample: guidance_scale, sample_steps, neg, samples[].ctrl_img"
    return (
        RecipeItem(
            "sampling",
            runs + (f" (as {source})" if source else ""),
            where,
            {
                "guidance_scale": sample.get("guidance_scale"),
                "sample_steps": sample.get("sample_steps"),
                "neg": sample.get("neg"),
                "control_images": controls,
            },
        ),
    )


def _clips(process: Mapping[str, Any]) -> tuple[RecipeItem, ...]:
    """How AI-Toolkit turns each video into a clip of the dataset's frame count."""
    from kura.backends.aitoolkit.compile import CLIP_SAMPLING

    datasets = [d for d in process.get("datasets") or [] if isinstance(d, dict)]
    videos = [d for d in datasets if int(d.get("num_frames", 1)) > 1]
    if not videos:
        return ()
    frames = sorted({int(d["num_frames"]) for d in videos})
    return (
        RecipeItem(
            "clips",
            CLIP_SAMPLING.format(frames=" or ".join(map(str, frames))),
            f"{JOB} process[0].datasets[].num_frames (shrink_video_to_frames unset: on)",
            {"num_frames": frames, "shrink_video_to_frames": True},
        ),
    )
