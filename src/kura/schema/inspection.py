"""The schema of ``datasets/<name>/inspection.json``: the full report of the last inspection.

``dataset.yaml`` keeps the facts a run needs (``facts``); this file keeps everything the
inspection found, for ``kura dataset inspect`` and the planner (control counts). The top
level and the findings are typed; the measured sections (sizes, captions, videos …) are
the inspection's own documents, kept as objects.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from kura.schema.machine import MachineFile

__all__ = ["InspectionFile", "LikenessEntry", "ProblemEntry"]


class ProblemEntry(MachineFile):
    path: str
    code: str
    message: str
    fix: str
    blocking: bool = Field(False, description="Breaks or silently damages training.")


class LikenessEntry(MachineFile):
    original: str
    copy_: str = Field(alias="copy")
    kind: str
    distance: int
    correlation: float


class InspectionFile(MachineFile):
    kind: Literal["dataset-inspection"] = "dataset-inspection"
    root: str
    resolution: list[int] = Field(min_length=2, max_length=2)
    settings: dict[str, Any]
    counts: dict[str, int]
    formats: dict[str, int]
    sizes: dict[str, Any]
    problems: list[ProblemEntry]
    problem_counts: dict[str, int]
    blocking_problems: int = Field(ge=0)
    buckets: list[dict[str, Any]]
    captions: dict[str, Any]
    trigger: dict[str, Any] | None
    duplicates: list[list[str]]
    near_duplicates: list[list[str]]
    near_duplicate_pairs: list[LikenessEntry]
    videos: list[dict[str, Any]]
    pairs: dict[str, Any] | None
    task_suggestion: dict[str, Any]
    questions: list[dict[str, Any]]
    digest: str
