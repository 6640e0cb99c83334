"""AI-Toolkit behind the seam: :class:`AitkBackend` implements ``kura.backends.base.Backend``.

This module wires the arch table, the job compiler, the (non-)estimate, the aids and the
follower into the protocol's verbs; every AI-Toolkit name lives in this package.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kura.backends.aitoolkit.archs import AITK_COMMIT
from kura.backends.base import (
    AttemptRef,
    Backend,
    CompiledRun,
    CompileInputs,
    Contingency,
    DatasetBuckets,
    Diagnosis,
    DraftedConfig,
    Evaluation,
    Finding,
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
    TrainerKnowledge,
    TrainerRecipe,
)
from kura.backends.standard import CheckoutBackend, CheckoutInstall
from kura.errors import InvalidInput

if TYPE_CHECKING:
    from kura.backends.trainer_env import EnvLocation, EnvRecord
    from kura.models.bundles import Bundle
    from kura.planning.gpus import GpuClass
    from kura.schema.run import RunSpec
    from kura.workspace import Workspace

__all__ = ["BACKEND", "AitkBackend"]


class AitkBackend(CheckoutBackend):
    """AI-Toolkit's own verbs; the defaults it keeps (:mod:`kura.backends.standard`): the
    prompt as written (compile sizes the samples at the training resolution), nothing to
    prepare (AI-Toolkit is not installed here: compile needs only Kura's data), no
    validator (the job file is checked by its pydantic schema at compile, and by
    AI-Toolkit's own config classes in the conformance matrix), no file rule by precision
    (it loads the weights and quantises them itself: ``model.quantize``/``qtype``), and the
    image-or-checkout ``doctor`` and ``setup``."""

    name = "ai-toolkit"
    title = "AI-Toolkit (ostris)"

    @property
    def install(self) -> CheckoutInstall:
        from kura.backends.aitoolkit.env import CHECKOUT_MARKER, INSTALL_SIZE

        return CheckoutInstall(
            command="ai-toolkit",
            toml_key="aitk_checkout",
            marker=CHECKOUT_MARKER,
            trainer="an AI-Toolkit",
            pinned=f"commit {AITK_COMMIT[:7]}",
            image_title="AI-Toolkit",
            size=INSTALL_SIZE,
        )

    @property
    def release(self) -> str:
        from kura.backends.aitoolkit.archs import AITK_RELEASE

        return AITK_RELEASE

    def serves(self, architecture: str) -> bool:
        from kura.backends.aitoolkit.archs import KURA_ARCHITECTURES

        return architecture in KURA_ARCHITECTURES

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

    def environment(self, workspace: Workspace | None) -> EnvLocation:
        from kura.backends.aitoolkit.env import workspace_env

        return workspace_env(workspace)

    def environment_findings(
        self, workspace: Workspace | None
    ) -> tuple[list[Finding], dict[str, str]]:
        """The environment as a job uses it: its record's checkout, torch and every
        extension imported through AI-Toolkit's own ``get_all_extensions`` (:mod:`.doctor`)."""
        from kura.backends.aitoolkit.doctor import env_findings

        return env_findings(self.environment(workspace), runner=subprocess.run)

    def installed(self, location: EnvLocation) -> bool:
        """The environment's Python is there and its record says Kura installed AI-Toolkit
        (a damaged record is not an install)."""
        from kura.backends.trainer_env import read_env_record

        if not location.present:
            return False
        try:
            record = read_env_record(location)
        except InvalidInput:
            return False
        return record is not None and record.backend == self.name and bool(record.checkout)

    def check_source(self, folder: Path) -> Path:
        from kura.backends.aitoolkit.env import validate_source

        return validate_source(folder)

    def install_commands(
        self, location: EnvLocation, checkout: Path, python: str | None
    ) -> tuple[tuple[str, ...], ...]:
        """The pins of :mod:`.env`; triton removed on a machine without a GPU."""
        from kura.backends.aitoolkit.env import install_commands

        return install_commands(location, python, remove_triton=not _has_gpu())

    def env_record(self, checkout: Path) -> EnvRecord:
        from kura.backends.aitoolkit.env import env_record

        return env_record(checkout)

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
        from kura.schema.base import read_spec
        from kura.schema.run import RunSpec

        path = workspace.run_dir(run_id) / "run.yaml"
        if fmt == "comfyui" and path.is_file():  # a missing run: export_run says so
            spec = read_spec(RunSpec, path)
            if get_bundle(spec.model.base).architecture == "sdxl":
                from kura.backends.aitoolkit.sdxl_export import export_sdxl

                return export_sdxl(workspace, spec, epoch=epoch, out=out)
        return export_run(workspace, run_id, epoch=epoch, fmt=fmt, out=out)

    def outputs(self, run_dir: Path) -> OutputLayout:
        from kura.backends.aitoolkit.follow import outputs

        return outputs(run_dir)

    def dataset_buckets(self, spec: RunSpec, inputs: PlanInputs) -> tuple[DatasetBuckets, ...]:
        from kura.backends.aitoolkit.buckets import aitk_dataset_buckets

        return aitk_dataset_buckets(spec, inputs)


def _has_gpu() -> bool:
    from kura.planning.detect import detect_gpus

    return bool(detect_gpus())


BACKEND: Backend = AitkBackend()
