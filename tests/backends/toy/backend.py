"""The toy backend: a second, tiny trainer of the tests' own invention behind the seam.

It has its own step names (``prepare``, a caching pass, and ``train``), its own memory aids
(``shrink`` and ``small-batch``), its own config keys, log format and searchable keys, and a
held-out loss on validation datasets (a rank above 64 costs memory, so a sweep's memory gate
has something to refuse). Driving Kura's whole path with it
proves that nothing above ``kura.backends.base`` knows Musubi (the httpx mock-transport
idea: the seam is the test seam). It is registered for a subprocess through
``KURA_BACKEND_MODULES``, the registry's plug-in hook.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from kura.backends.base import (
    AidChoice,
    AttemptLoss,
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
    Finding,
    KnownValue,
    LoraExport,
    LossHistory,
    LossLabels,
    LossPoint,
    MemoryAid,
    OutputLayout,
    PlanFit,
    PlanInputs,
    RecipeItem,
    SearchKey,
    SearchKeys,
    Step,
    StepCost,
    StepProgress,
    TrainerKnowledge,
    TrainerRecipe,
    TrainerSetup,
)
from kura.backends.standard import StandardBackend
from kura.errors import CheckFailed, SpecError, Unsupported
from kura.models.bundles import Bundle
from kura.planning.gpus import GpuClass
from kura.planning.ladder import walk
from kura.schema.run import RunSpec
from kura.workspace import Workspace

TRAINER = Path(__file__).with_name("toy_trainer.py")
_STEP = re.compile(r"toy: step (\d+)/(\d+) loss=([\d.]+)")
_VALIDATION = re.compile(r"toy: val_loss=([\d.]+)")
SEARCH = SearchKeys(
    keys={
        "training.learning_rate": SearchKey(
            "training.learning_rate",
            "float",
            "toy_trainer.py",
            minimum=0.0,
            exclusive_minimum=True,
            maximum=1.0,
        ),
        "training.network.rank": SearchKey(
            "training.network.rank", "int", "toy_trainer.py", minimum=1, maximum=512
        ),
        "training.max_steps": SearchKey(
            "training.max_steps", "int", "toy_trainer.py", minimum=1, maximum=100000
        ),
        "training.optimizer": SearchKey(
            "training.optimizer", "choice", "toy_trainer.py", choices=("adamw", "sgd")
        ),
    },
    heldout_loss=True,
    source="the toy trainer (tests/backends/toy/toy_trainer.py)",
)
_OOM = re.compile(r"ToyOOM: .*")
AIDS = (
    MemoryAid(
        name="shrink",
        rung=1,
        keys=("shrink_activations",),
        saves="half the activations",
        costs="20 % slower",
    ),
    MemoryAid(
        name="small-batch",
        rung=2,
        keys=("batch",),
        saves="the second sample's activations",
        costs="half the work per step",
        levels=(2, 1),
    ),
)


def _peak(batch: int, shrink: bool, rank: int = 16) -> float:
    return 10.0 + 6.0 * batch * (0.5 if shrink else 1.0) + max(0, rank - 64) * 0.5


def _seconds(batch: int, shrink: bool) -> float:
    # batch 1 keeps the effective batch by accumulating twice: slower per optimizer step
    return (1.2 if shrink else 1.0) * (1.0 if batch == 2 else 1.3)


class ToyProblem:
    def __init__(self, gpu: GpuClass, rank: int = 16):
        self.gpu = gpu
        self.rank = rank
        self.aids = AIDS

    def baseline(self) -> AidChoice:
        return {"shrink": False, "small-batch": 2}

    def evaluate(self, choice: AidChoice) -> Evaluation:
        batch, shrink = int(str(choice["small-batch"])), bool(choice["shrink"])
        return _evaluation(batch, shrink, self.gpu, self.rank)

    def change(self, aid: MemoryAid, choice: AidChoice) -> Mapping[str, object]:
        return dict(self.settings(choice))

    def reason(self, aid: MemoryAid, before: Evaluation, after: Evaluation) -> str:
        return f"toy peak {before.worst.peak_gib} -> {after.worst.peak_gib} GiB"

    def settings(self, choice: AidChoice) -> Mapping[str, object]:
        return {"shrink_activations": bool(choice["shrink"]), "batch": choice["small-batch"]}


def _evaluation(batch: int, shrink: bool, gpu: GpuClass | None, rank: int = 16) -> Evaluation:
    peak = _peak(batch, shrink, rank)
    fits = None if gpu is None else peak + 1.0 <= gpu.usable_gib
    seconds = 100 * _seconds(batch, shrink)
    cost = StepCost("train", "train", peak, peak + 1.0, 4.0, seconds, fits, "toy")
    ready = None if gpu is None else True
    prepare = StepCost("prepare", "cache", 2.0, 2.5, 1.0, 5.0, ready, "toy")
    detail = {
        "peak_vram_gib": peak,
        "band_gib": 2.0,
        "usable_gib": None if gpu is None else gpu.usable_gib,
        "fits": fits,
        "confidence": "toy",
        "breakdown": {"weights": 10.0, "activations": peak - 10.0},
        "host_ram_gib": 4.0,
        "step_seconds": _seconds(batch, shrink),
        "total_hours": 100 * _seconds(batch, shrink) / 3600,
        "config": {"total_steps": 100},
    }
    return Evaluation(costs=(prepare, cost), step_seconds=_seconds(batch, shrink), detail=detail)


class ToyBackend(StandardBackend):
    """The tests' trainer on the standard defaults: nothing to prepare, no image, no
    resume, no interrupt caught, no file rule (:mod:`kura.backends.standard`)."""

    name = "toy-trainer"
    samples_during_training = False
    title = "Toy trainer"
    release = "1.0"

    def serves(self, architecture: str) -> bool:
        return architecture == "zimage"

    def sample_prompt(self, text: str, *, width: int, height: int) -> str:
        return f"{text} [{width}x{height}]"

    def draft_config(self, bundle: Bundle, explicit: Mapping[str, object]) -> DraftedConfig:
        return DraftedConfig({"batch": 2}, {"batch": "adapter default (the toy's own)"})

    def knowledge(self, architecture: str) -> TrainerKnowledge:
        """The run schema's defaults, as the toy's own (it reads only a few of them)."""
        from kura.backends.knowledge_data import recipe_keys
        from kura.schema.run import TrainingSection

        if not self.serves(architecture):
            raise Unsupported(f"the toy trainer does not train {architecture}", hint="zimage")
        defaults: dict[str, KnownValue] = {}
        for key in recipe_keys():
            node: object = TrainingSection()
            for part in key.removeprefix("training.").split("."):
                node = getattr(node, part)
            defaults[key] = KnownValue(node, "the toy trainer (tests/backends/toy/toy_trainer.py)")
        baseline = {
            "training.learning_rate": KnownValue(1e-4, "the toy trainer's own card"),
            "training.network.rank": KnownValue(32, "the toy trainer's own card"),
        }
        return TrainerKnowledge(self.name, architecture, defaults, {"all": baseline})

    def tasks(self, bundle: Bundle) -> tuple[str, ...]:
        """Image tasks on a bundle of Musubi's layout (the toy reads single files)."""
        if not self.serves(bundle.architecture) or bundle.backend != "musubi-tuner":
            return ()
        return ("character", "style", "concept")

    def recipe(self, spec: RunSpec, inputs: PlanInputs, compiled_dir: Path) -> TrainerRecipe:
        """toy.json, read back: its steps, batch, rank and learning rate."""
        toy = json.loads((compiled_dir / "toy.json").read_text())
        source = "compiled/toy.json"
        items = (
            RecipeItem("network", f"rank {toy['rank']}", source, {"rank": toy["rank"]}),
            RecipeItem(
                "optimizer",
                f"{toy['optimizer']}, learning rate {toy['learning_rate']:g}",
                source,
                {"optimizer": toy["optimizer"], "learning_rate": toy["learning_rate"]},
            ),
            RecipeItem("schedule", "constant (the toy has no schedule)", source),
            RecipeItem(
                "length",
                f"{toy['steps']} steps",
                source,
                {"steps": toy["steps"]},
                f"{spec.training.max_steps or spec.training.epochs} "
                + ("steps" if spec.training.max_steps else "epochs"),
                None if spec.training.max_steps in (None, toy["steps"]) else "the toy counts steps",
            ),
            RecipeItem("batch", f"batch {toy['batch']}", source, {"batch": toy["batch"]}),
            RecipeItem("precision", "fp32 (the toy computes nothing)", source),
            RecipeItem(
                "memory",
                "shrunk activations" if toy["shrink_activations"] else "no memory aid",
                source,
                {"shrink_activations": toy["shrink_activations"]},
            ),
            RecipeItem("timesteps", "none (the toy draws no timesteps)", source),
        )
        return TrainerRecipe(self.name, (source,), items, total_steps=toy["steps"])

    def loss_labels(self) -> LossLabels:
        return LossLabels("Last loss (toy step line)", "toy step lines", "none (the toy logs none)")

    def config_keys(self, architecture: str) -> frozenset[str]:
        return frozenset({"batch", "shrink_activations", "steps", "step_sleep"})

    def search_keys(self, architecture: str) -> SearchKeys:
        return SEARCH

    def check_settings(self, spec: RunSpec, inputs: PlanInputs) -> None:
        batch = spec.backend.config.get("batch", 2)
        if batch not in (1, 2):
            raise SpecError(f"backend.config.batch {batch!r} is not 1 or 2", hint="toy batch")

    def trainer_dir(self, workspace: Workspace, *, in_container: bool) -> str:
        if in_container:
            raise SpecError("the toy trainer runs on the host only", hint="executor: host")
        return str(TRAINER.parent)

    def check_compiled(self, spec: RunSpec, compiled_dir: Path) -> tuple[str, ...]:
        document = json.loads((compiled_dir / "toy.json").read_text())
        return () if document["steps"] > 0 else ("toy.json: steps must be positive",)

    def doctor(self, workspace: Workspace | None) -> DoctorReport:
        found = TRAINER.is_file()
        finding = Finding(
            "toy trainer",
            "ok" if found else "fail",
            str(TRAINER) if found else f"{TRAINER} is missing",
            "" if found else "restore tests/backends/toy/toy_trainer.py",
        )
        return DoctorReport(self.name, (finding,), {"trainer": str(TRAINER)})

    def setup(
        self,
        workspace: Workspace | None,
        *,
        python: str | None = None,
        source: Path | None = None,
    ) -> TrainerSetup:
        return TrainerSetup(
            self.name, "a script in the tests: nothing to install", TRAINER.is_file(), TRAINER
        )

    def export(
        self, workspace: Workspace, run_id: str, *, epoch: int | None, fmt: str, out: Path | None
    ) -> LoraExport:
        """The toy's LoRA file copied as is to ``export/`` (its layout is its own)."""
        if fmt != "comfyui":
            raise CheckFailed(f"the toy trainer exports only comfyui, not {fmt!r}", hint="toy")
        files = self.outputs(workspace.run_dir(run_id)).lora_files
        if not files:
            raise CheckFailed(f"run {run_id} has no LoRA file yet", hint="launch it first")
        target = out or workspace.run_dir(run_id) / "export" / "toy-comfyui.safetensors"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(files[-1].read_bytes())
        return LoraExport(
            run=run_id,
            epoch=None,
            step=None,
            format=fmt,
            architecture="zimage",
            source=str(files[-1]),
            out=str(target),
            copied=True,
            mode="copy",
            why="the toy's own file loads as is",
            verified_against="nothing (the toy checks no base model)",
            keys=0,
            modules=0,
        )

    def compile(self, spec: RunSpec, inputs: CompileInputs) -> CompiledRun:
        config = spec.backend.config
        unknown = set(config) - self.config_keys(inputs.architecture)
        if unknown:
            raise SpecError(f"unknown backend.config key(s): {sorted(unknown)}", hint="toy keys")
        cache = {
            "datasets": [d.media_dir for d in inputs.datasets],
            "cache_dir": f"{inputs.run_dir}/cache",
        }
        document = {
            "batch": config.get("batch", 2),
            "shrink_activations": bool(config.get("shrink_activations", False)),
            "steps": spec.training.max_steps or int(config.get("steps", 5)),
            "step_sleep": float(config.get("step_sleep", 0.01)),
            "learning_rate": spec.training.learning_rate,
            "rank": spec.training.network.rank,
            "optimizer": spec.training.optimizer,
            "validation": [d.media_dir for d in inputs.validation],
            "controls": [d.control_dir for d in inputs.datasets if d.control_dir],
            "validation_controls": [d.control_dir for d in inputs.validation if d.control_dir],
            "cache_dir": f"{inputs.run_dir}/cache",
            "output_dir": f"{inputs.run_dir}/output",
        }
        path = f"{inputs.run_dir}/compiled/toy.json"
        cache_path = f"{inputs.run_dir}/compiled/toy-cache.json"
        argv = (sys.executable, str(TRAINER))
        steps = (
            Step("prepare", (*argv, "prepare", cache_path), {}, inputs.trainer_dir, kind="cache"),
            Step("train", (*argv, "train", path), {}, inputs.trainer_dir, kind="train"),
        )
        files = {
            "toy.json": json.dumps(document, sort_keys=True) + "\n",
            "toy-cache.json": json.dumps(cache, sort_keys=True) + "\n",
        }
        return CompiledRun(self.name, self.release, files, steps, None)

    def fit(
        self, spec: RunSpec, inputs: PlanInputs, gpu: GpuClass, *, host_ram_gib: float | None
    ) -> PlanFit:
        problem = ToyProblem(gpu, spec.training.network.rank)
        result = walk(problem, host_ram_gib=host_ram_gib)
        settings = problem.settings(result.choice) if result.fits else {}
        reasons = {key: f"fit ladder: {aid}" for aid in AIDS for key in aid.keys}
        document = {
            "kind": "fit-plan",
            "gpu": gpu.id,
            "fits": result.fits,
            "ask_first": result.ask_first,
            "rungs": [rung.to_dict() for rung in result.rungs],
            "recipe_options": [],
            "notes": list(result.notes),
        }
        aid_keys = tuple(key for aid in AIDS for key in aid.keys)
        return PlanFit(gpu.id, result.fits, result.rungs, settings, reasons, document, aid_keys)

    def estimate(self, spec: RunSpec, inputs: PlanInputs, gpu: GpuClass | None) -> Evaluation:
        config = spec.backend.config
        return _evaluation(
            int(config.get("batch", 2)),
            bool(config.get("shrink_activations", False)),
            gpu,
            spec.training.network.rank,
        )

    def contingency(self, spec: RunSpec, inputs: PlanInputs) -> Contingency | None:
        rung = self.remedy(spec.backend.config, step="train", phase="training")
        if rung.get("action") != "enable":
            return None
        return Contingency("out-of-memory in training", rung, {str(rung["key"]): True})

    def failure_config(self, spec: RunSpec, inputs: PlanInputs) -> Mapping[str, object]:
        return dict(spec.backend.config)

    def remedy(self, config: Mapping[str, object], *, step: str, phase: str) -> dict[str, object]:
        if not config.get("shrink_activations"):
            return {"action": "enable", "key": "shrink_activations"}
        return {"action": "change", "key": "gpu", "why": "every toy aid is in use"}

    def diagnose(
        self, log_text: str, *, step: str, exit_code: int | None, config: Mapping[str, object]
    ) -> Diagnosis:
        found = _OOM.findall(log_text)
        if found:
            return Diagnosis(
                "cuda_oom",
                step,
                "the toy ran out of memory",
                found[-1],
                self.remedy(config, step=step, phase="training"),
                "training",
                exit_code,
            )
        return Diagnosis("unknown", step, "toy failed", "", {"action": "read_log"}, None, exit_code)

    def progress(self, log_path: Path) -> StepProgress:
        text = log_path.read_text(errors="replace") if log_path.exists() else ""
        hits = _STEP.findall(text)
        held_out = _VALIDATION.findall(text)
        validation = float(held_out[-1]) if held_out else None
        if not hits:
            return StepProgress(validation_loss=validation)
        step, total, loss = hits[-1]
        return StepProgress(
            step=int(step), total=int(total), loss=float(loss), validation_loss=validation
        )

    def loss_history(self, run_dir: Path, attempts: Sequence[AttemptRef]) -> LossHistory:
        """The ``toy: step i/N loss=x`` lines of each attempt's own train log (the toy
        writes no metrics file and no times: an attempt's log is where its archive put it)."""
        found = []
        for attempt in attempts:
            log = attempt.folder / "logs" / "train.log"
            text = log.read_text(errors="replace") if log.is_file() else ""
            hits = _STEP.findall(text)
            points = tuple(LossPoint(int(step), float(loss)) for step, _, loss in hits)
            if points:
                found.append(AttemptLoss(attempt.number, points, sources=(log,)))
        return LossHistory("loss", "logs/train.log (the toy's step lines)", tuple(found))

    def lora_layout(self, keys: tuple[str, ...], architecture: str) -> str:
        return "musubi"

    def outputs(self, run_dir: Path) -> OutputLayout:
        return OutputLayout(tuple(sorted((run_dir / "output").glob("*.safetensors"))), ())

    def dataset_buckets(self, spec: RunSpec, inputs: PlanInputs) -> tuple[DatasetBuckets, ...]:
        from tests.backends.toy.bucketview import toy_dataset_buckets

        return toy_dataset_buckets(spec, inputs)


BACKEND: Backend = ToyBackend()
