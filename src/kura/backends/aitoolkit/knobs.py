"""``backend.config`` for an AI-Toolkit run: the execution settings, typed and checked.

Names are Kura's own, close to AI-Toolkit's keys; :mod:`.compile` writes them into the job
(``dtype`` and ``offline`` are what a CPU run of a local model wants: ``fp32``, no hub).
Quantization types are the names ``toolkit/util/quantize.py::get_qtype`` resolves
(torchao ``int8``/``float8``, AI-Toolkit's ``uintN``, optimum-quanto ``qfloat8``/``qintN``);
an unknown name would be a KeyError only after the weights load, so it is refused here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from kura.errors import SpecError

__all__ = ["KNOB_KEYS", "QTYPES", "Knobs", "read_knobs"]

QTYPES = (
    "qfloat8",
    "float8",
    "int8",
    "qint8",
    "qint4",
    "uint8",
    "uint7",
    "uint6",
    "uint5",
    "uint4",
    "uint3",
)
"""qtype names Kura writes (AI-Toolkit knows more; these are the ones whose costs Kura states)."""


class Knobs(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    network_type: Literal["lora", "lokr", "dora", "locon"] = Field(
        "lora",
        description="NetworkConfig.type: lora, lokr or dora on every model; locon on SDXL "
        "only (AI-Toolkit's LoCon wraps UNet block classes only, "
        "toolkit/lycoris_special.py:117-122, and builds no module on a DiT: compile "
        "refuses it there).",
    )
    batch_size: int = Field(1, ge=1, description="The micro-batch (× accumulation = effective).")
    cache_text_embeddings: bool = False
    unload_text_encoder: bool = False
    gradient_checkpointing: bool = False
    quantize: bool = False
    qtype: str = "qfloat8"
    accuracy_recovery_adapter: bool = False
    quantize_te: bool = False
    qtype_te: str = "qfloat8"
    low_vram: bool = False
    layer_offloading_transformer_percent: float = Field(0.0, ge=0, le=1)
    layer_offloading_text_encoder_percent: float = Field(0.0, ge=0, le=1)
    save_every_steps: int | None = Field(None, ge=1)
    sample_every_steps: int | None = Field(None, ge=1)
    train_high_noise: bool = True
    train_low_noise: bool = True
    dtype: Literal["bf16", "fp16", "fp32"] = Field(
        "bf16",
        description="train.dtype: the precision AI-Toolkit loads and trains the model in "
        "(model.dtype follows it, BaseSDTrainProcess); on a CPU use fp32 (bf16 runs there "
        "too, but the tiny SDXL took 3.1 s a step against 0.12 s in fp32).",
    )
    offline: bool = Field(
        False,
        description="HF_HUB_OFFLINE=1 and TRANSFORMERS_OFFLINE=1 for the train step. AI-Toolkit "
        "fetches text encoders, VAEs, configs and adapters by repository id at run time, so "
        "set it only when everything it loads is local (a complete diffusers folder).",
    )

    @model_validator(mode="after")
    def _consistent(self) -> Knobs:
        if self.cache_text_embeddings and self.unload_text_encoder:
            raise ValueError(
                "cache_text_embeddings and unload_text_encoder exclude each other: caching "
                "keeps every caption, unloading trains on the trigger word alone"
            )
        for key in ("qtype", "qtype_te"):
            if getattr(self, key) not in QTYPES:
                raise ValueError(f"{key} {getattr(self, key)!r} is not one of {', '.join(QTYPES)}")
        if self.accuracy_recovery_adapter and not self.quantize:
            raise ValueError("accuracy_recovery_adapter needs quantize: true")
        if not (self.train_high_noise or self.train_low_noise):
            raise ValueError("train_high_noise and train_low_noise cannot both be false")
        return self

    @property
    def layer_offloading(self) -> bool:
        return (
            self.layer_offloading_transformer_percent > 0
            or self.layer_offloading_text_encoder_percent > 0
        )


KNOB_KEYS: frozenset[str] = frozenset(Knobs.model_fields)


def read_knobs(config: Mapping[str, object]) -> Knobs:
    """``backend.config`` as :class:`Knobs`; a SpecError naming the key and the fix."""
    try:
        return Knobs.model_validate(dict(config))
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(p) for p in first["loc"]) or "(config)"
        raise SpecError(
            f"run.yaml backend.config.{key}: {first['msg']}",
            hint="AI-Toolkit keys Kura knows: " + ", ".join(sorted(KNOB_KEYS)),
        ) from None
