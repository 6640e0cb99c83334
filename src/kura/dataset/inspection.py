"""The report of one dataset inspection (:func:`kura.dataset.inspect.inspect_dataset` makes
it; :mod:`kura.dataset.reportcache` keeps it), and its JSON document."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from kura.dataset.likeness import Likeness
from kura.dataset.problems import BLOCKING_CODES, Problem

__all__ = ["Inspection"]


@dataclass(frozen=True)
class Inspection:
    """The result of one inspection; ``to_dict`` gives the JSON document."""

    root: str
    resolution: tuple[int, int]
    settings: dict[str, Any]
    counts: dict[str, int]
    formats: dict[str, int]
    sizes: dict[str, Any]
    problems: tuple[Problem, ...]
    buckets: tuple[dict[str, Any], ...]
    captions: dict[str, Any]
    trigger: dict[str, Any] | None
    duplicates: tuple[tuple[str, ...], ...]
    likenesses: tuple[Likeness, ...]
    videos: tuple[dict[str, Any], ...]
    pairs: dict[str, Any] | None
    task_suggestion: dict[str, Any]
    questions: tuple[dict[str, Any], ...]
    digest: str
    files: dict[str, str] = field(default_factory=dict)
    """Label (as in the digest) → content sha256 of every file the digest covers; not in
    the JSON document (a plan keeps it to name what changed)."""

    def blocking_problems(self) -> list[Problem]:
        """Problems that break a training run or silently damage what it learns."""
        return [p for p in self.problems if p.code in BLOCKING_CODES]

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "dataset-inspection",
            "root": self.root,
            "resolution": list(self.resolution),
            "settings": self.settings,
            "counts": self.counts,
            "formats": self.formats,
            "sizes": self.sizes,
            "problems": [p.to_dict() for p in self.problems],
            "problem_counts": dict(sorted(Counter(p.code for p in self.problems).items())),
            "blocking_problems": len(self.blocking_problems()),
            "buckets": list(self.buckets),
            "captions": self.captions,
            "trigger": self.trigger,
            "duplicates": [list(g) for g in self.duplicates],
            "near_duplicates": [[item.original, item.copy] for item in self.likenesses],
            "near_duplicate_pairs": [item.to_dict() for item in self.likenesses],
            "videos": list(self.videos),
            "pairs": self.pairs,
            "task_suggestion": self.task_suggestion,
            "questions": list(self.questions),
            "digest": self.digest,
        }
