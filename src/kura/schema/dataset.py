"""The schema of ``datasets/<name>/dataset.yaml``.

``intent`` is what a person (or an agent) decided; ``facts`` is what Kura measured and is
rewritten by each inspection. Kura never guesses intent into ``intent``: it suggests, with
evidence, under ``facts``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from kura.schema.base import StrictModel

__all__ = [
    "DatasetFacts",
    "DatasetIntent",
    "DatasetSpec",
    "PairDirection",
    "TaskType",
    "TriggerFact",
]

TaskType = Literal["character", "style", "concept", "paired-edit", "video"]
PairDirection = Literal["control-to-target", "target-to-control"]


class DatasetIntent(StrictModel):
    trigger: str | None = Field(None, description="The trigger word captions carry, if any.")
    task: TaskType | None = Field(None, description="What the LoRA is meant to learn.")
    pair_direction: PairDirection | None = Field(
        None, description="For paired-edit data: which folder holds the inputs."
    )


class TriggerFact(StrictModel):
    word: str
    count: int
    total: int


class BucketFact(StrictModel):
    width: int
    height: int
    count: int


class DatasetFacts(StrictModel):
    digest: str
    inspected_at: str
    resolution: list[int]
    counts: dict[str, int]
    buckets: list[BucketFact] = []
    trigger: TriggerFact | None = None
    task_suggestion: str | None = None
    problems: dict[str, int] = {}
    blocking_problems: int = 0


class DatasetSpec(StrictModel):
    name: str = Field(description="The dataset's name in this workspace.")
    media: str = Field(
        description="Folder of images/videos and captions; relative to this file or absolute."
    )
    linked: bool = Field(False, description="True when `media` points outside the workspace.")
    caption_ext: str = Field(".txt", pattern=r"^\.[A-Za-z0-9_.-]{1,16}$")
    control: str | None = Field(
        None, description="Folder of control images for paired-edit data, same stems."
    )
    intent: DatasetIntent = DatasetIntent()
    facts: DatasetFacts | None = Field(None, description="Written by `kura dataset inspect`.")
