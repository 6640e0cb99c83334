"""What one inspection knows while it builds its report: the scan, the per-file facts and
the bucket rule, with small helpers to look facts up."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kura.dataset.buckets import BucketRule
from kura.dataset.scan import Entry, Scan

__all__ = ["Context", "usable"]


def usable(facts: dict[str, Any]) -> bool:
    """Whether a picture's facts were read and give its size (:meth:`Context.good`)."""
    return not facts.get("error") and isinstance(facts.get("width"), int)


@dataclass
class Context:
    """The inputs every report section reads."""

    root: Path
    control_root: Path | None
    scan: Scan
    controls: Scan | None
    facts: dict[str, dict[str, Any]]
    rule: BucketRule
    caption_ext: str

    def of(self, entry: Entry) -> dict[str, Any]:
        return self.facts[entry.path]

    def control_rel(self, entry: Entry) -> str:
        return os.path.relpath(entry.path, self.root)

    def good(self, entry: Entry) -> bool:
        return usable(self.facts[entry.path])
