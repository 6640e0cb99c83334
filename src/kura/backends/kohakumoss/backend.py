"""KohakuMoss behind the seam: :class:`KohakuMossBackend` implements ``kura.backends.base.Backend``.

The verbs map onto this package's pieces, and KohakuMoss's own code answers every trainer
question through the helper (``queries``):

- ``prepare`` asks the environment, in one process, for the preset layer paths, the knob
  types and the DiT's shape (``infer_config``): :class:`MossFacts`. ``compile`` (pure) renders
  the two kogine configs and four commands from them; ``check_compiled`` runs KohakuMoss's
  ``config_problems`` on the written files, and a blocking problem fails compile. run.yaml
  ``validation`` datasets become KohakuMoss's ``VALIDATION`` (``validation``), so the run
  reports a held-out ``val_loss`` (``StepProgress.validation_loss``, ``heldout_loss``).
- ``fit``/``estimate`` take KohakuMoss's own estimator over its memory profiles (the one fit
  ladder walks ``MEMORY_PROFILE``: meaning kept) and show its VRAM layers and ``MAX_TOKENS``
  budgets as options that change the batch (never applied), with KohakuMoss's own
  ``inspect_data`` batch/token plan and the estimator's calibration against its README.
- ``progress``/``diagnose``/``resume_arguments``/``outputs`` read what the run wrote under
  ``output/<run id>/`` (``follow``, ``diagnose``); ``export`` verifies the exported keys
  against the DiT and copies the file unchanged (``exportcheck``).

Kura's own ``backend.config`` keys (lower-case, never KohakuMoss knobs): ``vram_layer``
(6g … 24g, auto), ``algo`` (lora, loha, lokr, dora, oft, full) and ``precision`` (bf16,
fp16). Every UPPER_CASE key is a KohakuMoss knob, type-checked before KohakuMoss sees it.
"""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from kura.backends.base import (
    AidChoice,
    AttemptRef,
    Backend,
    CompiledRun,
    CompileInputs,
    Contingency,
    DatasetBuckets,
    Diagnosis,
    DoctorReport,
    DraftedConfig,
    Evaluation,
    FileRules,
    LoraExport,
    LossHistory,
    LossLabels,
    MemoryAid,
    OutputLayout,
    PlanFit,
    PlanInputs,
    ResumeRule,
    SearchKeys,
    Step,
    StepCost,
    StepKind,
    StepProgress,
    TrainerFacts,
    TrainerKnowledge,
    TrainerRecipe,
    TrainerSetup,
)
from kura.backends.standard import StandardBackend
from kura.errors import CheckFailed, SpecError, Unsupported, UsageError

if TYPE_CHECKING:
    from kura.backends.kohakumoss.compile import MossCompiled
    from kura.backends.kohakumoss.env import EnvLocation
    from kura.backends.kohakumoss.queries import (
        CompileFacts,
        MemoryEstimate,
        MossArch,
        PlanAnswer,
    )
    from kura.backends.kohakumoss.steptime import MossStepTime
    from kura.backends.kohakumoss.validation import MossValidationSettings
    from kura.models.bundles import Bundle
    from kura.models.identify import ModelReport
    from kura.planning.gpus import GpuClass
    from kura.schema.run import RunSpec
    from kura.workspace import Workspace

__all__ = ["BACKEND", "KohakuMossBackend", "MossFacts"]

ARCHITECTURE = "moss_image"
KURA_KEYS = frozenset({"vram_layer", "algo", "precision"})
"""``backend.config`` keys Kura reads itself (they pick KohakuMoss's preset layers)."""
LADDER_KEY = "MEMORY_PROFILE"
LADDER_REASON = "fit ladder"
DEFAULT_SAVE_EVERY = 500
"""KohakuMoss's base_lora SAVE_EVERY (used, capped at the steps, when run.yaml sets none)."""
STEP_KINDS: Mapping[str, StepKind] = {
    "inspect": "prepare",
    "cache_text": "cache",
    "cache_latents": "cache",
    "cache_val_text": "cache",
    "cache_val_latents": "cache",
    "train": "train",
}
MOSS_DITS = frozenset({"moss-image-dit", "moss-image-dit-custom"})
PACKED = frozenset({"nvfp4", "bnb-4bit"})
"""Quantisations whose stored weight shapes are not the logical ones (``kura.models.quant``)."""
"""The signature table's MOSS DiT components (``kura.models.signatures``)."""
EXPORT_FILES = {"comfyui": "comfy", "lycoris": "lycoris"}
"""``kura export --format`` → KohakuMoss's EXPORT_FORMATS name (its file suffix)."""


@dataclass(frozen=True)
class MossFacts(TrainerFacts):
    """What ``prepare`` learned: the environment and KohakuMoss's answers for this run."""

    env_path: str
    facts: CompileFacts


_FACTS: dict[str, CompileFacts] = {}
_PLANS: dict[str, PlanAnswer] = {}
"""Answers of the environment within one Kura process (a plan asks fit, estimate and
compile the same questions)."""


def _env(path: str) -> EnvLocation:
    from kura.backends.kohakumoss.env import EnvLocation, require_env

    return require_env(EnvLocation(Path(path), "KURA_KOHAKUMOSS_ENV"))


def _config(spec: RunSpec) -> dict[str, Any]:
    return dict(spec.backend.config)


def _weights(spec: RunSpec, inputs: CompileInputs) -> Path:
    if inputs.model_root:
        return Path(inputs.model_root)
    dit = inputs.model_paths.get("transformer")
    if dit is None:
        raise SpecError(
            "KohakuMoss needs the MOSS DiT: set model.root (a pipeline root) or "
            "model.paths.transformer (one DiT file)",
            hint="e.g. --set model.root=/models/MOSS-Image-Base",
        )
    path = Path(dit)
    if "-of-" in path.name:
        raise SpecError(
            f"{path} is one shard of a transformer/ folder: KohakuMoss loads such a folder "
            "as part of its pipeline root",
            hint="set model.root to the folder above transformer/ instead of model.paths",
        )
    return path


