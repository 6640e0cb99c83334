"""Compile a run for KohakuMoss: two kogine configs and four commands.

``compile_moss`` is pure: from resolved inputs it renders

- ``train.py``: KohakuMoss's own preset stack (``use_config`` of the base, algo, data, VRAM
  and precision layers, paths resolved from the installed package), then Kura's knobs
  (model, data, run layout, recipe, the run's ``backend.config``);
- ``data.py``: ``use_config`` of ``train.py`` plus the cache encoders;

and the four steps, run without a TTY (``NO_COLOR``, never ``FORCE_COLOR``, so the step
lines reach ``log.txt``): ``inspect`` (``inspect_data.py``), ``cache_text``,
``cache_latents`` and ``train`` (``kogine run scripts/train/moss.py``).

With run.yaml ``validation`` datasets, ``train.py`` also sets ``VALIDATE_EVERY`` and
``VALIDATION`` (``kura.backends.kohakumoss.validation``), and a third config,
``val_data.py`` (``use_config`` of ``data.py`` over the validation datasets, no text dropout:
what KohakuMoss's ``validation_data_config`` reads), feeds two more cache steps,
``cache_val_text`` and ``cache_val_latents``, before ``train``: the base layer's caches are
offline, so the held-out items need their entries too (same ``CACHE_DIR``; the keys are
content hashes). The validation datasets are never in ``DATASETS``.

The data are read where the dataset lives, through KohakuMoss's ``folder`` source (a row
weight of the dataset's repeats, which is what the kohya source makes of ``<repeats>_``
folders), and every cache goes to ``CACHE_DIR`` under the run, never into the dataset.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from kura.backends.kohakumoss.configfile import DATA_SCRIPTS, TRAIN_SCRIPT, render_config
from kura.backends.kohakumoss.env import EnvLocation
from kura.backends.kohakumoss.knobs import KnobValue, MossRecipe, check_knobs, recipe_knobs
from kura.backends.kohakumoss.queries import LayerStack, MossArch
from kura.backends.kohakumoss.validation import MossValidationSettings
from kura.errors import InvalidInput, Unsupported

__all__ = [
    "COMPILED_DIR",
    "KURA_OWNED",
    "SIDECARS",
    "MossCompileInputs",
    "MossCompiled",
    "MossDataset",
    "MossModel",
    "MossStep",
    "compile_moss",
    "resume_step",
]

COMPILED_DIR = "compiled/kohakumoss"
SIDECARS = (".txt", ".caption", ".json")
"""Caption sidecars KohakuMoss's folder source reads."""

KURA_OWNED = frozenset(
    {
        "WEIGHTS",
        "VARIANT",
        "ARCH_OVERRIDES",
        "TEXT_ENCODER",
        "VAE",
        "DATASETS",
        "RUN_NAME",
        "OUTPUT_DIR",
        "CACHE_DIR",
        "RESUME",
        "LR",
        "STEPS",
        "DIM",
        "ALPHA",
        "SEED",
        "SAVE_EVERY",
        "SAMPLE_EVERY",
        "SAMPLE_PROMPTS",
        "VALIDATE_EVERY",
        "VALIDATION",
    }
)
"""Knobs Kura writes from run.yaml's model, datasets and training sections; setting one
in ``backend.config`` is refused (it names the run.yaml key to use instead)."""

StepName = Literal[
    "inspect", "cache_text", "cache_latents", "cache_val_text", "cache_val_latents", "train"
]


@dataclass(frozen=True)
class MossDataset:
    """One Kura dataset, where it lives."""

    name: str
    media_dir: Path
    caption_ext: str
    repeats: int
    trigger: str | None = None


@dataclass(frozen=True)
class MossModel:
    """``root``: a pipeline root (transformer/, text_encoder/ + tokenizer/, vae/) or one DiT
    file; ``text_encoder``/``vae`` when given per role. ``arch`` is read from the headers."""

    root: Path
    arch: MossArch
    variant: Literal["base", "sft"] = "base"
    text_encoder: Path | None = None
    vae: Path | None = None


@dataclass(frozen=True)
class MossCompileInputs:
    run_id: str
    run_dir: Path
    env: EnvLocation
    stack: LayerStack
    model: MossModel
    datasets: tuple[MossDataset, ...]
    recipe: MossRecipe
    knob_types: Mapping[str, str]
    overrides: Mapping[str, KnobValue] = field(default_factory=dict)
    device: Literal["cpu", "cuda"] = "cuda"
    cache_dir: Path | None = None
    caption_style: Literal["tags", "nl"] = "tags"
    validation: tuple[MossDataset, ...] = ()
    """Held-out datasets (run.yaml ``validation``): scored, never trained on."""
    validation_settings: MossValidationSettings | None = None
    """Required with ``validation``: the cadence and the fixed-noise settings."""


