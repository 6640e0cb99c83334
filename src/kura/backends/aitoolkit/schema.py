"""The job file Kura writes for AI-Toolkit, as a typed schema.

Only keys that AI-Toolkit's config classes read (ostris/ai-toolkit 27a03a9,
``toolkit/config_modules.py`` for the sections, ``jobs/process/Base*Process.py`` for the
process scalars, ``toolkit/job.py``/``jobs/BaseJob.py`` for the top). AI-Toolkit itself
reads everything with ``dict.get(default)``: a misspelled key is ignored, a quoted
``"false"`` is true, a ``null`` replaces a default. Here every model forbids extra keys and
is strict, and an unset key is left out of the file rather than written as ``null``
(:func:`job_document`). ``tests/backends/aitoolkit/test_against_trainer.py`` loads the
golden files with AI-Toolkit's own loader and fails on any key it does not read.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "DatasetSection",
    "JobConfig",
    "JobFile",
    "LoggingSection",
    "ModelSection",
    "NetworkSection",
    "ProcessSection",
    "SampleItem",
    "SampleSection",
    "SaveSection",
    "TrainSection",
    "job_document",
]

NetworkType = Literal["lora", "lokr", "dora", "locon"]
"""The network types ``toolkit/network_mixins.py``/``lora_special.py`` tell apart; any other
string silently builds a plain LoRA there, so Kura refuses it before writing."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class NetworkSection(_Strict):
    """``NetworkConfig``."""

    type: NetworkType
    linear: int = Field(ge=1)
    linear_alpha: float | None = Field(
        None, description="Read only on non-PEFT (legacy UNet) models; PEFT sets alpha = rank."
    )
    conv: int | None = Field(None, ge=1)
    conv_alpha: float | None = None
    dropout: float | None = Field(None, ge=0, lt=1)
    lokr_full_rank: bool | None = None
    lokr_factor: int | None = None
    transformer_only: bool = True


class SaveSection(_Strict):
    """``SaveConfig``."""

    dtype: Literal["float32", "float16", "bf16"]
    save_every: int = Field(ge=1)
    max_step_saves_to_keep: int = Field(ge=1)
    save_format: Literal["safetensors"] = "safetensors"


class DatasetSection(_Strict):
    """``DatasetConfig`` (one per resolution: Kura writes a single int)."""

    folder_path: str
    caption_ext: str
    resolution: int = Field(ge=64)
    num_repeats: int = Field(ge=1)
    cache_latents_to_disk: bool
    cache_text_embeddings: bool | None = None
    control_path: str | None = None
    num_frames: int | None = Field(None, ge=1)
    fps: int | None = Field(None, ge=1)


class TrainSection(_Strict):
    """``TrainConfig``."""

    steps: int = Field(ge=1)
    batch_size: int = Field(ge=1)
    gradient_accumulation: int = Field(ge=1)
    lr: float = Field(gt=0)
    optimizer: str
    optimizer_params: dict[str, Any] | None = None
    lr_scheduler: str
    lr_scheduler_params: dict[str, Any] | None = None
    dtype: Literal["bf16", "fp16", "fp32"]
    gradient_checkpointing: bool
    train_unet: bool = True
    train_text_encoder: bool = False
    cache_text_embeddings: bool | None = None
    unload_text_encoder: bool | None = None
    timestep_type: str | None = None
    max_grad_norm: float | None = Field(None, ge=0)
    skip_first_sample: bool
    disable_sampling: bool


class ModelSection(_Strict):
    """``ModelConfig``."""

    name_or_path: str
    arch: str
    quantize: bool
    qtype: str | None = None
    quantize_te: bool
    qtype_te: str | None = None
    low_vram: bool
    layer_offloading: bool | None = None
    layer_offloading_transformer_percent: float | None = Field(None, ge=0, le=1)
    layer_offloading_text_encoder_percent: float | None = Field(None, ge=0, le=1)
    model_kwargs: dict[str, Any] | None = None


class SampleItem(_Strict):
    """``SampleItem``: ``ctrl_img`` is the control image the model class opens."""

    prompt: str
    ctrl_img: str | None = None


class SampleSection(_Strict):
    """``SampleConfig``."""

    sample_every: int = Field(ge=1)
    width: int = Field(ge=64)
    height: int = Field(ge=64)
    seed: int
    walk_seed: bool
    guidance_scale: float = Field(ge=0)
    sample_steps: int = Field(ge=1)
    neg: str = Field(
        description="The negative prompt; SampleConfig's default False becomes the text "
        "'False' in the prompt (config_modules.py:86)."
    )
    samples: list[SampleItem]
    num_frames: int | None = Field(None, ge=1)


class LoggingSection(_Strict):
    """``LoggingConfig``: ``loss_log.db`` on every step (the follower reads it)."""

    log_every: int = Field(ge=1)
    use_ui_logger: bool
    use_wandb: bool = False


class ProcessSection(_Strict):
    """One ``diffusion_trainer`` process (``extensions_built_in/sd_trainer/__init__.py``):
    SDTrainer with optional UI-database updates that stay off without ``AITK_JOB_ID``."""

    type: Literal["diffusion_trainer"]
    name: str = Field(description="Sets the save folder (save_root = training_folder/name).")
    training_folder: str
    training_seed: int
    trigger_word: str | None = Field(
        None,
        description="Written only with unload_text_encoder: the one prompt AI-Toolkit "
        "encodes and trains on (SDTrainer.py:359, :1680-1684); it is also each dataset's "
        "trigger (BaseSDTrainProcess.py:168-169).",
    )
    network: NetworkSection
    save: SaveSection
    datasets: list[DatasetSection] = Field(min_length=1)
    train: TrainSection
    model: ModelSection
    sample: SampleSection | None = None
    logging: LoggingSection


class JobConfig(_Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
    process: list[ProcessSection] = Field(min_length=1, max_length=1, description="One process.")


class JobFile(_Strict):
    job: Literal["extension"]
    config: JobConfig
    meta: dict[str, str]


def job_document(job: JobFile) -> dict[str, Any]:
    """The job as plain data in schema order, unset keys left out (never ``null``)."""
    document: dict[str, Any] = job.model_dump(mode="json", exclude_none=True)
    return document
