"""AI-Toolkit behind the seam: :class:`AitkBackend` implements ``kura.backends.base.Backend``.

This module wires the arch table, the job compiler, the (non-)estimate, the aids and the
follower into the protocol's verbs; every AI-Toolkit name lives in this package.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kura.backends.base import (
    AttemptRef,
    CompiledRun,
    CompileInputs,
    Contingency,
    Diagnosis,
    DoctorReport,
    DraftedConfig,
    Evaluation,
    FileRules,
    ImageRecipe,
    ImportedRun,
    LoraExport,
    LossHistory,
    LossLabels,
    OutputLayout,
    PlanFit,
    PlanInputs,
    SearchKeys,
    StepProgress,
    TrainerFacts,
    TrainerKnowledge,
    TrainerRecipe,
    TrainerSetup,
)
from kura.errors import CheckFailed, SpecError

if TYPE_CHECKING:
    from kura.models.bundles import Bundle
    from kura.models.identify import ModelReport
    from kura.planning.gpus import GpuClass
    from kura.spec.run import RunSpec
    from kura.workspace import Workspace

__all__ = ["BACKEND", "AitkBackend"]


class AitkBackend:
    name = "ai-toolkit"
    samples_during_training = True
    title = "AI-Toolkit (ostris)"

    @property
    def release(self) -> str:
        from kura.backends.aitoolkit.archs import AITK_RELEASE

        return AITK_RELEASE

    def serves(self, architecture: str) -> bool:
        from kura.backends.aitoolkit.archs import KURA_ARCHITECTURES

        return architecture in KURA_ARCHITECTURES

    def sample_prompt(self, text: str, *, width: int, height: int) -> str:
        """The prompt as written: compile sizes the samples at the training resolution."""
        return text

    def draft_config(self, bundle: Bundle, explicit: Mapping[str, object]) -> DraftedConfig:
        """No memory aid; text embeddings cached (captions kept, the encoder freed)."""
        from kura.backends.aitoolkit.archs import model_for

        if model_for(bundle.id) is None:
            return DraftedConfig({}, {})
        config: dict[str, object] = {}
        reasons: dict[str, str] = {}
        drafts = {
            "network_type": ("lora", "adapter default (plain LoRA, AI-Toolkit's default type)"),
            "batch_size": (
                1,
                "adapter default (micro-batch 1; accumulation makes the effective batch)",
            ),
            "cache_text_embeddings": (
                True,
                "adapter default (encodes every caption once, then "
                "frees the text encoder; captions are kept)",
            ),
            "gradient_checkpointing": (
                False,
                "adapter default (off until the plan needs it; AI-Toolkit's own default is on)",
            ),
            "save_every_steps": (
                250,
                "adapter default (AI-Toolkit's UI job: save.save_every 250, "
                "ui/src/app/jobs/new/jobConfig.ts:64)",
            ),
            "sample_every_steps": (
                250,
                "adapter default (AI-Toolkit's UI job: sample.sample_every 250, "
                "ui/src/helpers/defaultSamples.ts:5)",
            ),
        }
        for key, (value, why) in drafts.items():
            if f"backend.config.{key}" in explicit:
                continue
            config[key], reasons[key] = value, why
        return DraftedConfig(config, reasons)

    def knowledge(self, architecture: str) -> TrainerKnowledge:
        from kura.backends.aitoolkit.knowledge import aitk_knowledge

        return aitk_knowledge(architecture)

    def tasks(self, bundle: Bundle) -> tuple[str, ...]:
        from kura.backends.aitoolkit.knowledge import aitk_tasks

        return aitk_tasks(bundle)

    def recipe(self, spec: RunSpec, inputs: PlanInputs, compiled_dir: Path) -> TrainerRecipe:
        """The job file's one process, key by key."""
        from kura.backends.aitoolkit.recipe import aitk_recipe

        return aitk_recipe(spec, inputs, compiled_dir)

    def loss_labels(self) -> LossLabels:
        from kura.backends.aitoolkit.recipe import LOSS_LABELS

        return LOSS_LABELS

    def config_keys(self, architecture: str) -> frozenset[str]:
        from kura.backends.aitoolkit.knobs import KNOB_KEYS

        return KNOB_KEYS

    def check_settings(self, spec: RunSpec, inputs: PlanInputs) -> None:
        """AI-Toolkit's settings are checked at compile, by the job file's schema."""
        return None

    def trainer_dir(self, workspace: Workspace, *, in_container: bool) -> str:
        from kura.backends.aitoolkit.container import IMAGE_AITK_DIR

        if in_container:
            return IMAGE_AITK_DIR
        checkout = workspace.config().executor.aitk_checkout
        if not checkout:
            raise SpecError(
                "execution.executor is `host` but kura.toml names no AI-Toolkit checkout",
                hint='set `aitk_checkout = "/path/to/ai-toolkit"` under [executor] in '
                "kura.toml (run.py is started from there, as AI-Toolkit's UI does), or use "
                "execution.executor: docker",
                path=workspace.config_path,
            )
        return checkout

    def trainer_bin(self, workspace: Workspace, *, in_container: bool) -> str | None:
        """None: the step's argv names its executables as compiled."""
        return None

    def search_keys(self, architecture: str) -> SearchKeys:
        from kura.backends.aitoolkit.search import search_keys

        return search_keys(architecture)

    def prepare(self, spec: RunSpec, inputs: CompileInputs) -> TrainerFacts | None:
        """AI-Toolkit is not installed here: everything compile needs is Kura's own data."""
        return None

    def check_compiled(self, spec: RunSpec, compiled_dir: Path) -> tuple[str, ...]:
        """AI-Toolkit ships no validator; the job file is checked by its pydantic schema
        at compile (and by AI-Toolkit's own config classes in the opt-in test)."""
        return ()

    def compile(self, spec: RunSpec, inputs: CompileInputs) -> CompiledRun:
        from kura.backends.aitoolkit.compile import compile_run

        return compile_run(spec, inputs)

    def fit(
        self, spec: RunSpec, inputs: PlanInputs, gpu: GpuClass, *, host_ram_gib: float | None
    ) -> PlanFit:
        from kura.backends.aitoolkit.fit import fit_run

        return fit_run(spec, inputs, gpu, host_ram_gib=host_ram_gib)

    def estimate(self, spec: RunSpec, inputs: PlanInputs, gpu: GpuClass | None) -> Evaluation:
        from kura.backends.aitoolkit.fit import estimate_run

        return estimate_run(spec, inputs, gpu)

    def contingency(self, spec: RunSpec, inputs: PlanInputs) -> Contingency | None:
        from kura.backends.aitoolkit.fit import contingency_for

        return contingency_for(spec, inputs)

    def failure_config(self, spec: RunSpec, inputs: PlanInputs) -> Mapping[str, object]:
        from kura.backends.aitoolkit.fit import failure_config

        return failure_config(spec, inputs)

    def remedy(self, config: Mapping[str, object], *, step: str, phase: str) -> dict[str, object]:
        from kura.backends.aitoolkit.fit import next_rung

        return next_rung(config, step=step, phase=phase)

    def resume_arguments(self, run_dir: Path, *, trainer_run_dir: str) -> tuple[str, ...]:
        """AI-Toolkit resumes by itself from the newest checkpoint of the run's name: no
        argument, but there must be a checkpoint to resume from."""
        from kura.backends.aitoolkit.follow import lora_checkpoints

        if not lora_checkpoints(run_dir / "output", run_dir.name):
            raise CheckFailed(
                f"run {run_dir.name} has no AI-Toolkit checkpoint to resume from",
                hint="checkpoints are saved every save_every steps; relaunch to start over",
            )
        return ()

    def diagnose(
        self, log_text: str, *, step: str, exit_code: int | None, config: Mapping[str, object]
    ) -> Diagnosis:
        from kura.backends.aitoolkit.diagnose import diagnose_text

        return diagnose_text(log_text, step=step, exit_code=exit_code, config=config)

    def loss_history(self, run_dir: Path, attempts: Sequence[AttemptRef]) -> LossHistory:
        """``loss/loss`` and ``learning_rate`` of AI-Toolkit's ``output/loss_log.db``."""
        from kura.backends.aitoolkit.losses import loss_history

        return loss_history(run_dir, attempts)

    def stopped(self, log_text: str, *, step: str, exit_code: int | None) -> bool:
        from kura.backends.aitoolkit.diagnose import stopped

        return stopped(log_text, exit_code)

    def lora_layout(self, keys: tuple[str, ...], architecture: str) -> str:
        from kura.backends.aitoolkit.lora import key_style

        return key_style(keys, architecture)

    def import_job(self, path: Path) -> ImportedRun:
        from kura.backends.aitoolkit.importing import import_job

        return import_job(path)

    def progress(self, log_path: Path) -> StepProgress:
        from kura.backends.aitoolkit.follow import tail_progress

        return tail_progress(log_path)

    def doctor(self, workspace: Workspace | None) -> DoctorReport:
        """GPUs, Docker and its GPU runtime, the AI-Toolkit image's release (and the host
        checkout when kura.toml names one)."""
        from kura.backends.aitoolkit.doctor import aitk_doctor

        return aitk_doctor(workspace)

    def setup(
        self,
        workspace: Workspace | None,
        *,
        python: str | None = None,
        source: Path | None = None,
    ) -> TrainerSetup:
        """An image Kura builds, or a checkout kura.toml names for the host executor."""
        from kura.backends.aitoolkit.doctor import CHECKOUT_MARKER

        checkout = workspace.config().executor.aitk_checkout if workspace else None
        path = Path(checkout).expanduser() if checkout else None
        return TrainerSetup(
            backend=self.name,
            how="a Docker image: `kura image build ai-toolkit --run` (or a checkout at the "
            f"pinned commit {self.release} for the host executor: kura.toml "
            "executor.aitk_checkout)",
            present=None if path is None else (path / CHECKOUT_MARKER).exists(),
            path=path,
            source="kura.toml" if path else None,
        )

    def image(self, workspace: Workspace | None) -> ImageRecipe:
        """``docker/Dockerfile`` of this package, at the pinned commit."""
        from kura.backends.aitoolkit.container import image_recipe

        return image_recipe()

    def export(
        self,
        workspace: Workspace,
        run_id: str,
        *,
        epoch: int | None,
        fmt: str,
        out: Path | None,
    ) -> LoraExport:
        """Kura's converter, reading AI-Toolkit's PEFT files back (:meth:`lora_layout`)."""
        from kura.export.exporting import export_run

        return export_run(workspace, run_id, epoch=epoch, fmt=fmt, out=out)

    def file_rules(self, report: ModelReport, architecture: str | None) -> FileRules:
        """AI-Toolkit documents no rule refusing a base-model file by its precision: it
        loads the weights and quantises them itself (``model.quantize``/``qtype``)."""
        return FileRules()

    def outputs(self, run_dir: Path) -> OutputLayout:
        from kura.backends.aitoolkit.follow import outputs

        return outputs(run_dir)


BACKEND = AitkBackend()