def _layer_choice(config: Mapping[str, Any]) -> Any:
    from kura.backends.kohakumoss.queries import LayerChoice

    return LayerChoice(
        algo=str(config.get("algo", "lora")),
        source="folder",
        precision=str(config.get("precision", "bf16")),
        vram_gib=None,
        vram_layer=str(config.get("vram_layer", "24g")),
    )


class KohakuMossBackend(StandardBackend):
    """KohakuMoss's own verbs; the defaults it keeps (:mod:`kura.backends.standard`): the
    prompt as written (its prompts carry no size: its ``SAMPLE_SIZE`` knob does), nothing
    checked before compile (compile type-checks the knobs against the installed script's
    defaults, then runs its ``config_problems``), no ``trainer_bin`` (the steps name the
    environment's ``kogine`` by full path), no interrupt exited 0 on (SIGTERM becomes exit
    143, its ``training/shutdown.py``), no image (it runs on the host), and no conversion of
    its LoRA files by Kura (its :meth:`export` copies its own)."""

    name = "kohakumoss"
    title = "KohakuMoss"

    @property
    def release(self) -> str:
        from kura.backends.kohakumoss.env import KOHAKUMOSS_VERSION

        return KOHAKUMOSS_VERSION

    def serves(self, architecture: str) -> bool:
        return architecture == ARCHITECTURE

    def draft_config(self, bundle: Bundle, explicit: Mapping[str, object]) -> DraftedConfig:
        config: dict[str, object] = {}
        reasons: dict[str, str] = {}
        drafted = {
            "vram_layer": (
                "24g",
                "adapter default (KohakuMoss's layer for 24 GiB cards; 6g, 8g, 12g, 16g or "
                "auto pick another)",
            ),
            "algo": ("lora", "adapter default (KohakuMoss's algo_lora layer)"),
            "precision": ("bf16", "adapter default (KohakuMoss's precision_bf16 layer)"),
        }
        for key, (value, why) in drafted.items():
            if f"backend.config.{key}" not in explicit:
                config[key] = value
                reasons[key] = why
        return DraftedConfig(config, reasons)

    def knowledge(self, architecture: str) -> TrainerKnowledge:
        from kura.backends.kohakumoss.knowledge import moss_knowledge

        return moss_knowledge(architecture)

    def tasks(self, bundle: Bundle) -> tuple[str, ...]:
        from kura.backends.kohakumoss.knowledge import moss_tasks

        return moss_tasks(bundle)

    def recipe(self, spec: RunSpec, inputs: PlanInputs, compiled_dir: Path) -> TrainerRecipe:
        """The train config as KohakuMoss composes it (its ``config_knobs``)."""
        from kura.backends.kohakumoss.recipe import moss_recipe

        return moss_recipe(spec, inputs, compiled_dir)

    def loss_labels(self) -> LossLabels:
        from kura.backends.kohakumoss.recipe import LOSS_LABELS

        return LOSS_LABELS

    def config_keys(self, architecture: str) -> frozenset[str]:
        known: set[str] = set(KURA_KEYS) | {LADDER_KEY}
        for facts in _FACTS.values():
            known |= set(facts.knob_types)
        return frozenset(known)

    def search_keys(self, architecture: str) -> SearchKeys:
        from kura.backends.kohakumoss.search import search_keys

        return search_keys(architecture)

    def trainer_dir(self, workspace: Workspace, *, in_container: bool) -> str:
        from kura.backends.kohakumoss.env import locate_env, require_env

        if in_container:
            raise SpecError(
                "KohakuMoss runs on the host executor: its environment is a virtual "
                "environment of this machine, not an image",
                hint="set execution.executor: host in run.yaml",
            )
        env = locate_env(workspace.config().executor.kohakumoss_env, workspace.root)
        return str(require_env(env).path)

    # -- compile ---------------------------------------------------------------------------

    def prepare(self, spec: RunSpec, inputs: CompileInputs) -> TrainerFacts | None:
        from kura.backends.kohakumoss.queries import compile_facts

        env = _env(inputs.trainer_dir)
        choice = _layer_choice(_config(spec))
        weights = _weights(spec, inputs)
        key = json.dumps([str(env.path), repr(choice), str(weights)])
        if key not in _FACTS:
            _FACTS[key] = compile_facts(env, choice, weights)
        problems = _FACTS[key].arch.problems
        if problems:
            raise CheckFailed(
                f"{weights}: KohakuMoss's own load of this DiT would stop the run after its "
                "caches: " + "; ".join(problems),
                hint="`kura model check FILE --arch moss_image` names the damage; use a "
                "complete DiT (re-download or re-export it)",
                path=weights,
            )
        return MossFacts(str(env.path), _FACTS[key])

    def _compile(self, spec: RunSpec, inputs: CompileInputs, run_dir: Path) -> MossCompiled:
        from kura.backends.kohakumoss.compile import (
            MossCompileInputs,
            MossDataset,
            MossModel,
            compile_moss,
        )
        from kura.backends.kohakumoss.knobs import KnobValue, MossRecipe
        from kura.backends.kohakumoss.validation import validation_settings
        from kura.models.bundles import get_bundle

        facts = inputs.trainer_facts
        if not isinstance(facts, MossFacts):
            raise SpecError(
                "KohakuMoss compiles from what its environment answered (prepare)",
                hint="compile through `kura run compile` / `kura run plan`",
            )
        training = spec.training
        if training.max_steps is None:
            raise Unsupported(
                "KohakuMoss counts training in optimizer steps (STEPS), not epochs",
                hint="set training.max_steps in run.yaml (KohakuMoss's plan shows its batches "
                "per epoch)",
            )
        config = _config(spec)
        unknown_kura = sorted(k for k in config if k.islower() and k not in KURA_KEYS)
        if unknown_kura:
            raise SpecError(
                f"backend.config {', '.join(unknown_kura)}: not a Kura key of KohakuMoss",
                hint=f"Kura's keys are {', '.join(sorted(KURA_KEYS))}; KohakuMoss knobs are "
                "UPPER_CASE",
            )
        knobs: dict[str, KnobValue] = {
            k: v for k, v in config.items() if k not in KURA_KEYS and not k.islower()
        }
        steps = training.max_steps
        save_every = _pop_int(knobs, "SAVE_EVERY", min(DEFAULT_SAVE_EVERY, steps))
        sample_every = _pop_int(knobs, "SAMPLE_EVERY", save_every)
        log_every = _pop_int(knobs, "LOG_EVERY", 10)
        metrics_every = knobs.get("METRICS_EVERY")
        cadence = (
            metrics_every
            if isinstance(metrics_every, int)
            and not isinstance(metrics_every, bool)
            and metrics_every > 0
            else log_every
        )
        validation = validation_settings(
            steps,
            max(1, cadence),
            every=knobs.pop("VALIDATE_EVERY", None),
            extra=knobs.pop("VALIDATION", None),
            datasets=tuple(d.name for d in inputs.validation),
        )
        arch = facts.facts.arch
        if (
            training.sample_prompts
            and not arch.named_variants
            and "SAMPLE_SKIP_LAYERS" not in knobs
        ):
            # KohakuMoss's default skip-layer guidance names blocks of the released 42-block
            # DiT; on another shape sampling stops the run at its first sample (ValueError).
            raise SpecError(
                f"the DiT has {arch.depth} blocks (not a released MOSS-Image variant), so "
                "KohakuMoss's default SAMPLE_SKIP_LAYERS (blocks of the 42-block model) "
                "would fail at the first sample",
                hint="set backend.config.SAMPLE_SKIP_LAYERS=[] (or blocks below "
                f"{arch.depth}), or turn sampling off with --set training.sample_prompts=[]",
            )
        uses = {use.name: use for use in (*spec.datasets, *spec.validation)}
        first = spec.datasets[0].resolution
        if "TARGET_AREA" not in knobs:
            knobs["TARGET_AREA"] = first[0] * (first[1] if len(first) > 1 else first[0])
        recipe = MossRecipe(
            learning_rate=training.learning_rate,
            steps=steps,
            rank=training.network.rank,
            alpha=training.network.alpha,
            seed=training.seed,
            warmup_steps=training.warmup_steps,
            max_grad_norm=training.max_grad_norm,
            save_every=save_every,
            sample_every=sample_every if training.sample_prompts else 0,
            sample_prompts=tuple(training.sample_prompts),
            log_every=log_every,
        )
        bundle = get_bundle(spec.model.base)
        folders = {f.slot for f in bundle.files if f.format == "folder"}

        def role(slot: str) -> Path | None:
            if inputs.model_root or slot not in inputs.model_paths:
                return None
            path = Path(inputs.model_paths[slot])
            return path.parent if slot in folders and path.suffix == ".safetensors" else path

        datasets = tuple(
            MossDataset(d.name, Path(d.media_dir), d.caption_ext, uses[d.name].repeats, d.trigger)
            for d in inputs.datasets
        )
        held_out = tuple(
            MossDataset(d.name, Path(d.media_dir), d.caption_ext, uses[d.name].repeats, d.trigger)
            for d in inputs.validation
        )
        variant: Literal["base", "sft"] = (
            "sft" if bundle.trainer.get("variant") == "sft" else "base"
        )
        moss = MossCompileInputs(
            run_id=spec.id,
            run_dir=run_dir,
            env=_env(facts.env_path),
            stack=facts.facts.stack,
            model=MossModel(
                root=_weights(spec, inputs),
                arch=facts.facts.arch,
                variant=variant,
                text_encoder=role("text_encoder"),
                vae=role("vae"),
            ),
            datasets=datasets,
            recipe=recipe,
            knob_types=facts.facts.knob_types,
            overrides=knobs,
            device="cuda" if facts.facts.cuda else "cpu",
            validation=held_out,
            validation_settings=validation,
        )
        return compile_moss(moss)

    def compile(self, spec: RunSpec, inputs: CompileInputs) -> CompiledRun:
        from kura.backends.kohakumoss.compile import COMPILED_DIR

        compiled = self._compile(spec, inputs, Path(inputs.run_dir))
        prefix = COMPILED_DIR.split("/", 1)[0] + "/"
        steps = tuple(
            Step(s.name, s.argv, dict(s.env), str(s.cwd), kind=STEP_KINDS[s.name])
            for s in compiled.steps
        )
        warnings = []
        runs = str(spec.backend.config.get("OPTIMIZER", "adamw"))
        if spec.training.optimizer.lower() != runs or spec.training.optimizer_args:
            warnings.append(
                f"training.optimizer {spec.training.optimizer} is not passed to KohakuMoss, "
                f"which runs its OPTIMIZER {runs}: set that knob in backend.config"
            )
        return CompiledRun(
            backend=self.name,
            release=self.release,
            files={name.removeprefix(prefix): text for name, text in compiled.files.items()},
            steps=steps,
            container=None,
            warnings=tuple(warnings),
        )

    def check_compiled(self, spec: RunSpec, compiled_dir: Path) -> tuple[str, ...]:
        from kura.backends.kohakumoss.compile import COMPILED_DIR
        from kura.backends.kohakumoss.queries import config_problems

        sub = Path(COMPILED_DIR).relative_to(Path(COMPILED_DIR).parts[0])
        configs = tuple(
            path
            for path in (compiled_dir / sub / n for n in ("train.py", "data.py", "val_data.py"))
            if path.name != "val_data.py" or path.is_file()
        )
        from kura.schema.compiled import StepsFile
        from kura.schema.machine import read_machine_file

        steps = read_machine_file(
            StepsFile, compiled_dir / "steps.json", remedy="compile the run again (`kura run plan`)"
        )
        kogine = Path(steps.steps[0].argv[0])
        found = config_problems(_env(str(kogine.parent.parent)), configs)
        return tuple(f"{c.path.name}: {p}" for c in found for p in c.blocking)

    # -- plan ------------------------------------------------------------------------------

    def _answer(
        self, spec: RunSpec, inputs: PlanInputs
    ) -> tuple[PlanAnswer, MossArch, MossValidationSettings | None]:
        """KohakuMoss's estimate of every memory option and its data plan for this run, the
        DiT's shape (from its headers) and the validation it runs (None without run.yaml
        ``validation``)."""
        from kura.backends.kohakumoss.memory import calibration_options, ladder_options
        from kura.backends.kohakumoss.queries import plan_answer

        compile_inputs = inputs.compile
        if compile_inputs is None or not isinstance(compile_inputs.trainer_facts, MossFacts):
            raise SpecError(
                "KohakuMoss plans from its compiled configuration and its own data plan of "
                "the dataset (`inspect_data`): a what-if without a run has neither",
                hint="create the run (`kura run new --backend kohakumoss`), then `kura run "
                "estimate RUN` or `kura run plan RUN` (they prepare it first)",
            )
        facts = compile_inputs.trainer_facts
        run_dir = Path(compile_inputs.run_dir)
        compiled = self._compile(spec, compile_inputs, run_dir)
        train_text = compiled.files[next(n for n in compiled.files if n.endswith("train.py"))]
        options = (
            *ladder_options(facts.facts.stack.root, facts.facts.stack.vram_layers),
            *_profile_grid(),
            *calibration_options(),
        )
        key = json.dumps([facts.env_path, train_text, [o.name for o in options]])
        if key not in _PLANS:
            with tempfile.TemporaryDirectory(prefix="kura-moss-plan-") as tmp:
                config = Path(tmp) / "train.py"
                config.write_text(train_text, encoding="utf-8")
                _PLANS[key] = plan_answer(_env(facts.env_path), config, options)
        return _PLANS[key], facts.facts.arch, compiled.validation

    def fit(
        self, spec: RunSpec, inputs: PlanInputs, gpu: GpuClass, *, host_ram_gib: float | None
    ) -> PlanFit:
        from kura.planning.ladder import walk

        answer, arch, validation = self._answer(spec, inputs)
        problem = MossProblem(spec, answer, arch.is_named, gpu, validation, arch=arch)
        result = walk(problem, host_ram_gib=host_ram_gib)
        settings = problem.settings(result.choice) if result.fits else {}
        reasons = (
            {LADDER_KEY: f"{LADDER_REASON}: {result.rungs[-1].reason}"} if result.rungs else {}
        )
        document = {
            "kind": "fit-plan",
            "gpu": gpu.id,
            "fits": result.fits,
            "ask_first": result.ask_first,
            "rungs": [rung.to_dict() for rung in result.rungs],
            "recipe_options": problem.recipe_options(),
            "notes": list(result.notes),
        }
        aid_keys = tuple(key for aid in problem.aids for key in aid.keys)
        return PlanFit(gpu.id, result.fits, result.rungs, settings, reasons, document, aid_keys)

    def estimate(self, spec: RunSpec, inputs: PlanInputs, gpu: GpuClass | None) -> Evaluation:
        if inputs.compile is None and inputs.bundle.id in _named_bundles():
            return _whatif_evaluation(spec, gpu)
        answer, arch, validation = self._answer(spec, inputs)
        problem = MossProblem(spec, answer, arch.is_named, gpu, validation, arch=arch)
        evaluation = problem.evaluate(problem.baseline())
        if evaluation is None:
            raise CheckFailed(
                "KohakuMoss's estimator refused the run as written: "
                + ((problem.written.error or "") if problem.written else "no estimate"),
                hint="set backend.config.MEMORY_PROFILE to a named profile "
                "(speed, balanced, low, minimal)",
            )
        return evaluation

    def contingency(self, spec: RunSpec, inputs: PlanInputs) -> Contingency | None:
        config = dict(self.failure_config(spec, inputs))
        rung = self.remedy(config, step="train", phase="training")
        if rung.get("key") != LADDER_KEY or "to" not in rung:
            return None
        return Contingency("out-of-memory in training", rung, {LADDER_KEY: rung["to"]})

    def failure_config(self, spec: RunSpec, inputs: PlanInputs) -> Mapping[str, object]:
        from kura.backends.kohakumoss.memory import LAYER_PROFILES

        config: dict[str, object] = dict(spec.backend.config)
        layer = str(config.get("vram_layer", "24g"))
        config.setdefault(LADDER_KEY, LAYER_PROFILES.get(layer, "auto"))
        config["vram_layer"] = layer
        return config

    def remedy(self, config: Mapping[str, object], *, step: str, phase: str) -> dict[str, object]:
        from kura.backends.kohakumoss.memory import AIDS, PROFILE_ORDER

        profile = str(config.get(LADDER_KEY, ""))
        if profile in PROFILE_ORDER and profile != PROFILE_ORDER[-1]:
            following = PROFILE_ORDER[PROFILE_ORDER.index(profile) + 1]
            return {
                "action": "change",
                "key": LADDER_KEY,
                "from": profile,
                "to": following,
                "why": f"the next KohakuMoss memory profile ({AIDS[2].costs})",
            }
        layers = AIDS[0].levels
        layer = str(config.get("vram_layer", ""))
        if layer in layers and layer != layers[-1]:
            lower = layers[layers.index(layer) + 1]
            return {
                "action": "change",
                "key": "vram_layer",
                "from": layer,
                "to": lower,
                "why": f"the next-lower VRAM layer; it also lowers MAX_TOKENS (fewer samples "
                f"per step: a recipe change, plan and approve again); {AIDS[0].costs}",
            }
        return {
            "action": "change",
            "key": "MAX_TOKENS",
            "why": "every memory profile and VRAM layer is in use: lower backend.config."
            "MAX_TOKENS (fewer tokens per batch) or use a larger GPU",
        }

    # -- follow ----------------------------------------------------------------------------

    def resume_arguments(self, run_dir: Path, *, trainer_run_dir: str) -> tuple[str, ...]:
        from kura.backends.kohakumoss.follow import last_checkpoint

        found = last_checkpoint(_output_dir(run_dir))
        if found is None:
            raise CheckFailed(
                f"run {run_dir.name} has no KohakuMoss checkpoint to resume from",
                hint="checkpoints are written every SAVE_EVERY steps; relaunch to start over",
            )
        return ("--set", "RESUME=latest")

    def resume_rule(self, run_id: str) -> ResumeRule:
        """``--set RESUME=latest`` once a ``checkpoints/step_NNNNNNNN`` folder holds its
        ``state.json`` (:func:`.follow.last_checkpoint`, which :meth:`resume_arguments`
        checks); KohakuMoss finds the latest itself."""
        return ResumeRule(
            f"output/{run_id}/checkpoints/step_*/state.json", ("--set", "RESUME=latest"), "name"
        )

    def diagnose(
        self, log_text: str, *, step: str, exit_code: int | None, config: Mapping[str, object]
    ) -> Diagnosis:
        from kura.backends.kohakumoss.diagnose import diagnose

        verdict = diagnose(step, 1 if exit_code is None else exit_code, log_text[-20000:])
        code = {
            "oom": "cuda_oom",
            "cache-miss": "cache_miss",
            "invalid-config": "bad_arguments",
            "non-finite": "nan_loss",
            "arch-mismatch": "arch_mismatch",
            "missing-path": "missing_files",
            "killed": "killed",
            "ok": "ok",
        }.get(verdict.kind, "unknown")
        evidence = next(
            (
                line.strip()
                for line in reversed(log_text.splitlines())
                if line.strip() and any(w in line for w in _EVIDENCE)
            ),
            "",
        )
        if code == "cuda_oom":
            nxt: dict[str, object] = self.remedy(config, step=step, phase="training")
        else:
            nxt = {"action": "read_log", "why": verdict.hint}
        return Diagnosis(
            code,
            step,
            verdict.message,
            evidence,
            nxt,
            "training" if step == "train" else step,
            exit_code,
            {"hint": verdict.hint},
        )

    def progress(self, log_path: Path) -> StepProgress:
        """The train step's progress from ``output/<run id>/`` (metrics.jsonl, log.txt) of
        the run folder that holds ``logs/<step>.log``; other steps show none."""
        from kura.backends.kohakumoss.follow import read_metrics, read_progress

        if log_path.stem != "train":
            return StepProgress()
        out = _output_dir(log_path.parent.parent)
        found = read_progress(out)
        smoothed: float | None = None
        for row in read_metrics(out / "metrics.jsonl"):
            smoothed = row.loss if smoothed is None else 0.1 * row.loss + 0.9 * smoothed
        return StepProgress(
            step=found.step,
            total=found.total,
            loss=found.loss,
            loss_ema=smoothed,
            seconds_per_step=found.seconds_per_step,
            eta_seconds=found.eta_seconds,
            last_checkpoint=found.last_checkpoint,
            validation_loss=found.validation_loss,
        )

    def loss_history(self, run_dir: Path, attempts: Sequence[AttemptRef]) -> LossHistory:
        """``loss`` and ``lr`` of KohakuMoss's ``metrics.jsonl`` (``output/<run id>/``)."""
        from kura.backends.kohakumoss.follow import loss_history

        return loss_history(run_dir, attempts)

    def file_rules(self, report: ModelReport, architecture: str | None) -> FileRules:
        """A MOSS DiT KohakuMoss could not build and load from its header (a block or a
        block's tensor missing, a head size that does not divide the width: ``ditcheck``)
        is refused. KohakuMoss documents no rule refusing a file by its precision (its
        loader reads fp16-fix and pre-quantised fp8 records)."""
        from kura.backends.kohakumoss.ditcheck import dit_problems
        from kura.models.header import read_header

        if report.component not in MOSS_DITS:
            return FileRules()
        tensors: dict[str, tuple[int, ...]] = {}
        for path in report.shards or (report.path,):
            tensors.update({k: tuple(v.shape) for k, v in read_header(path).tensors.items()})
        return FileRules(
            refusals=tuple(
                f"KohakuMoss cannot build and load this DiT: it {p}"
                if p.startswith(("lacks", "has no"))
                else f"KohakuMoss cannot build and load this DiT: {p}"
                for p in dit_problems(
                    tensors, report.key_prefix, packed=report.quantization in PACKED
                )
            )
        )

    def outputs(self, run_dir: Path) -> OutputLayout:
        out = _output_dir(run_dir)
        loras = sorted((out / "export").glob("*.safetensors")) if (out / "export").is_dir() else []
        samples = sorted((out / "samples").glob("step_*/*.png"))
        return OutputLayout(tuple(loras), tuple(samples))

    def dataset_buckets(self, spec: RunSpec, inputs: PlanInputs) -> tuple[DatasetBuckets, ...]:
        from kura.backends.kohakumoss.bucketview import moss_dataset_buckets

        return moss_dataset_buckets(spec, inputs)

    def doctor(self, workspace: Workspace | None) -> DoctorReport:
        """``kohakumoss-doctor --json`` in the environment, plus Kura's checks."""
        from kura.backends.kohakumoss.doctor import moss_doctor, workspace_env

        return moss_doctor(workspace_env(workspace))

    def setup(
        self,
        workspace: Workspace | None,
        *,
        python: str | None = None,
        source: Path | None = None,
    ) -> TrainerSetup:
        """A virtual environment of its own with pinned versions from the package registry,
        which Kura installs (a source folder is refused: KohakuMoss is not installed from
        one)."""
        from kura.backends.kohakumoss.doctor import workspace_env
        from kura.backends.kohakumoss.env import INSTALL_SIZE, PINS, install_commands
        from kura.backends.trainer_env import EnvRecord

        if source is not None:
            raise UsageError(
                "KohakuMoss installs from the package registry, not from a source folder",
                hint="run `kura backend install kohakumoss` without --source",
            )
        env = workspace_env(workspace)
        return TrainerSetup(
            backend=self.name,
            how="a virtual environment of its own: `kura backend install kohakumoss`",
            present=env.present,
            path=env.path,
            source=env.source,
            python=str(env.python),
            install=install_commands(env, python),
            size=INSTALL_SIZE,
            record=EnvRecord(backend=self.name, release=self.release, packages=list(PINS)),
        )

    def export(
        self,
        workspace: Workspace,
        run_id: str,
        *,
        epoch: int | None,
        fmt: str,
        out: Path | None,
    ) -> LoraExport:
        """KohakuMoss's own export file, its keys checked against the DiT, copied as is."""
        from kura.backends.kohakumoss.exportcheck import check_export, dit_linears
        from kura.fsutil import atomic_write_bytes

        if epoch is not None:
            raise UsageError(
                "KohakuMoss exports after the last step only (no per-epoch files)",
                hint="drop --epoch; re-export a checkpoint with KohakuMoss's "
                "scripts/export/export.py",
            )
        if fmt not in EXPORT_FILES:
            raise UsageError(
                f"KohakuMoss writes no {fmt!r} file", hint="--format comfyui or --format lycoris"
            )
        run_dir = workspace.run_dir(run_id)
        found = [
            p for p in self.outputs(run_dir).lora_files if p.stem.endswith(f"-{EXPORT_FILES[fmt]}")
        ]
        if not found:
            raise CheckFailed(
                f"run {run_id} has no KohakuMoss {EXPORT_FILES[fmt]} export",
                hint="KohakuMoss exports after the last step (EXPORT_FORMATS); finish or "
                "resume the run",
                path=_output_dir(run_dir) / "export",
            )
        source = found[-1]
        from kura.schema.lock import RunLock
        from kura.schema.records import read_record

        lock = read_record(
            RunLock,
            run_dir / "compiled" / "run.lock",
            fix=f"plan the run again (`kura run plan {run_id}`)",
        )
        dit = lock.models.roles["transformer"]
        if dit.path is None:
            raise CheckFailed(
                f"run {run_id}'s lock names no transformer file",
                hint=f"`kura run plan {run_id}` once the model files are present",
            )
        files = (Path(dit.path), *(Path(s.path) for s in dit.shards))
        verdict = check_export(source, dit_linears(files))
        if not verdict.ok:
            raise CheckFailed(
                f"{source.name} does not fit the run's DiT: " + "; ".join(verdict.problems[:6]),
                hint="nothing was written; check that the run's model is the DiT trained",
                path=source,
            )
        target = out or run_dir / "export" / source.name
        if target.is_dir():
            target = target / source.name
        if target.resolve() != source.resolve():
            atomic_write_bytes(target, source.read_bytes())
        return LoraExport(
            run=run_id,
            epoch=None,
            step=lock_step(source),
            format=fmt,
            architecture=ARCHITECTURE,
            source=str(source),
            out=str(target),
            copied=True,
            mode="copy",
            why=f"KohakuMoss's own {verdict.format or EXPORT_FILES[fmt]} file loads as is",
            verified_against=f"the DiT header ({files[0]})",
            keys=verdict.modules * 3,
            modules=verdict.modules,
            rank=verdict.rank,
            fused_qkv=verdict.fused_qkv,
        )


