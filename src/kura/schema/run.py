"""The schema of ``runs/<id>/run.yaml``: the recipe, the model, the datasets, and how to run.

The **recipe** (``training``) holds every quality-bearing value. Execution accommodations
(micro-batch, checkpointing, fp8, block swap …) live under ``backend.config`` in the
trainer's own names, each with its reason under ``backend.reasons``. The effective batch is
part of the recipe; the trainer's ``batch_size`` is only the micro-batch.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from kura.schema.base import StrictModel
from kura.schema.cloud import SkyPilotSettings

__all__ = [
    "BackendSection",
    "DatasetUse",
    "ExecutionSection",
    "ModelSection",
    "NetworkSection",
    "RunSpec",
    "TrainingSection",
]


class DatasetUse(StrictModel):
    name: str = Field(description="A dataset registered in this workspace.")
    resolution: list[int] = Field(
        [1024, 1024], min_length=1, max_length=2, description="[W, H] or [side]."
    )
    repeats: int = Field(1, ge=1)
    frames: list[int] | None = Field(None, description="Video target frame counts (4n+1).")
    frame_extraction: Literal["head", "chunk", "slide", "uniform", "full"] | None = Field(
        None, description="How clips are cut from each video; the adapter default when unset."
    )
    frame_stride: int | None = Field(None, ge=1, description="Frame step for `slide`.")
    frame_sample: int | None = Field(None, ge=1, description="Clips per video for `uniform`.")
    max_frames: int | None = Field(None, ge=1, description="Frame cap for `full`.")
    control_resolution: list[int] | None = Field(
        None, min_length=1, max_length=2, description="Control images resized to this area."
    )
    no_resize_control: bool | None = Field(
        None, description="Keep control images at their own size (cropped to the grid)."
    )


class NetworkSection(StrictModel):
    module: str | None = Field(None, description="Trainer network module; filled per architecture.")
    rank: int = Field(16, ge=1, le=1024)
    alpha: float = Field(16.0, gt=0)
    args: list[str] = []


class TrainingSection(StrictModel):
    network: NetworkSection = NetworkSection()
    learning_rate: float = Field(1e-4, gt=0)
    optimizer: str = "adamw8bit"
    optimizer_args: list[str] = []
    scheduler: str = "constant"
    warmup_steps: int = Field(0, ge=0)
    effective_batch: int = Field(1, ge=1, description="micro-batch × accumulation × GPUs.")
    epochs: int | None = Field(16, ge=1)
    max_steps: int | None = Field(None, ge=1)
    seed: int = 42
    timestep_sampling: str | None = None
    discrete_flow_shift: float | None = None
    weighting_scheme: str | None = Field(None, description="Loss weighting over timesteps.")
    min_timestep: int | None = Field(None, ge=0, le=1000)
    max_timestep: int | None = Field(None, ge=0, le=1000)
    preserve_distribution_shape: bool = False
    timestep_boundary: int | None = Field(
        None, ge=0, le=1000, description="Wan 2.2 dual-DiT switch point, an integer 0–1000."
    )
    max_grad_norm: float | None = Field(None, ge=0)
    save_every_n_epochs: int = Field(1, ge=1)
    save_precision: Literal["fp32", "fp16", "bf16"] = Field(
        "fp32", description="Precision of the saved LoRA file."
    )
    sample_prompts: list[str] = Field(
        [], description="Prompt lines (trainer prompt syntax) sampled during training."
    )
    sample_every_n_epochs: int | None = Field(None, ge=1)
    sample_at_first: bool = False

    @model_validator(mode="after")
    def _length_is_set(self) -> TrainingSection:
        if self.epochs is None and self.max_steps is None:
            raise ValueError("set training.epochs or training.max_steps")
        if (
            self.min_timestep is not None
            and self.max_timestep is not None
            and self.min_timestep >= self.max_timestep
        ):
            raise ValueError("training.min_timestep must be below training.max_timestep")
        if self.sample_prompts and self.sample_every_n_epochs is None and not self.sample_at_first:
            raise ValueError(
                "training.sample_prompts needs training.sample_every_n_epochs or sample_at_first"
            )
        return self


class ModelSection(StrictModel):
    base: str = Field(description="A bundle id from `kura model bundles`.")
    paths: dict[str, str] = Field({}, description="role → file, overriding the bundle lookup.")
    root: str | None = Field(
        None,
        description="A local snapshot of the bundle's repository (a pipeline root): each role "
        "not in `paths` is found at its place in it.",
    )
    downloads: dict[str, str] = Field({}, description="role → download source override.")


class BackendSection(StrictModel):
    name: str = Field(
        "musubi-tuner", description="The trainer: a registered backend (`kura model bundles`)."
    )
    config: dict[str, Any] = Field(
        {},
        description=(
            "Accommodations in the trainer's names; the adapter checks each key. "
            "`command` (an argv list) replaces the generated train command."
        ),
    )
    reasons: dict[str, str] = Field({}, description="config key → why it is set.")

    @field_validator("name")
    @classmethod
    def _registered(cls, name: str) -> str:
        from kura.backends.names import backend_names

        if name not in backend_names():
            raise ValueError(f"unknown backend {name!r}; registered: {', '.join(backend_names())}")
        return name

    @model_validator(mode="after")
    def _reasons_name_config_keys(self) -> BackendSection:
        stray = sorted(set(self.reasons) - set(self.config))
        if stray:
            raise ValueError(
                f"backend.reasons names key(s) not set in backend.config: {', '.join(stray)}"
            )
        return self


class ExecutionSection(StrictModel):
    executor: Literal["docker", "host", "skypilot"] = "docker"
    gpus: int = Field(1, ge=1, le=16)
    gpu_class: str | None = Field(
        None, description="The GPU class a plan is for when `kura run plan` is given no --gpu."
    )
    skypilot: SkyPilotSettings | None = Field(
        None, description="This run's SkyPilot settings, over kura.toml's [skypilot]."
    )


class RunSpec(StrictModel):
    id: str
    task: Literal["character", "style", "concept", "paired-edit", "video"] | None = None
    model: ModelSection
    datasets: list[DatasetUse] = Field(min_length=1)
    validation: list[DatasetUse] = Field(
        [],
        description=(
            "Held-out datasets: the trainer reports its loss on them and never trains on "
            "them (a sweep carves them from the training datasets)."
        ),
    )
    training: TrainingSection = TrainingSection()
    backend: BackendSection = BackendSection()
    execution: ExecutionSection = ExecutionSection()
    provenance: dict[str, str] = Field({}, description="value path → where it came from.")
