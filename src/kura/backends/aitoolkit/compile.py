"""RunSpec + resolved inputs → AI-Toolkit's job file and the steps that run it (pure).

Layout of one run (``runs/<id>/``):

- ``compiled/aitk-job.yaml`` — the job (:mod:`.schema`), ``config.name`` = the run id;
- ``data/<dataset>/`` — per-file links to the dataset's media, captions and controls, made
  by the ``prepare`` step: AI-Toolkit writes ``_latent_cache/``, ``_t_e_cache/`` and
  ``.aitk_size.json`` next to the images it reads (``toolkit/dataloader_mixins.py``,
  ``toolkit/data_loader.py``), so it reads the run's own link folder and the user's
  dataset stays untouched (and may be read-only);
- ``output/`` — ``save_root`` (``training_folder`` = the run folder, process ``name`` =
  ``output``): ``<id>_<step:09d>.safetensors``, ``<id>.safetensors``, ``samples/``,
  ``loss_log.db``, ``optimizer.pt``.

AI-Toolkit resumes by itself whenever ``output/`` holds a ``<id>*.safetensors``: a run's
name is its own id, so two runs never share a checkpoint, and a relaunch of the same run
continues (said in the compile warnings).
"""

from __future__ import annotations

import ast
import math
import posixpath
from collections.abc import Sequence

from kura.backends.aitoolkit.archs import AITK_RELEASE, AitkModel, bundles_for, model_for
from kura.backends.aitoolkit.buckets import bucket_resolution
from kura.backends.aitoolkit.knobs import Knobs, read_knobs
from kura.backends.aitoolkit.samples import sample_prompts
from kura.backends.aitoolkit.schema import (
    DatasetSection,
    JobConfig,
    JobFile,
    LoggingSection,
    ModelSection,
    NetworkSection,
    ProcessSection,
    SampleItem,
    SampleSection,
    SaveSection,
    TrainSection,
    job_document,
)
from kura.backends.aitoolkit.yamlout import dump_job
from kura.backends.base import CompiledRun, CompileInputs, ContainerSpec, DatasetInput, Step
from kura.errors import SpecError, Unsupported
from kura.schema.run import DatasetUse, RunSpec

__all__ = [
    "JOB_FILE",
    "LINKS_FILE",
    "OPTIMIZERS",
    "SCHEDULERS",
    "TIMESTEP_TYPES",
    "check_run",
    "compile_run",
    "effective_scale",
    "job_for",
    "total_steps",
]

JOB_FILE = "aitk-job.yaml"
LINKS_FILE = "aitk_links.py"
OUTPUT_NAME = "output"
DATA_DIR = "data"

OPTIMIZERS = (
    "adamw",
    "adam",
    "adamw8bit",
    "adam8bit",
    "lion8bit",
    "ademamix8bit",
    "adamw8",
    "adam8",
    "lion",
    "adagrad",
    "adafactor",
    "prodigy",
    "prodigy8bit",
    "automagic",
)
"""``toolkit/optimizer.py::get_optimizer`` names."""
SCHEDULERS = (
    "constant",
    "cosine",
    "cosine_with_restarts",
    "linear",
    "step",
    "constant_with_warmup",
)
"""``toolkit/scheduler.py::get_lr_scheduler`` names Kura writes."""
TIMESTEP_TYPES = ("sigmoid", "linear", "lognorm_blend", "weighted", "shift")
"""``TrainConfig.timestep_type`` values the flow-matching schedulers use."""
SAVE_DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bf16"}