@dataclass(frozen=True)
class MossStep:
    """One process: an argv list (never a shell string), its environment and cwd."""

    name: StepName
    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: Path


@dataclass(frozen=True)
class MossCompiled:
    """The files (relative to the run folder → text) and the steps, in order."""

    files: Mapping[str, str]
    steps: tuple[MossStep, ...]
    train_config: Path
    data_config: Path
    output_dir: Path
    cache_dir: Path
    knobs: Mapping[str, KnobValue]
    vram_layer: str
    validation: MossValidationSettings | None = None


def _datasets(
    datasets: tuple[MossDataset, ...], caption_style: Literal["tags", "nl"]
) -> list[KnobValue]:
    """KohakuMoss ``folder`` source entries, one per dataset (a row weight of its repeats)."""
    entries: list[KnobValue] = []
    for ds in datasets:
        if ds.caption_ext not in SIDECARS:
            raise Unsupported(
                f"dataset {ds.name}: KohakuMoss reads captions from {', '.join(SIDECARS)} "
                f"sidecars, not {ds.caption_ext}",
                hint=f"rename the captions to .txt, or `kura dataset add {ds.name} PATH "
                "--caption-ext .txt` from a copy that has them",
                path=ds.media_dir,
            )
        entries.append(
            {
                "source": "folder",
                "path": ds.media_dir.as_posix(),
                "txt_as": caption_style,
                "weight": float(ds.repeats),
            }
        )
    return entries


def _train_knobs(inputs: MossCompileInputs) -> dict[str, KnobValue]:
    model, run_dir = inputs.model, inputs.run_dir
    cache = inputs.cache_dir or run_dir / "cache"
    knobs: dict[str, KnobValue] = {
        "WEIGHTS": model.root.as_posix(),
        "VARIANT": model.variant,
        "DATASETS": _datasets(inputs.datasets, inputs.caption_style),
        "RUN_NAME": inputs.run_id,
        "OUTPUT_DIR": (run_dir / "output").as_posix(),
        "CACHE_DIR": cache.as_posix(),
        **recipe_knobs(inputs.recipe),
    }
    if not model.arch.is_named:
        knobs["ARCH_OVERRIDES"] = dict(model.arch.overrides())
    if model.text_encoder is not None:
        knobs["TEXT_ENCODER"] = model.text_encoder.as_posix()
    if model.vae is not None:
        knobs["VAE"] = model.vae.as_posix()
    if not inputs.recipe.sample_prompts:
        knobs["SAMPLE_EVERY"] = 0
    knobs.update(_validation_knobs(inputs))
    if any(ds.trigger for ds in inputs.datasets) and inputs.caption_style == "tags":
        # The trigger opens each caption: keep that tag first when tags are shuffled.
        knobs["CAPTION"] = {
            "template": "tags",
            "keep": ["artist"],
            "keep_first": 1,
            "shuffle": True,
            "tag_dropout": 0.1,
            "underscores": True,
            "unescape": True,
        }
    return knobs


def _validation_knobs(inputs: MossCompileInputs) -> dict[str, KnobValue]:
    """``VALIDATE_EVERY`` and ``VALIDATION`` (every key written, defaults included, so the
    config says what KohakuMoss will do)."""
    settings = inputs.validation_settings
    if not inputs.validation:
        if settings is not None:
            raise InvalidInput(
                "validation settings without validation datasets",
                hint="list the held-out datasets under run.yaml `validation:`",
            )
        return {}
    if settings is None:
        raise InvalidInput(
            "validation datasets without a validation cadence",
            hint="compile through the KohakuMoss backend (it sets VALIDATE_EVERY)",
        )
    trained = {ds.media_dir.resolve(): ds.name for ds in inputs.datasets}
    for ds in inputs.validation:
        if ds.media_dir.resolve() in trained:
            raise InvalidInput(
                f"validation dataset {ds.name} is the folder training dataset "
                f"{trained[ds.media_dir.resolve()]} reads ({ds.media_dir}): its loss would "
                "not be held out",
                hint="hold out items in a dataset of their own (a sweep carves one), or "
                "remove it from run.yaml `validation`",
                path=ds.media_dir,
            )
    return {
        "VALIDATE_EVERY": settings.every,
        "VALIDATION": {
            "datasets": _datasets(inputs.validation, inputs.caption_style),
            "sigmas": list(settings.sigmas),
            "seed": settings.seed,
            "batches": settings.batches,
        },
    }


