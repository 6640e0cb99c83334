"""AI-Toolkit behind the seam: :class:`AitkBackend` implements ``kura.backends.base.Backend``.

This module wires the arch table, the job compiler, the (non-)estimate, the aids and the
follower into the protocol's verbs; every AI-Toolkit name lives in this package.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from kura.backends.aitoolkit.archs import AITK_COMMIT
from kura.backends.base import (
    AttemptRef,
    CompiledRun,
    CompileInputs,
    Contingency,
    DatasetBuckets,
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
    ResumeRule,
    SearchKeys,
    StepProgress,
    TrainerFacts,
    TrainerKnowledge,
    TrainerRecipe,
    TrainerSetup,
)
from kura.errors import InvalidInput

if TYPE_CHECKING:
    from kura.backends.trainer_env import EnvLocation
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
        """Every compile rule that needs only run.yaml and the bundle (:func:`.compile.
        check_run`, the one compile applies first): ``kura run new`` refuses what compile
        would refuse, a bundle laid out for another trainer named with the right one. A
        refusal is a SpecError, as ``run new`` expects of a value run.yaml must change (it
        then drops prompts it drafted itself rather than fail)."""
        from kura.backends.aitoolkit.compile import check_run
        from kura.errors import SpecError, Unsupported

        try:
            check_run(spec, inputs.bundle.id, inputs.bundle.architecture)
        except Unsupported as refusal:
            raise SpecError(refusal.message, hint=refusal.hint) from None

    def trainer_dir(self, workspace: Workspace, *, in_container: bool) -> str:
        """The image's AI-Toolkit folder, or the checkout the environment was installed for
        (its ``kura-env.json``): ``run.py`` starts from there, as AI-Toolkit's UI does."""
        from kura.backends.aitoolkit.container import IMAGE_AITK_DIR
        from kura.backends.aitoolkit.env import installed_checkout, workspace_env

        if in_container:
            return IMAGE_AITK_DIR
        return str(installed_checkout(workspace_env(workspace)))

    def trainer_bin(self, workspace: Workspace, *, in_container: bool) -> str | None:
        """The environment's ``bin`` folder (host), so the approved argv names its Python;
        None in the image (its PATH has the image's venv first)."""
        from kura.backends.aitoolkit.env import workspace_env

        if in_container:
            return None
        return str(workspace_env(workspace).bin_dir)

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
        argument, but there must be a whole save to resume from (both experts' files of
        a Wan 2.2 A14B save, :func:`.follow.resume_save`)."""
        from kura.backends.aitoolkit.follow import resume_save

        resume_save(run_dir / "output", run_dir.name)
        return ()

    def resume_rule(self, run_id: str) -> ResumeRule:
        """No argument: AI-Toolkit resumes by itself from the newest ``<name>*.safetensors``
        of its ``save_root`` (``get_latest_save_path``,
        jobs/process/BaseSDTrainProcess.py:823-838), the run's ``output/`` named for the run."""
        return ResumeRule(f"output/{run_id}*.safetensors", ())

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
        """GPUs, Docker and its GPU runtime, the AI-Toolkit image's release; the host
        executor's environment as a job uses it (torch and every extension import); the
        checkout kura.toml names, when it names one."""
        from kura.backends.aitoolkit.doctor import aitk_doctor

        return aitk_doctor(workspace)

    def setup(
        self,
        workspace: Workspace | None,
        *,
        python: str | None = None,
        source: Path | None = None,
    ) -> TrainerSetup:
        """A virtual environment of its own, made from an AI-Toolkit checkout (``source``,
        else kura.toml's ``aitk_checkout``) with the pins of :mod:`.env`; without a checkout
        Kura cannot install it and says how it comes instead. Only looks (and checks the
        checkout it was given)."""
        from kura.backends.aitoolkit.env import (
            INSTALL_SIZE,
            env_record,
            install_commands,
            validate_source,
            workspace_env,
        )

        location = workspace_env(workspace)
        base = TrainerSetup(
            backend=self.name,
            how="a virtual environment of its own, made from an AI-Toolkit checkout at commit "
            f"{AITK_COMMIT[:7]}: `kura backend install ai-toolkit --source DIR` (or set "
            "kura.toml executor.aitk_checkout), for the host executor; or a Docker image: "
            "`kura image build ai-toolkit --run`",
            present=_installed(location),
            path=location.path,
            source=location.source,
            python=str(location.python),
            size=INSTALL_SIZE,
        )
        checkout = source if source is not None else _toml_checkout(workspace)
        if checkout is None:
            return replace(base, needs_source=True)
        folder = validate_source(checkout)
        return replace(
            base,
            install=install_commands(location, python, remove_triton=not _has_gpu()),
            checkout=folder,
            record=env_record(folder),
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
        """Kura's converter, reading AI-Toolkit's PEFT files back (:meth:`lora_layout`); an
        SDXL LoRA for ComfyUI is checked against the base UNet and copied (:mod:`.sdxl_export`)."""
        from kura.export.exporting import export_run
        from kura.models.bundles import get_bundle
        from kura.spec.base import read_spec
        from kura.spec.run import RunSpec

        path = workspace.run_dir(run_id) / "run.yaml"
        if fmt == "comfyui" and path.is_file():  # a missing run: export_run says so
            spec = read_spec(RunSpec, path)
            if get_bundle(spec.model.base).architecture == "sdxl":
                from kura.backends.aitoolkit.sdxl_export import export_sdxl

                return export_sdxl(workspace, spec, epoch=epoch, out=out)
        return export_run(workspace, run_id, epoch=epoch, fmt=fmt, out=out)

    def file_rules(self, report: ModelReport, architecture: str | None) -> FileRules:
        """AI-Toolkit documents no rule refusing a base-model file by its precision: it
        loads the weights and quantises them itself (``model.quantize``/``qtype``)."""
        return FileRules()

    def outputs(self, run_dir: Path) -> OutputLayout:
        from kura.backends.aitoolkit.follow import outputs

        return outputs(run_dir)

    def dataset_buckets(self, spec: RunSpec, inputs: PlanInputs) -> tuple[DatasetBuckets, ...]:
        from kura.backends.aitoolkit.buckets import aitk_dataset_buckets

        return aitk_dataset_buckets(spec, inputs)


def _installed(location: EnvLocation) -> bool:
    """The environment's Python is there and its record says Kura installed AI-Toolkit."""
    from kura.backends.trainer_env import read_env_record

    if not location.present:
        return False
    try:
        record = read_env_record(location)
    except InvalidInput:
        return False
    return record is not None and record.backend == "ai-toolkit" and bool(record.checkout)


def _toml_checkout(workspace: Workspace | None) -> Path | None:
    """kura.toml's ``aitk_checkout`` (relative to the workspace), the default --source."""
    raw = workspace.config().executor.aitk_checkout if workspace is not None else None
    if not raw:
        return None
    path = Path(raw).expanduser()
    return path if path.is_absolute() or workspace is None else workspace.root / path


def _has_gpu() -> bool:
    from kura.planning.detect import detect_gpus

    return bool(detect_gpus())


BACKEND = AitkBackend()