LINKS_SCRIPT = '''"""Kura: link dataset folders file by file into the run.

AI-Toolkit writes its caches next to the files it reads: it reads these links, never the
user's folder."""
import os
import sys

pairs = sys.argv[1:]
for source, target in zip(pairs[::2], pairs[1::2]):
    count = 0
    for root, dirs, files in os.walk(source):
        dirs[:] = sorted(d for d in dirs if not d.startswith(("_latent_cache", "_t_e_cache", ".")))
        here = os.path.normpath(os.path.join(target, os.path.relpath(root, source)))
        os.makedirs(here, exist_ok=True)
        for name in sorted(files):
            if name.startswith("."):
                continue
            link, want = os.path.join(here, name), os.path.join(root, name)
            if os.path.islink(link) and os.readlink(link) == want:
                continue
            if os.path.lexists(link):
                os.unlink(link)
            os.symlink(want, link)
            count += 1
    print(f"kura: linked {count} files of {source} into {target}", flush=True)
'''


def compile_run(spec: RunSpec, inputs: CompileInputs) -> CompiledRun:
    if inputs.validation:
        raise Unsupported(
            "Kura does not compile validation datasets for AI-Toolkit, so it would report no "
            f"held-out loss (run.yaml validation: {', '.join(d.name for d in inputs.validation)})",
            hint="remove `validation` from run.yaml; a sweep on AI-Toolkit scores by "
            "`objective.metric: train_loss` (with a judge)",
        )
    job, warnings = job_for(spec, inputs)
    files = {JOB_FILE: dump_job(job_document(job)), LINKS_FILE: LINKS_SCRIPT}
    return CompiledRun(
        backend="ai-toolkit",
        release=AITK_RELEASE,
        files=files,
        steps=_steps(spec, inputs),
        container=_container(spec, inputs),
        warnings=tuple(warnings),
    )


def _model(bundle: str | None, architecture: str) -> AitkModel:
    model = model_for(bundle or "")
    if model is None:
        raise SpecError(
            f"bundle {bundle or '(none)'} is not an AI-Toolkit bundle: it is laid out for "
            "another trainer, and AI-Toolkit loads its own model layout",
            hint=_bundle_hint(bundle, architecture),
        )
    return model


def _bundle_hint(bundle: str | None, architecture: str) -> str:
    """The AI-Toolkit bundle of the same model (``aitk-`` + the other trainer's id), else
    every AI-Toolkit bundle of the architecture."""
    same = model_for(f"aitk-{bundle}") if bundle else None
    if same is not None:
        return f"set model.base to {same.bundle} (the AI-Toolkit bundle of the same model)"
    others = bundles_for(architecture)
    if not others:
        return f"AI-Toolkit has no bundle of {architecture} in Kura"
    return (
        f"set model.base to {' or '.join(others)} (the AI-Toolkit bundle"
        f"{'s' if len(others) > 1 else ''} of {architecture})"
    )


def check_run(spec: RunSpec, bundle: str | None, architecture: str) -> AitkModel:
    """Every rule of compile that needs only run.yaml and the bundle: compile applies them
    first, and ``kura run new`` (the backend's ``check_settings``) applies the same ones, so
    a draft compile would refuse is refused before it is written."""
    model = _model(bundle, architecture)
    knobs = read_knobs(spec.backend.config)
    _check_gpus(spec)
    _accumulation(spec, knobs)
    _network(spec, model, knobs, [])
    _check_training(spec)
    _check_text_encoder(model, knobs)
    _check_sampling(spec, model, knobs)
    _check_model_knobs(model, knobs)
    for use in spec.datasets:
        bucket_resolution(use)
        _check_clip_settings(use)
        _check_control_settings(use)
    sample_prompts(spec, model)
    return model


def _check_gpus(spec: RunSpec) -> None:
    if spec.execution.gpus != 1:
        raise Unsupported(
            "Kura launches AI-Toolkit on one GPU (as its UI does)",
            hint="set execution.gpus: 1",
        )


def _accumulation(spec: RunSpec, knobs: Knobs) -> int:
    effective, micro = spec.training.effective_batch, knobs.batch_size
    if effective % micro:
        raise SpecError(
            f"training.effective_batch {effective} is not a multiple of "
            f"backend.config.batch_size {micro}",
            hint="the micro-batch × gradient accumulation must equal the effective batch",
        )
    return effective // micro