def compile_moss(inputs: MossCompileInputs) -> MossCompiled:
    """Render the configs and the steps (pure: nothing is written or run)."""
    owned = sorted(set(inputs.overrides) & KURA_OWNED)
    if owned:
        raise InvalidInput(
            f"backend.config sets {', '.join(owned)}, which Kura writes from run.yaml",
            hint="set the model under model.root/model.paths, the data under datasets, and "
            "LR/STEPS/DIM/ALPHA/SEED/SAVE_EVERY/SAMPLE_* under training",
        )
    check_knobs(inputs.overrides, inputs.knob_types, where="run.yaml backend.config")
    knobs = {**_train_knobs(inputs), **inputs.overrides}
    check_knobs(knobs, inputs.knob_types, where="the compiled KohakuMoss config")
    compiled = inputs.run_dir / COMPILED_DIR
    train_path, data_path = compiled / "train.py", compiled / "data.py"
    title = (
        f"Kura run {inputs.run_id}: {inputs.stack.layers[1].stem.removeprefix('algo_')} on the "
        f"vram_{inputs.stack.vram_layer} layer."
    )
    train = render_config(title, (TRAIN_SCRIPT,), inputs.stack.layers, knobs)
    te_path = (inputs.model.text_encoder or inputs.model.root).as_posix()
    vae_path = (inputs.model.vae or inputs.model.root).as_posix()
    data_knobs: dict[str, KnobValue] = {
        "TEXT_ENCODER": "kohakumoss.encoders.text_encoder",
        "TEXT_ENCODER_KWARGS": {"path": te_path, "device": inputs.device},
        "IMAGE_ENCODER": "kohakumoss.encoders.vae_encoder",
        "IMAGE_ENCODER_KWARGS": {"path": vae_path, "device": inputs.device},
    }
    data = render_config(
        f"Kura run {inputs.run_id}: the train config's data knobs plus the cache encoders.",
        DATA_SCRIPTS,
        (train_path,),
        data_knobs,
    )
    kogine = str(inputs.env.tool("kogine"))
    env = {"NO_COLOR": "1", "PYTHONUNBUFFERED": "1"}
    scripts = inputs.stack.data_scripts
    data_steps: tuple[tuple[StepName, str], ...] = (
        ("inspect", "inspect_data"),
        ("cache_text", "cache_text"),
        ("cache_latents", "cache_latents"),
    )
    files = {f"{COMPILED_DIR}/train.py": train, f"{COMPILED_DIR}/data.py": data}
    configs: dict[str, Path] = dict.fromkeys((n for n, _ in data_steps), data_path)
    if inputs.validation:
        val_path = compiled / "val_data.py"
        files[f"{COMPILED_DIR}/val_data.py"] = render_config(
            f"Kura run {inputs.run_id}: the data config over the held-out validation "
            "datasets (cached, never trained on).",
            DATA_SCRIPTS[1:],
            (data_path,),
            {
                "DATASETS": _datasets(inputs.validation, inputs.caption_style),
                "TEXT_DROP": 0.0,
            },
        )
        data_steps += (("cache_val_text", "cache_text"), ("cache_val_latents", "cache_latents"))
        configs |= {"cache_val_text": val_path, "cache_val_latents": val_path}
    steps = (
        *(
            MossStep(
                name,
                (kogine, "run", str(scripts[script]), "--config", str(configs[name])),
                env,
                inputs.run_dir,
            )
            for name, script in data_steps
        ),
        MossStep(
            "train",
            (kogine, "run", str(inputs.stack.train_script), "--config", str(train_path)),
            env,
            inputs.run_dir,
        ),
    )
    return MossCompiled(
        files=files,
        steps=steps,
        train_config=train_path,
        data_config=data_path,
        output_dir=inputs.run_dir / "output" / inputs.run_id,
        cache_dir=inputs.cache_dir or inputs.run_dir / "cache",
        knobs=knobs,
        vram_layer=inputs.stack.vram_layer,
        validation=inputs.validation_settings if inputs.validation else None,
    )


def resume_step(train: MossStep) -> MossStep:
    """The approved train step continuing from its last periodic checkpoint."""
    if train.name != "train":
        raise ValueError(f"resume applies to the train step, not {train.name}")
    return MossStep("train", (*train.argv, "--set", "RESUME=latest"), train.env, train.cwd)