def _pop_int(knobs: dict[str, Any], key: str, default: int) -> int:
    value = knobs.pop(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SpecError(
            f"backend.config.{key} must be a whole number of steps, not {value!r}",
            hint=f"e.g. --set backend.config.{key}=500",
        )
    return value


_EVIDENCE = ("Error", "error", "CacheMiss", "invalid configuration", "does not exist", "SIGTERM")


def lock_step(path: Path) -> int | None:
    """The training step a KohakuMoss export file records (``kohakumoss_step``)."""
    from kura.models.header import read_header

    raw = read_header(path).metadata.get("kohakumoss_step")
    return int(raw) if raw and raw.isdigit() else None


def _output_dir(run_dir: Path) -> Path:
    """``OUTPUT_DIR/RUN_NAME`` as Kura compiles it: ``<run>/output/<run id>``."""
    return run_dir / "output" / run_dir.name


def _profile_grid() -> tuple[Any, ...]:
    from kura.backends.kohakumoss.memory import PROFILE_ORDER
    from kura.backends.kohakumoss.queries import MemoryOption

    return tuple(
        MemoryOption(f"as written, profile {p}", None, {LADDER_KEY: p}) for p in PROFILE_ORDER
    )


class MossProblem:
    """The run on one GPU class for the fit ladder: one aid, KohakuMoss's MEMORY_PROFILE,
    estimated by KohakuMoss for every level in one helper call (``_answer``)."""

    def __init__(
        self,
        spec: RunSpec,
        answer: PlanAnswer,
        named: bool,
        gpu: GpuClass | None,
        validation: MossValidationSettings | None = None,
        *,
        arch: MossArch | None = None,
    ) -> None:
        from kura.backends.kohakumoss.memory import AIDS, LAYER_PROFILES, PROFILE_ORDER, band

        self.spec = spec
        self.arch = arch
        """The DiT's shape (its headers, ``infer``): what the step time is computed from."""
        self.answer = answer
        self.band = band(answer.rows)
        self.named = named
        self.validation = validation
        self.gpu = cast("GpuClass", gpu)  # None only for estimate(), never for the ladder
        self.target = gpu
        self.rows = {r.name: r for r in answer.rows}
        config = spec.backend.config
        self.layer = str(config.get("vram_layer", "24g"))
        self.written_profile = str(config.get(LADDER_KEY, LAYER_PROFILES.get(self.layer, "")))
        later = (
            PROFILE_ORDER[PROFILE_ORDER.index(self.written_profile) + 1 :]
            if self.written_profile in PROFILE_ORDER
            else ()
        )
        self.aids: tuple[MemoryAid, ...] = (
            MemoryAid(
                name="memory_profile",
                rung=AIDS[2].rung,
                keys=(LADDER_KEY,),
                saves=AIDS[2].saves,
                costs=AIDS[2].costs,
                levels=(None, *later),
            ),
        )
        self.written = self.rows.get(f"vram_{self.layer}") if LADDER_KEY not in config else None
        if self.written is None:
            self.written = self.rows.get(f"as written, profile {self.written_profile}")

    def baseline(self) -> AidChoice:
        return {"memory_profile": None}

    def _row(self, choice: AidChoice) -> MemoryEstimate | None:
        level = choice.get("memory_profile")
        return self.written if level is None else self.rows.get(f"as written, profile {level}")

    def evaluate(self, choice: AidChoice) -> Evaluation | None:
        row = self._row(choice)
        if row is None or row.error:
            return None
        return _evaluation(self, row)

    def change(self, aid: MemoryAid, choice: AidChoice) -> Mapping[str, object]:
        return dict(self.settings(choice))

    def reason(self, aid: MemoryAid, before: Evaluation, after: Evaluation) -> str:
        usable = self.target.usable_gib if self.target else float("nan")
        return (
            f"KohakuMoss estimates {before.detail.get('estimate_gib')} GiB per step as written "
            f"(band top {before.worst.upper_gib} GiB) and {after.detail.get('estimate_gib')} "
            f"GiB with {after.detail.get('profile')} (band top {after.worst.upper_gib} GiB; "
            f"{usable:.1f} GiB usable); the first profile of its own order (speed → minimal) "
            "that fits"
        )

    def settings(self, choice: AidChoice) -> Mapping[str, object]:
        level = choice.get("memory_profile")
        return {LADDER_KEY: level} if level is not None else {}

    def recipe_options(self) -> list[dict[str, object]]:
        """VRAM layers and token budgets: they change MAX_TOKENS (samples per step), so
        they are shown with their estimate, never applied."""
        out: list[dict[str, object]] = []
        for row in self.answer.rows:
            if not row.name.startswith(("vram_", "MAX_TOKENS")) or row.error:
                continue
            upper = self.band.upper(row.total_gib)
            out.append(
                {
                    "option": f"{row.name} (MEMORY_PROFILE {row.profile}, MAX_TOKENS "
                    f"{row.max_tokens})",
                    "peak_gib": round(self.band.centre(row.total_gib), 2),
                    "fits": self.target is not None and upper <= self.target.usable_gib,
                }
            )
        return out


def _evaluation(problem: MossProblem, row: MemoryEstimate) -> Evaluation:
    """The run's memory as the plan shows it: the calibrated band around KohakuMoss's
    estimate (its centre as the peak, its top for the fit), and the calibration that made
    the band, printed cell by cell (every printed cell lies inside it)."""
    from kura.backends.kohakumoss.memory import calibrate, calibration_line, host_ram

    bounds = problem.band
    gpu = problem.target
    estimate = row.total_gib
    peak, upper = bounds.centre(estimate), bounds.upper(estimate)
    ram = host_ram(
        named_variant=problem.named,
        full_ft=str(problem.spec.backend.config.get("algo", "lora")) == "full",
        profile=row.profile,
        text_encoder_at_build=bool(problem.spec.training.sample_prompts),
    )
    fits = None if gpu is None else upper <= gpu.usable_gib
    steps = problem.spec.training.max_steps
    timed = _step_time(problem, row)
    step_s = None if timed is None else timed.step_s
    cost = StepCost(
        step="train",
        kind="train",
        peak_gib=round(peak, 3),
        upper_gib=round(upper, 3),
        host_ram_gib=ram.build_gib,
        seconds=None if step_s is None or steps is None else _seconds(step_s * steps),
        fits=fits,
        source="KohakuMoss memory/estimate.py estimate() via the helper; step time from FLOPs "
        "calibrated on its README (kura/backends/kohakumoss/steptime.py)",
        notes=(f"host RAM: {ram.source}",),
        seconds_band=None if timed is None else timed.band / 2,
    )
    parts = row.parts_gib

    def total(*names: str) -> float:
        return round(sum(parts.get(n, 0.0) for n in names), 3)

    report: list[dict[str, object]] = [_data_section(problem.answer)]
    calibration = [calibration_line(*cell) for cell in calibrate(problem.answer.rows)]
    calibration.append(bounds.describe())
    calibration.append(
        f"this run: KohakuMoss estimates {estimate:.2f} GiB ({row.profile}, MAX_TOKENS "
        f"{row.max_tokens}); the band puts its peak at {bounds.low * estimate:.2f}–"
        f"{upper:.2f} GiB (shown as {peak:.2f} ± {bounds.width(estimate) / 2:.2f} GiB)"
    )
    report.append({"title": "KohakuMoss estimator calibration", "lines": calibration})
    unsized = [
        "inspect, cache_text, cache_latents: KohakuMoss has no estimator for its cache "
        "passes; their encoders are placed by the VRAM layer (TEXT_ENCODE / VAE_ENCODE)",
    ]
    if problem.validation is not None:
        unsized.append(_validation_line(problem.validation, steps))
    report.append({"title": "KohakuMoss steps not estimated", "lines": unsized})
    detail: dict[str, object] = {
        "peak_vram_gib": round(peak, 3),
        "band_gib": round(bounds.width(estimate), 3),
        "estimate_gib": round(estimate, 3),
        "usable_gib": None if gpu is None else gpu.usable_gib,
        "fits": fits,
        "confidence": f"KohakuMoss's estimator, calibrated against its README "
        f"({bounds.low:.2f}–{bounds.high:.2f}× of the estimate)",
        "profile": row.profile,
        "max_tokens": row.max_tokens,
        "breakdown": {
            "weights": total("weights"),
            "lora_and_optimizer": total("adapter", "grads", "optim"),
            "activations": total("activations", "recompute", "text_refiner"),
            "swap_buffers": total("io"),
            "context": total("context", "workspace"),
        },
        "parts_gib": dict(parts),
        "host_ram_gib": ram.build_gib,
        "host_ram_steps_gib": ram.steps_gib,
        "step_seconds": None if step_s is None else round(step_s, 3),
        "total_hours": None if cost.seconds is None else round(cost.seconds / 3600, 3),
        "config": {"total_steps": steps},
        "trainer_report": report,
    }
    return Evaluation(costs=(cost,), step_seconds=step_s, detail=detail)


def _seconds(value: float) -> float:
    """Seconds to 0.1 s, a tiny DiT's fraction of a second to two significant digits (a
    time is never shown as 0 when it is not)."""
    return round(value, 1) if value >= 1 else float(f"{value:.2g}")


def _named_bundles() -> frozenset[str]:
    from kura.backends.kohakumoss.steptime import NAMED_BUNDLES

    return NAMED_BUNDLES


WHATIF_MEMORY_NOTE = (
    "memory: KohakuMoss's own estimator reads the run's compiled config and the DiT's "
    "headers, which a what-if has neither of: create the run and `kura run estimate RUN`"
)


def _whatif_evaluation(spec: RunSpec, gpu: GpuClass | None) -> Evaluation:
    """A what-if without a run: the step time of a released MOSS DiT (its preset shape) at
    the layer's token budget; the memory unsized (KohakuMoss estimates it from a compiled
    config), so the verdict says which step is not sized."""
    from kura.backends.kohakumoss.memory import LAYER_PROFILES
    from kura.backends.kohakumoss.steptime import (
        BASE_ARCH,
        LAYER_MAX_TOKENS,
        lora_params_at,
        step_time,
    )

    config = spec.backend.config
    layer = str(config.get("vram_layer", "24g"))
    tokens = config.get("MAX_TOKENS", LAYER_MAX_TOKENS.get(layer))
    if not isinstance(tokens, int):
        raise SpecError(
            f"a what-if on KohakuMoss's {layer} layer needs its token budget",
            hint="add --set backend.config.MAX_TOKENS=N (or use vram_layer 24g or 8g)",
        )
    profile = str(config.get(LADDER_KEY, LAYER_PROFILES.get(layer, "balanced")))
    first = spec.datasets[0].resolution
    area = first[0] * (first[1] if len(first) > 1 else first[0])
    timed = None
    if gpu is not None and not gpu.is_cpu and str(config.get("algo", "lora")) == "lora":
        timed = step_time(
            BASE_ARCH,
            gpu,
            max_tokens=tokens,
            area=area,
            lora_params=lora_params_at(spec.training.network.rank),
            profile=profile,
            grad_accum=int(str(config.get("GRAD_ACC", 1))),
        )
    steps = spec.training.max_steps
    seconds = None if timed is None or steps is None else _seconds(timed.step_s * steps)
    cost = StepCost(
        step="train",
        kind="train",
        peak_gib=None,
        upper_gib=None,
        host_ram_gib=None,
        seconds=seconds,
        fits=None,
        source="step time from FLOPs calibrated on KohakuMoss's README "
        "(kura/backends/kohakumoss/steptime.py); memory not estimated without a run",
        notes=(WHATIF_MEMORY_NOTE,),
        seconds_band=None if timed is None else timed.band / 2,
    )
    detail: dict[str, object] = {
        "peak_vram_gib": None,
        "band_gib": None,
        "usable_gib": None if gpu is None else gpu.usable_gib,
        "fits": None,
        "confidence": WHATIF_MEMORY_NOTE,
        "profile": profile,
        "max_tokens": tokens,
        "breakdown": {},
        "step_seconds": None if timed is None else round(timed.step_s, 3),
        "total_hours": None if seconds is None else round(seconds / 3600, 3),
        "config": {"total_steps": steps},
    }
    return Evaluation((cost,), None if timed is None else timed.step_s, detail)


def _step_time(problem: MossProblem, row: MemoryEstimate) -> MossStepTime | None:
    """The step time on the planned GPU; None (unknown) without a GPU class or the DiT's
    shape."""
    from kura.backends.kohakumoss.steptime import step_time

    if problem.target is None or problem.target.is_cpu or problem.arch is None:
        return None
    first = problem.spec.datasets[0].resolution
    area = first[0] * (first[1] if len(first) > 1 else first[0])
    config = problem.spec.backend.config
    return step_time(
        problem.arch,
        problem.target,
        max_tokens=row.max_tokens,
        area=int(config.get("TARGET_AREA", area)),
        lora_params=row.trainable_params,
        profile=row.profile,
        grad_accum=int(config.get("GRAD_ACC", 1)),
    )


def _validation_line(validation: MossValidationSettings, steps: int | None) -> str:
    """The validation's cost, which KohakuMoss's estimator does not count (unsized)."""
    count = validation.validations(steps) if steps else None
    when = (
        f"{count} time(s), every {validation.every} steps"
        if count
        else (f"every {validation.every} steps")
    )
    return (
        f"validation (VALIDATE_EVERY {validation.every}: {validation.source}): {when}, "
        f"{validation.forward_passes} forward passes without gradients each "
        f"({len(validation.sigmas)} sigmas × {validation.batches} batches, "
        f"{(count or 0) * validation.forward_passes} in all); its {validation.batches} fixed "
        "batches stay on the device for the whole run. KohakuMoss's estimator counts neither "
        "(unsized: memory and time); cache_val_text and cache_val_latents are cache passes "
        "like the others"
    )


def _data_section(answer: PlanAnswer) -> dict[str, object]:
    data = answer.data
    if data is None:
        return {
            "title": "KohakuMoss data plan (inspect_data)",
            "lines": [f"not available: {answer.data_error}"],
        }
    sizes = ", ".join(f"{size} ×{count}" for size, count in data.top_sizes[:5]) or "—"
    lines = [
        f"catalog: {data.rows} rows, {data.epoch_items:g} items per epoch (repeats applied)",
        f"{data.batches} batches per epoch, {data.samples_per_batch:.2f} samples per batch, "
        f"{data.image_tokens_per_batch:.0f} image + {data.text_tokens_per_batch:.0f} text "
        "tokens per batch",
        f"budget fill {data.budget_fill * 100:.0f} %, padding waste "
        f"{data.padding_waste * 100:.0f} %, {data.overlong_dropped} overlong dropped",
        f"top sizes: {sizes}",
    ]
    lines += [f"caption as trained: {c!r}" for c in data.captions[:2]]
    if data.batches and not math.isnan(data.samples_per_batch):
        lines.append("training.max_steps = epochs × batches per epoch (KohakuMoss counts steps)")
    return {"title": "KohakuMoss data plan (inspect_data)", "lines": lines}


BACKEND: Backend = KohakuMossBackend()