def job_for(spec: RunSpec, inputs: CompileInputs) -> tuple[JobFile, list[str]]:
    """The typed job and what the person must know about it."""
    model = check_run(spec, inputs.bundle, inputs.architecture)
    knobs = read_knobs(spec.backend.config)
    warnings: list[str] = []
    training = spec.training
    micro = knobs.batch_size
    accumulation = _accumulation(spec, knobs)
    steps_per_epoch = epoch_steps(spec, inputs)
    steps = total_steps(spec, steps_per_epoch)
    if training.max_steps is not None and training.epochs is not None:
        warnings.append(
            f"training.max_steps {training.max_steps} sets the length; training.epochs "
            f"{training.epochs} is not used (AI-Toolkit counts steps)"
        )
    network = _network(spec, model, knobs, warnings)
    datasets = [
        _dataset(use, source, model, knobs, inputs.run_dir)
        for use, source in zip(spec.datasets, inputs.datasets, strict=True)
    ]
    save_every = knobs.save_every_steps or _epochs_to_steps(
        training.save_every_n_epochs, steps_per_epoch, "save_every_n_epochs", steps
    )
    sample = _sample(spec, model, knobs, steps_per_epoch, steps, datasets)
    trigger = _trigger_word(inputs.datasets) if knobs.unload_text_encoder else None
    if knobs.unload_text_encoder:
        warnings.append(_unload_warning(trigger))
    warnings += _clip_warnings(datasets)
    warnings.append(
        f"AI-Toolkit resumes by itself from the newest {spec.id}*.safetensors in "
        f"{inputs.run_dir}/{OUTPUT_NAME}: relaunching this run continues it, it does not "
        "restart (a new run gets a new name and folder)"
    )
    job = JobFile(
        job="extension",
        config=JobConfig(
            name=spec.id,
            process=[
                ProcessSection(
                    type="diffusion_trainer",
                    name=OUTPUT_NAME,
                    training_folder=inputs.run_dir,
                    training_seed=training.seed,
                    trigger_word=trigger,
                    network=network,
                    save=SaveSection(
                        dtype=SAVE_DTYPES[training.save_precision],  # type: ignore[arg-type]
                        save_every=save_every,
                        max_step_saves_to_keep=max(1, math.ceil(steps / save_every)),
                    ),
                    datasets=datasets,
                    train=_train(spec, knobs, steps, micro, accumulation, sample is not None),
                    model=_model_section(model, knobs, inputs, warnings),
                    sample=sample,
                    logging=LoggingSection(log_every=1, use_ui_logger=True),
                ),
            ],
        ),
        meta={"kura_run": spec.id, "kura_bundle": inputs.bundle, "kura_trainer": "ai-toolkit"},
    )
    return job, warnings


def effective_scale(rank: int, alpha: float, peft: bool) -> float:
    """The LoRA scale AI-Toolkit trains with: alpha / rank, where PEFT format has alpha = rank
    (LoRA, DoRA and LoKr alike, ``toolkit/lora_special.py:422-433``)."""
    return 1.0 if peft else alpha / rank


def _check_text_encoder(model: AitkModel, knobs: Knobs) -> None:
    if knobs.unload_text_encoder and model.refuses_unload_text_encoder:
        raise Unsupported(
            f"AI-Toolkit refuses unload_text_encoder for {model.arch} (control images go "
            "through the text encoder)",
            hint="use backend.config.cache_text_embeddings: true instead",
        )


def _check_sampling(spec: RunSpec, model: AitkModel, knobs: Knobs) -> None:
    caching = knobs.cache_text_embeddings
    if spec.training.sample_prompts and caching and not model.samples_after_caching:
        raise Unsupported(
            f"AI-Toolkit's {model.arch} cannot sample once cache_text_embeddings has "
            "unloaded its text encoders: it swaps them for FakeTextEncoder "
            "(toolkit/unloader.py:54-60) and diffusers' SDXL pipeline reads "
            "text_encoder_2.config (pipeline_stable_diffusion_xl.py:1128), so the run "
            "stops at its first sample",
            hint="set backend.config.cache_text_embeddings: false (the encoders stay "
            "loaded), or remove training.sample_prompts",
        )


