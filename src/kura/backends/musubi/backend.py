"""Musubi Tuner behind the seam: :class:`MusubiBackend` implements ``kura.backends.base.Backend``.

Every Musubi flag name Kura knows lives in this package; this module only wires the adapter
table, the compiler, the estimator and the remedies into the protocol's verbs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

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
    FileRules,
    Finding,
    ImageRecipe,
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
)
from kura.backends.standard import CheckoutBackend, CheckoutInstall
from kura.errors import CheckFailed

if TYPE_CHECKING:
    from kura.backends.musubi.adapter_model import Adapter
    from kura.backends.trainer_env import EnvLocation, EnvRecord
    from kura.models.bundles import Bundle
    from kura.models.identify import ModelReport
    from kura.planning.gpus import GpuClass
    from kura.schema.run import RunSpec
    from kura.workspace import Workspace

__all__ = ["BACKEND", "MusubiBackend"]

LADDER_REASON = "fit ladder"

_AID_OF_KEY = {
    "fp8_base": "fp8",
    "fp8_scaled": "fp8",
    "gradient_checkpointing": "gradient-checkpointing",
    "gradient_checkpointing_cpu_offload": "activation-offload",
    "batch_size": "micro-batch",
    "gradient_accumulation_steps": "micro-batch",
    "blocks_to_swap": "block-swap",
    "block_swap_h2d_only": "block-swap",
    "block_swap_ring_size": "block-swap",
    "use_pinned_memory_for_block_swap": "block-swap",
    "split_attn": "split-attention",
}
"""Which ladder aid sets each backend.config key (for the key's reason)."""


class MusubiBackend(CheckoutBackend):
    """Musubi's own verbs; the defaults it keeps (:mod:`kura.backends.standard`): no check
    of the compiled files here (its parser conformance is pinned by the tests, its own
    checks run at launch), no interrupt caught (a stopped step never exits 0), Kura's
    converter for ``export``, and the image-or-checkout ``doctor`` and ``setup``."""

    name = "musubi-tuner"
    title = "Musubi Tuner"

    @property
    def install(self) -> CheckoutInstall:
        from kura.backends.musubi.adapters import MUSUBI_RELEASE
        from kura.backends.musubi.env import CHECKOUT_MARKER, INSTALL_SIZE

        return CheckoutInstall(
            command="musubi",
            toml_key="musubi_checkout",
            marker=CHECKOUT_MARKER,
            trainer="a Musubi Tuner",
            pinned=f"Musubi {MUSUBI_RELEASE}",
            image_title="Musubi",
            size=INSTALL_SIZE,
        )

    @property
    def release(self) -> str:
        from kura.backends.musubi.adapters import MUSUBI_RELEASE

        return MUSUBI_RELEASE

    def serves(self, architecture: str) -> bool:
        from kura.backends.musubi.adapters import adapter_for

        return adapter_for(architecture) is not None

    def sample_prompt(self, text: str, *, width: int, height: int) -> str:
        """Musubi's prompt options ``--w``/``--h``: without them its samplers render 256×256
        (e.g. ``qwen_image_train_network.py``: ``prompt_dict.get("width", 256)``), too small
        to judge a LoRA trained at ``width``×``height``. ``text`` stays text: option syntax
        in it is escaped, or refused (SpecError) where Musubi would still read an option
        (:func:`kura.backends.musubi.prompts.drafted_line`)."""
        from kura.backends.musubi.prompts import drafted_line

        return drafted_line(text, width=width, height=height)

    def draft_config(self, bundle: Bundle, explicit: Mapping[str, object]) -> DraftedConfig:
        """The adapter's execution settings, written out with their sources as reasons."""
        from kura.backends.musubi.adapters import adapter_for
        from kura.backends.musubi.config import known_keys

        adapter = adapter_for(bundle.architecture)
        if adapter is None:
            return DraftedConfig({}, {})
        known = known_keys(adapter)
        config: dict[str, object] = {}
        reasons: dict[str, str] = {}
        for name, default in sorted(adapter.defaults.items()):
            if name not in known or f"backend.config.{name}" in explicit:
                continue
            config[name] = default.value
            reasons[name] = f"adapter default ({default.source})"
        _match_weight_dtype(adapter, bundle, explicit, config, reasons)
        _split_effective_batch(explicit, config, reasons)
        return DraftedConfig(config, reasons)

    def knowledge(self, architecture: str) -> TrainerKnowledge:
        from kura.backends.musubi.knowledge import musubi_knowledge

        return musubi_knowledge(architecture)

    def tasks(self, bundle: Bundle) -> tuple[str, ...]:
        from kura.backends.musubi.knowledge import musubi_tasks

        return musubi_tasks(bundle)

    def recipe(self, spec: RunSpec, inputs: PlanInputs, compiled_dir: Path) -> TrainerRecipe:
        """The train step's argv and dataset.toml, flag by flag."""
        from kura.backends.musubi.recipe import musubi_recipe

        return musubi_recipe(spec, inputs, compiled_dir)

    def loss_labels(self) -> LossLabels:
        from kura.backends.musubi.recipe import LOSS_LABELS

        return LOSS_LABELS

    def config_keys(self, architecture: str) -> frozenset[str]:
        from kura.backends.musubi.adapters import adapter_for
        from kura.backends.musubi.config import known_keys

        return frozenset(known_keys(adapter_for(architecture)))

    def search_keys(self, architecture: str) -> SearchKeys:
        from kura.backends.musubi.search import search_keys

        return search_keys(architecture)

    def check_settings(self, spec: RunSpec, inputs: PlanInputs) -> None:
        """Musubi's own limits through the estimator's validation of the run as written
        (block-swap count, fp8 modes, attention): InvalidInput naming the value; sample
        prompts an image-to-video model cannot sample from (no ``--i``): SpecError."""
        from kura.backends.musubi.adapters import adapter_for
        from kura.backends.musubi.rules import check_sample_images, select_variant

        self.estimate(spec, inputs, None)
        adapter = adapter_for(inputs.bundle.architecture)
        if adapter is not None:
            trainer = inputs.bundle.trainer
            version = next(
                (str(trainer[k]) for k in ("model_version", "task", "model_type") if k in trainer),
                None,
            )
            check_sample_images(spec, adapter, select_variant(adapter, version))

    def trainer_dir(self, workspace: Workspace, *, in_container: bool) -> str:
        """The image's Musubi folder, or on the host the checkout the installed environment
        was made from (its ``kura-env.json``); SpecError saying how to install it."""
        from kura.backends.musubi.container import IMAGE_MUSUBI_DIR
        from kura.backends.musubi.env import host_trainer

        if in_container:
            return IMAGE_MUSUBI_DIR
        return str(host_trainer(workspace).checkout)

    def trainer_bin(self, workspace: Workspace, *, in_container: bool) -> str | None:
        """None in the image (its PATH has ``python`` and ``accelerate``); on the host the
        environment's executables folder, so the argv names them by full path."""
        from kura.backends.musubi.env import host_trainer

        if in_container:
            return None
        return str(host_trainer(workspace).bin_dir)

    def prepare(self, spec: RunSpec, inputs: CompileInputs) -> TrainerFacts | None:
        """The Qwen-Image DiT's block count from its header, where Kura can read the file
        (the adapter table holds every other fact Musubi's compile needs)."""
        from kura.backends.musubi.depth import dit_depth

        return dit_depth(inputs)

    def compile(self, spec: RunSpec, inputs: CompileInputs) -> CompiledRun:
        from kura.backends.musubi.compile import compile_run

        return compile_run(spec, inputs)

    def fit(
        self, spec: RunSpec, inputs: PlanInputs, gpu: GpuClass, *, host_ram_gib: float | None
    ) -> PlanFit:
        from kura.backends.musubi.estimation import (
            LADDER_KEYS,
            estimate_config,
            person_set,
            step_setup,
        )
        from kura.backends.musubi.fit import config_changes, fastest_fitting

        setup = step_setup(spec, inputs.bundle, inputs.datasets, inputs.media)
        plan = fastest_fitting(
            estimate_config(spec, inputs.datasets, inputs.media, _model_paths(inputs)),
            gpu,
            host_ram_gib=host_ram_gib,
            setup=setup,
            fixed_micro_batch=any(
                person_set(spec, key) for key in ("batch_size", "gradient_accumulation_steps")
            ),
        )
        wanted = {**config_changes(plan.config), **plan.step_settings} if plan.fits else {}
        managed = (*LADDER_KEYS, *plan.step_settings)
        rung_reasons = {rung.aid: rung.reason for rung in plan.rungs}
        aid_of = dict(_AID_OF_KEY)
        if setup.te_fp8_key:
            aid_of[setup.te_fp8_key] = "text-encoder-fp8"
        aid_of.update(vae_chunk_size="vae-chunking", vae_tiling="vae-chunking")
        reasons = {
            key: f"{LADDER_REASON}: {rung_reasons.get(aid_of.get(key, key), _PART)}"
            if value
            else f"{LADDER_REASON}: not needed on this GPU"
            for key, value in wanted.items()
            if key in managed
        }
        return PlanFit(
            gpu=gpu.id,
            fits=plan.fits,
            rungs=plan.rungs,
            settings=wanted,
            reasons=reasons,
            document=plan.to_dict(),
            # the micro-batch is a rung too, but plan.md shows it with the recipe
            aid_keys=tuple(key for key, aid in aid_of.items() if aid != "micro-batch"),
        )

    def estimate(self, spec: RunSpec, inputs: PlanInputs, gpu: GpuClass | None) -> Evaluation:
        from kura.backends.musubi.estimation import estimate_config, step_setup
        from kura.backends.musubi.estimator.estimate import estimate
        from kura.backends.musubi.fit import evaluation_of
        from kura.backends.musubi.report import trainer_section

        found = estimate(
            estimate_config(spec, inputs.datasets, inputs.media, _model_paths(inputs)), gpu
        )
        section = trainer_section(spec, inputs.compile)
        if section is not None:
            found = replace(found, trainer_report=(section,))
        return evaluation_of(found, step_setup(spec, inputs.bundle, inputs.datasets, inputs.media))

    def contingency(self, spec: RunSpec, inputs: PlanInputs) -> Contingency | None:
        """The one rung to take if training still runs out of memory: the same next rung
        the failure diagnosis proposes, so relaunch can apply it under this approval."""
        from kura.backends.musubi.diagnose import oom_next_rung
        from kura.backends.musubi.estimation import rung_change

        config = dict(self.failure_config(spec, inputs))
        rung = oom_next_rung(config, step="train", phase="training")
        change = rung_change(rung, config)
        if change is None:
            return None
        change = {k: v for k, v in change.items() if spec.backend.config.get(k) != v}
        return Contingency(on="out-of-memory in training", rung=rung, change=change)

    def failure_config(self, spec: RunSpec, inputs: PlanInputs) -> Mapping[str, object]:
        """backend.config plus the model's block-swap limit, as the diagnosis reads it."""
        from kura.backends.musubi.estimation import swap_limit

        config: dict[str, object] = dict(spec.backend.config)
        if inputs.bundle.estimator_model:
            config["max_blocks_to_swap"] = swap_limit(inputs.bundle.estimator_model, config)
        return config

    def remedy(self, config: Mapping[str, object], *, step: str, phase: str) -> dict[str, object]:
        from kura.backends.musubi.diagnose import oom_next_rung

        return oom_next_rung(dict(config), step=step, phase=phase)

    def resume_arguments(self, run_dir: Path, *, trainer_run_dir: str) -> tuple[str, ...]:
        """``--resume`` with the newest ``--save_state`` folder of the run's output."""
        states = sorted(
            (p for p in (run_dir / "output").glob("*-state") if p.is_dir()),
            key=lambda p: p.stat().st_mtime,
        )
        if not states:
            raise CheckFailed(
                f"run {run_dir.name} has no saved trainer state to resume from",
                hint="states are saved with each checkpoint; relaunch to start over",
            )
        return ("--resume", f"{trainer_run_dir}/output/{states[-1].name}")

    def resume_rule(self, run_id: str) -> ResumeRule:
        """``--resume`` with the newest ``*-state`` folder of ``output/`` by modification
        time: Musubi names states by epoch (``{}-{:06d}-state``), by step
        (``{}-step{:08d}-state``) and last (``{}-state``), so no name order holds
        (musubi_tuner/utils/train_utils.py:18-22)."""
        return ResumeRule("output/*-state", ("--resume", "{state}"), newest="mtime")

    def diagnose(
        self, log_text: str, *, step: str, exit_code: int | None, config: Mapping[str, object]
    ) -> Diagnosis:
        from kura.backends.musubi.diagnose import diagnose_text

        return diagnose_text(log_text, step=step, exit_code=exit_code, config=dict(config))

    def progress(self, log_path: Path) -> StepProgress:
        from kura.backends.musubi.progress import tail_progress

        return tail_progress(log_path)

    def loss_history(self, run_dir: Path, attempts: Sequence[AttemptRef]) -> LossHistory:
        """``loss/current`` and the ``lr/…`` scalars of Musubi's TensorBoard files."""
        from kura.backends.musubi.losses import loss_history

        return loss_history(run_dir, attempts)

    def lora_layout(self, keys: tuple[str, ...], architecture: str) -> str:
        """Musubi writes its own layout (``lora_unet_…``), the one export starts from."""
        return "musubi"

    def file_rules(self, report: ModelReport, architecture: str | None) -> FileRules:
        from kura.backends.musubi.file_rules import file_rules

        return file_rules(report, architecture)

    def outputs(self, run_dir: Path) -> OutputLayout:
        output = run_dir / "output"
        loras = sorted(output.glob("*.safetensors"), key=lambda p: p.stat().st_mtime)
        samples = sorted((output / "sample").glob("*.png")) if (output / "sample").is_dir() else []
        return OutputLayout(tuple(loras), tuple(samples))

    def dataset_buckets(self, spec: RunSpec, inputs: PlanInputs) -> tuple[DatasetBuckets, ...]:
        from kura.backends.musubi.bucketview import musubi_dataset_buckets

        return musubi_dataset_buckets(spec, inputs)

    def environment(self, workspace: Workspace | None) -> EnvLocation:
        from kura.backends.musubi.env import musubi_env

        return musubi_env(workspace)

    def environment_findings(
        self, workspace: Workspace | None
    ) -> tuple[list[Finding], dict[str, str]]:
        """The environment, the checkout it names, the pinned packages and every entry
        script Kura's adapters run, imported from the checkout (:mod:`.doctor`)."""
        from kura.backends.musubi.doctor import environment_findings

        location = self.environment(workspace)
        details = {"environment": str(location.path), "source": location.source}
        return environment_findings(workspace), details

    def installed(self, location: EnvLocation) -> bool:
        """The environment is there and its install finished (its record is Musubi's at
        the pinned release); a damaged record raises InvalidInput naming the file."""
        from kura.backends.musubi.adapters import MUSUBI_RELEASE
        from kura.backends.trainer_env import read_env_record

        if not location.present:
            return False
        record = read_env_record(location)
        return (
            record is not None
            and record.backend == self.name
            and record.release == (MUSUBI_RELEASE)
        )

    def check_source(self, folder: Path) -> Path:
        from kura.backends.musubi.env import check_source

        return check_source(folder)

    def install_commands(
        self, location: EnvLocation, checkout: Path, python: str | None
    ) -> tuple[tuple[str, ...], ...]:
        """torch on its own, then Musubi from the checkout (non-editable) with its pins,
        then triton removed (:func:`.env.install_commands`)."""
        from kura.backends.musubi.env import install_commands

        return install_commands(location, checkout, python)

    def env_record(self, checkout: Path) -> EnvRecord:
        from kura.backends.musubi.env import env_record

        return env_record(checkout)

    def image(self, workspace: Workspace | None) -> ImageRecipe:
        """``docker/Dockerfile`` of this package, tagged as kura.toml's ``musubi_image``."""
        from kura.backends.musubi.container import image_recipe

        return image_recipe(workspace)


_PART = "part of the configuration the ladder chose"


BACKEND: Backend = MusubiBackend()


def _split_effective_batch(
    explicit: Mapping[str, object], config: dict[str, object], reasons: dict[str, str]
) -> None:
    """An effective batch a person set is reached by accumulation over the micro-batch
    (``batch_size``, theirs or the adapter's), so the compile's batch check holds; a batch
    the micro-batch does not divide is left for that check to refuse with its fix."""
    wanted = explicit.get("training.effective_batch")
    if wanted is None or "gradient_accumulation_steps" not in config:
        return
    micro = int(str(explicit.get("backend.config.batch_size", config.get("batch_size", 1))))
    gpus = int(str(explicit.get("execution.gpus", 1)))
    effective = int(str(wanted))
    if micro < 1 or effective % (micro * gpus):
        return
    config["gradient_accumulation_steps"] = effective // (micro * gpus)
    reasons["gradient_accumulation_steps"] = (
        f"training.effective_batch {effective} ÷ (micro-batch {micro} × {gpus} GPU(s)); "
        "invariant: the recipe fixes the effective batch"
    )


def _match_weight_dtype(
    adapter: Adapter,
    bundle: Bundle,
    explicit: Mapping[str, object],
    config: dict[str, object],
    reasons: dict[str, str],
) -> None:
    """Wan / HunyuanVideo 1.5 train a DiT only under its own precision
    (wan_train_network.py: "DiT weights are in fp16, mixed precision must be fp16 or no"):
    a bundle whose DiT ships fp16 (Wan 2.2) is drafted at fp16, with that source."""
    from kura.backends.musubi.adapters import MUSUBI_RELEASE

    if adapter.weight_dtype_rule != "match_mixed_precision":
        return
    if "backend.config.mixed_precision" in explicit or "mixed_precision" not in config:
        return
    dtype = next((f.dtype for f in bundle.files if f.slot == "dit"), None)
    if dtype not in ("bf16", "fp16") or config["mixed_precision"] == dtype:
        return
    config["mixed_precision"] = dtype
    reasons["mixed_precision"] = (
        f"bundle {bundle.id}: its DiT ships {dtype} weights, and Musubi {MUSUBI_RELEASE} trains "
        f"{dtype} weights only under mixed precision {dtype} or no ({adapter.id} train script "
        f"asserts it; {adapter.doc})"
    )


def _model_paths(inputs: PlanInputs) -> dict[str, str] | None:
    """The resolved roles of the run's model, when the caller resolved them."""
    if inputs.compile is None:
        return None
    return {role: str(path) for role, path in inputs.compile.model_paths.items()}
