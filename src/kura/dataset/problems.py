"""Problems an inspection reports: a code, the file it concerns, what is wrong and the fix.

``BLOCKING_CODES`` are the codes that break a Musubi Tuner run or silently damage what it
learns; everything else is a warning a person may accept:

* ``broken-media``, ``empty-file``: Pillow/PyAV raise when Musubi loads the file, which stops
  latent caching.
* ``missing-caption``: Musubi's image directory loader keeps only images that have a caption
  file, so the image silently drops out of training; its video loader keeps every video and
  stops when the caption file is missing.
* ``caption-encoding``: Musubi reads captions as UTF-8; other encodings raise
  ``UnicodeDecodeError`` and a byte-order mark ends up inside the caption text.
* ``missing-control``: Musubi refuses a control directory in which any target lacks a control.
* ``unsupported-format``: the file is never read (wrong extension or extension case), so it is
  silently left out.
* ``exif-rotation``: Musubi does not apply EXIF orientation, so the picture is trained sideways
  or mirrored.
* ``color-mode``: CMYK colours shift, 16-bit images clip to white, transparency turns into
  whatever colour hides under it.

Warnings: ``empty-caption``, ``orphan-caption``, ``orphan-control``, ``duplicate``,
``near-duplicate``, ``video-frames``, ``nested-media`` and ``missing-trigger`` (a caption
without the trigger word dataset.yaml's ``intent.trigger`` records: that item teaches the
look without the word that calls it up).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ALL_CODES", "BLOCKING_CODES", "Problem"]

ALL_CODES = frozenset(
    {
        "broken-media",
        "empty-file",
        "missing-caption",
        "empty-caption",
        "caption-encoding",
        "orphan-caption",
        "duplicate",
        "near-duplicate",
        "color-mode",
        "exif-rotation",
        "missing-control",
        "orphan-control",
        "video-frames",
        "unsupported-format",
        "nested-media",
        "missing-trigger",
    }
)

BLOCKING_CODES = frozenset(
    {
        "broken-media",
        "empty-file",
        "missing-caption",
        "caption-encoding",
        "missing-control",
        "unsupported-format",
        "exif-rotation",
        "color-mode",
    }
)


@dataclass(frozen=True, slots=True)
class Problem:
    """One finding about one file; ``path`` is relative to the dataset root."""

    path: str
    code: str
    message: str
    fix: str

    def __post_init__(self) -> None:
        if self.code not in ALL_CODES:
            raise ValueError(f"unknown problem code {self.code!r}")

    @property
    def blocking(self) -> bool:
        return self.code in BLOCKING_CODES

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "code": self.code,
            "message": self.message,
            "fix": self.fix,
            "blocking": self.blocking,
        }