def _trigger_word(datasets: Sequence[DatasetInput]) -> str | None:
    """The one trigger word of the datasets (their intent's), which unload_text_encoder
    trains on; None when none is known. Two different ones cannot both be that prompt."""
    triggers = sorted({source.trigger for source in datasets if source.trigger})
    if len(triggers) > 1:
        raise Unsupported(
            f"unload_text_encoder trains every step on one prompt, the trigger word, and the "
            f"datasets have {len(triggers)}: {', '.join(triggers)}",
            hint="use backend.config.cache_text_embeddings: true (each caption is kept), or "
            "train one trigger per run",
        )
    return triggers[0] if triggers else None


def _unload_warning(trigger: str | None) -> str:
    """What unload_text_encoder trains on: AI-Toolkit encodes the blank prompt and the
    process's trigger_word once (``extensions_built_in/sd_trainer/SDTrainer.py:351-360``) and
    then conditions every step on the trigger word's embedding, or on the blank prompt's
    without one (``SDTrainer.py:1671-1687``)."""
    if trigger is not None:
        conditioned = (
            f"trains every step on the trigger word {trigger!r} alone (written as trigger_word)"
        )
    else:
        conditioned = (
            "trains every step on the blank prompt (no dataset records a trigger word): the "
            "LoRA acts without any word in the prompt"
        )
    return (
        f"unload_text_encoder: AI-Toolkit {conditioned}: EVERY CAPTION IS IGNORED "
        "(SDTrainer.py:1671-1687); use cache_text_embeddings to keep the captions"
    )


def _network(spec: RunSpec, model: AitkModel, knobs: Knobs, warnings: list[str]) -> NetworkSection:
    recipe = spec.training.network
    if recipe.args:
        raise Unsupported(
            f"training.network.args {recipe.args} are Musubi network arguments; AI-Toolkit "
            "has no such flags",
            hint="remove training.network.args for backend ai-toolkit",
        )
    if recipe.module is not None:
        raise Unsupported(
            f"training.network.module {recipe.module!r} names a Musubi module",
            hint="remove it; the AI-Toolkit network type is backend.config.network_type",
        )
    if model.peft and recipe.alpha != recipe.rank:
        warnings.append(
            f"{model.arch} trains in PEFT format, which ignores linear_alpha (alpha = rank): "
            f"training.network.alpha {recipe.alpha:g} is not used; the effective scale is "
            f"1.0, not {recipe.alpha / recipe.rank:g} (alpha/rank)"
        )
    if knobs.network_type == "locon" and not model.locon:
        raise Unsupported(
            f"network_type locon trains nothing on {model.arch}: AI-Toolkit's LoCon network "
            "wraps only the UNet block classes of SD/SDXL (toolkit/lycoris_special.py:117-122, "
            f"matched by class name at :236-237), and {model.arch}'s model is a transformer "
            "with none of them, so it would build zero modules",
            hint="set backend.config.network_type to lora (or lokr / dora)",
        )
    lokr = knobs.network_type == "lokr"
    if lokr:
        warnings.append(
            "LoKr: Kura writes lokr_full_rank: false so training.network.rank shapes the factors "
            "(AI-Toolkit's default full rank ignores the rank)"
        )
    return NetworkSection(
        type=knobs.network_type,
        linear=recipe.rank,
        linear_alpha=None if model.peft else float(recipe.alpha),
        lokr_full_rank=False if lokr else None,
    )


def epoch_steps(spec: RunSpec, inputs: CompileInputs) -> int | None:
    """The steps one epoch makes as AI-Toolkit batches it: each bucket of each dataset cut
    into micro-batches (a short one padded), each step drawing ``gradient_accumulation``
    of them (:mod:`.buckets`)."""
    from kura.backends.aitoolkit.buckets import batches_countable, run_buckets, steps_per_epoch

    micro = read_knobs(spec.backend.config).batch_size
    if spec.training.max_steps is not None and not all(
        batches_countable(s, micro) for s in inputs.datasets
    ):
        return None  # max_steps sets the length; an epoch-based setting says it cannot
    batches = sum(found.batches for found in run_buckets(spec, inputs.datasets))
    return steps_per_epoch(batches, max(1, spec.training.effective_batch // micro))


def total_steps(spec: RunSpec, steps_per_epoch: int | None) -> int:
    """AI-Toolkit counts optimizer steps, not epochs: max_steps, or epochs × steps/epoch."""
    if spec.training.max_steps is not None:
        return spec.training.max_steps
    assert spec.training.epochs is not None  # the run schema requires one of them
    if steps_per_epoch is None:
        raise SpecError("training.epochs needs the datasets' item counts", hint="set max_steps")
    return spec.training.epochs * steps_per_epoch


def _epochs_to_steps(epochs: int, steps_per_epoch: int | None, key: str, total: int) -> int:
    if steps_per_epoch is None:
        raise SpecError(
            f"training.{key} cannot become steps: the datasets' item counts are unknown",
            hint="inspect the datasets, or set backend.config.save_every_steps / "
            "sample_every_steps",
        )
    return min(total, epochs * steps_per_epoch)


CLIP_SAMPLING = (
    "AI-Toolkit takes one clip of {frames} frames from each video per epoch, spread evenly "
    "over the whole video (DatasetConfig.shrink_video_to_frames, on by default, "
    "toolkit/dataloader_mixins.py:563-566): a long video's motion is sped up to fit"
)
"""How AI-Toolkit makes a clip of ``num_frames`` from a video (the plan says it)."""


def _check_clip_settings(use: DatasetUse) -> None:
    """Musubi's ways of cutting clips have no AI-Toolkit key: it takes one clip a video."""
    for key in ("frame_extraction", "frame_stride", "frame_sample", "max_frames"):
        value = getattr(use, key)
        if value is not None:
            raise Unsupported(
                f"dataset {use.name}: {key} {value} has no AI-Toolkit equivalent: "
                + CLIP_SAMPLING.format(frames="datasets[].frames"),
                hint=f"remove datasets[].{key} for backend ai-toolkit (trim the videos to the "
                "span you want instead)",
            )


def _check_control_settings(use: DatasetUse) -> None:
    """AI-Toolkit scales and crops each control image to its target image's bucket
    (``toolkit/dataloader_mixins.py:1187-1196``): no control size of its own."""
    why = (
        "AI-Toolkit scales and crops every control image to its target image's bucket "
        "(toolkit/dataloader_mixins.py:1187-1196)"
    )
    if use.control_resolution is not None:
        raise Unsupported(
            f"dataset {use.name}: control_resolution {use.control_resolution} has no "
            f"AI-Toolkit equivalent: {why}",
            hint="remove datasets[].control_resolution for backend ai-toolkit",
        )
    if use.no_resize_control:
        raise Unsupported(
            f"dataset {use.name}: no_resize_control has no AI-Toolkit equivalent: {why}",
            hint="remove datasets[].no_resize_control for backend ai-toolkit",
        )


def _clip_warnings(datasets: Sequence[DatasetSection]) -> list[str]:
    return [
        f"dataset {posixpath.basename(d.folder_path)}: " + CLIP_SAMPLING.format(frames=d.num_frames)
        for d in datasets
        if d.num_frames is not None and d.num_frames > 1
    ]


def _dataset(
    use: DatasetUse, source: DatasetInput, model: AitkModel, knobs: Knobs, run_dir: str
) -> DatasetSection:
    if model.control and source.control_dir is None:
        raise SpecError(
            f"dataset {use.name}: {model.arch} trains on edit pairs and this dataset has no "
            "control folder",
            hint="set `control:` in the dataset's dataset.yaml",
        )
    video = source.kind == "video"
    if video and not model.video:
        raise Unsupported(f"dataset {use.name} holds videos; {model.arch} trains on images")
    frames = None
    if video:
        if not use.frames or len(use.frames) != 1:
            raise SpecError(
                f"dataset {use.name}: AI-Toolkit takes one frame count per dataset",
                hint="set datasets[].frames to one value, e.g. [33]",
            )
        frames = use.frames[0]
    return DatasetSection(
        folder_path=_link_dir(run_dir, source.name),
        caption_ext=source.caption_ext,
        resolution=bucket_resolution(use),
        num_repeats=use.repeats,
        cache_latents_to_disk=True,
        cache_text_embeddings=True if knobs.cache_text_embeddings else None,
        control_path=_link_dir(run_dir, source.name + ".control") if source.control_dir else None,
        num_frames=frames,
        fps=round(source.source_fps) if video and source.source_fps else None,
    )


def _train(
    spec: RunSpec, knobs: Knobs, steps: int, micro: int, accumulation: int, sampling: bool
) -> TrainSection:
    training = spec.training
    scheduler, params = _scheduler(spec)
    return TrainSection(
        steps=steps,
        batch_size=micro,
        gradient_accumulation=accumulation,
        lr=float(training.learning_rate),
        optimizer=_optimizer(spec),
        optimizer_params=_optimizer_params(training.optimizer_args) or None,
        lr_scheduler=scheduler,
        lr_scheduler_params=params,
        dtype=knobs.dtype,
        gradient_checkpointing=knobs.gradient_checkpointing,
        cache_text_embeddings=True if knobs.cache_text_embeddings else None,
        unload_text_encoder=True if knobs.unload_text_encoder else None,
        timestep_type=_timestep_type(spec),
        max_grad_norm=training.max_grad_norm,
        skip_first_sample=not training.sample_at_first,
        disable_sampling=not sampling,
    )


def _check_training(spec: RunSpec) -> None:
    """The training section's refusals (each builder below raises its own)."""
    _optimizer(spec)
    _optimizer_params(spec.training.optimizer_args)
    _scheduler(spec)
    _timestep_type(spec)
    training = spec.training
    for key in (
        "discrete_flow_shift",
        "weighting_scheme",
        "min_timestep",
        "max_timestep",
        "timestep_boundary",
    ):
        if getattr(training, key) is not None:
            raise Unsupported(
                f"training.{key} has no AI-Toolkit equivalent (its model classes bring their "
                "own schedulers)",
                hint=f"remove training.{key} for backend ai-toolkit",
            )
    if training.preserve_distribution_shape:
        raise Unsupported("training.preserve_distribution_shape has no AI-Toolkit equivalent")


def _optimizer(spec: RunSpec) -> str:
    optimizer = spec.training.optimizer.lower()
    if optimizer not in OPTIMIZERS:
        raise Unsupported(
            f"training.optimizer {spec.training.optimizer!r} is not an AI-Toolkit optimizer",
            hint=f"choose one of {', '.join(OPTIMIZERS)}",
        )
    return optimizer


def _scheduler(spec: RunSpec) -> tuple[str, dict[str, object] | None]:
    training = spec.training
    scheduler = training.scheduler
    params: dict[str, object] | None = None
    if training.warmup_steps:
        if scheduler not in ("constant", "constant_with_warmup"):
            raise Unsupported(
                f"AI-Toolkit warms up only with constant_with_warmup, not {scheduler}",
                hint="set training.warmup_steps: 0 or training.scheduler: constant",
            )
        scheduler, params = "constant_with_warmup", {"num_warmup_steps": training.warmup_steps}
    if scheduler not in SCHEDULERS:
        raise Unsupported(
            f"training.scheduler {scheduler!r} is not an AI-Toolkit scheduler",
            hint=f"choose one of {', '.join(SCHEDULERS)}",
        )
    return scheduler, params


def _timestep_type(spec: RunSpec) -> str | None:
    timestep = spec.training.timestep_sampling
    if timestep is not None and timestep not in TIMESTEP_TYPES:
        raise Unsupported(
            f"training.timestep_sampling {timestep!r} has no AI-Toolkit timestep_type",
            hint=f"choose one of {', '.join(TIMESTEP_TYPES)} or leave it unset",
        )
    return timestep


def _optimizer_params(args: Sequence[str]) -> dict[str, object]:
    """``key=value`` entries as the keyword arguments AI-Toolkit passes to the optimizer's
    constructor unchanged (``toolkit/optimizer.py``, ``**optimizer_params``): each value a
    Python literal, read as Musubi reads its ``--optimizer_args`` (``betas=0.9,0.99`` or
    ``betas=(0.9,0.99)`` is a pair of numbers, written as a YAML list, never the text)."""
    params: dict[str, object] = {}
    for arg in args:
        key, sep, raw = arg.partition("=")
        if not sep or not key.strip().isidentifier():
            raise SpecError(
                f"training.optimizer_args entry {arg!r} is not key=value",
                hint="e.g. weight_decay=0.01",
            )
        params[key.strip()] = _literal(arg, raw)
    return params


_LITERAL = (bool, int, float, str, type(None))


def _literal(arg: str, raw: str) -> object:
    """A value of an optimizer argument: a number, a bool, a quoted string, None, or a
    tuple/list of those (a tuple becomes a list, which YAML can write and the optimizers
    index as they index a tuple)."""
    text = raw.strip()
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise SpecError(
            f"training.optimizer_args entry {arg!r}: {text!r} is not a Python literal "
            "(a number, True/False, a quoted string or a tuple of numbers)",
            hint="e.g. betas=0.9,0.99 or decouple=True; quote a text value: name='x'",
        ) from None
    if isinstance(value, (tuple, list)):
        if not all(isinstance(item, _LITERAL) for item in value):
            raise SpecError(
                f"training.optimizer_args entry {arg!r}: a list of lists is not an "
                "optimizer argument Kura writes",
                hint="give a flat tuple, e.g. betas=0.9,0.99",
            )
        return list(value)
    if not isinstance(value, _LITERAL):
        raise SpecError(
            f"training.optimizer_args entry {arg!r}: {type(value).__name__} is not an "
            "optimizer argument Kura writes",
            hint="give a number, True/False, a quoted string or a tuple of numbers",
        )
    return value


def _check_model_knobs(model: AitkModel, knobs: Knobs) -> None:
    """Memory aids the model class honours, and an adapter AI-Toolkit publishes."""
    if knobs.accuracy_recovery_adapter and model.ara.get(knobs.qtype) is None:
        known = ", ".join(f"{q} ({f})" for q, f in model.ara.items()) or "none"
        raise Unsupported(
            f"no accuracy-recovery adapter for {model.arch} at qtype {knobs.qtype}",
            hint=f"adapters AI-Toolkit publishes for it: {known}",
        )
    if (knobs.quantize or knobs.quantize_te) and not model.quantizes:
        raise Unsupported(
            f"{model.arch}'s model class ({model.source}) never quantizes its weights: "
            "quantize / quantize_te would do nothing",
            hint="remove them; use gradient_checkpointing, a smaller micro-batch or a smaller "
            "resolution instead",
        )
    if knobs.layer_offloading and not model.layer_offloading:
        raise Unsupported(
            f"{model.arch}'s model class ({model.source}) ignores layer_offloading",
            hint="use low_vram or quantize instead",
        )


def _model_section(
    model: AitkModel, knobs: Knobs, inputs: CompileInputs, warnings: list[str]
) -> ModelSection:
    try:
        path = inputs.model_paths["dit"]
    except KeyError:
        raise SpecError(
            f"bundle {inputs.bundle} has no dit role", hint="check the bundle"
        ) from None
    qtype: str | None = knobs.qtype if knobs.quantize else None
    qtype_te: str | None = knobs.qtype_te if knobs.quantize_te else None
    if knobs.layer_offloading:
        # ModelConfig rewrites qfloat8 to float8 when layer_offloading is on: write what runs
        qtype = "float8" if qtype == "qfloat8" else qtype
        qtype_te = "float8" if qtype_te == "qfloat8" else qtype_te
    if knobs.accuracy_recovery_adapter:
        qtype = f"{knobs.qtype}|{model.ara[knobs.qtype]}"
    kwargs: dict[str, object] | None = None
    if model.two_experts:
        kwargs = {
            "train_high_noise": knobs.train_high_noise,
            "train_low_noise": knobs.train_low_noise,
        }
    if knobs.layer_offloading:
        warnings.append(
            "layer_offloading picks a random subset of linear layers per run; Kura sets SEED "
            "so the same run offloads the same layers"
        )
    return ModelSection(
        name_or_path=path,
        arch=model.arch,
        quantize=knobs.quantize,
        qtype=qtype,
        quantize_te=knobs.quantize_te,
        qtype_te=qtype_te,
        low_vram=knobs.low_vram,
        layer_offloading=True if knobs.layer_offloading else None,
        layer_offloading_transformer_percent=(
            knobs.layer_offloading_transformer_percent if knobs.layer_offloading else None
        ),
        layer_offloading_text_encoder_percent=(
            knobs.layer_offloading_text_encoder_percent if knobs.layer_offloading else None
        ),
        model_kwargs=kwargs,
    )


def _sample(
    spec: RunSpec,
    model: AitkModel,
    knobs: Knobs,
    steps_per_epoch: int | None,
    steps: int,
    datasets: list[DatasetSection],
) -> SampleSection | None:
    training = spec.training
    if not training.sample_prompts:
        return None
    if knobs.sample_every_steps is not None:
        every = knobs.sample_every_steps
    elif training.sample_every_n_epochs is not None:
        every = _epochs_to_steps(
            training.sample_every_n_epochs, steps_per_epoch, "sample_every_n_epochs", steps
        )
    else:
        every = steps  # sample_at_first only: one more set at the end
    side = datasets[0].resolution
    prompts = sample_prompts(spec, model).prompts
    return SampleSection(
        sample_every=every,
        width=side,
        height=side,
        seed=training.seed,
        walk_seed=False,
        guidance_scale=model.samples.guidance_scale,
        sample_steps=model.samples.sample_steps,
        neg="",
        samples=[SampleItem(prompt=p.prompt, ctrl_img=p.ctrl_img) for p in prompts],
        num_frames=datasets[0].num_frames,
    )


def _link_dir(run_dir: str, name: str) -> str:
    return posixpath.join(run_dir, DATA_DIR, name)


OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def _python(inputs: CompileInputs) -> str:
    """The trainer environment's own interpreter on the host; the image's ``python``."""
    return posixpath.join(inputs.trainer_bin, "python") if inputs.trainer_bin else "python"


def _steps(spec: RunSpec, inputs: CompileInputs) -> tuple[Step, ...]:
    """``prepare`` links the datasets into the run; ``train`` runs ``run.py`` from the
    checkout, writing no bytecode into it (the checkout may be read-only or shared)."""
    compiled = posixpath.join(inputs.run_dir, "compiled")
    links = posixpath.join(compiled, LINKS_FILE)
    python = _python(inputs)
    prepare: list[str] = []
    for source in inputs.datasets:
        prepare += [source.media_dir, _link_dir(inputs.run_dir, source.name)]
        if source.control_dir:
            prepare += [source.control_dir, _link_dir(inputs.run_dir, source.name + ".control")]
    steps = [Step("prepare", (python, links, *prepare), {}, inputs.trainer_dir, kind="prepare")]
    env = {
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "SEED": str(spec.training.seed),
    }
    if read_knobs(spec.backend.config).offline:
        env |= OFFLINE_ENV
    steps.append(
        Step(
            "train",
            (python, "run.py", posixpath.join(compiled, JOB_FILE)),
            env,
            inputs.trainer_dir,
            kind="train",
        )
    )
    return tuple(steps)


def _container(spec: RunSpec, inputs: CompileInputs) -> ContainerSpec:
    from kura.backends.aitoolkit.container import container_spec

    return container_spec(spec, inputs)
