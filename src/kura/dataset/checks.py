"""Turn per-file facts into :class:`Problem` findings, each with a concrete fix."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from kura.dataset.images import color_mode_issue
from kura.dataset.likeness import Likeness
from kura.dataset.problems import Problem
from kura.dataset.videos import frames_suit_targets, usable_frames

__all__ = [
    "caption_problems",
    "group_problems",
    "likeness_problems",
    "media_problems",
    "trigger_problems",
    "video_problems",
]

ROTATIONS = {
    2: "mirrored left to right",
    3: "upside down",
    4: "mirrored top to bottom",
    5: "mirrored and turned on its side",
    6: "lying on its side (it should be turned 90° clockwise)",
    7: "mirrored and turned on its side",
    8: "lying on its side (it should be turned 90° counter-clockwise)",
}


def media_problems(rel: str, facts: Mapping[str, Any]) -> list[Problem]:
    """Unreadable, empty, colour-mode and EXIF-rotation problems of one image or video."""
    error = facts.get("error")
    if error == "empty":
        return [
            Problem(
                rel,
                "empty-file",
                "the file is empty (0 bytes); Musubi stops when it tries to load it",
                "Replace it with the real file, or delete it.",
            )
        ]
    if error:
        return [
            Problem(
                rel,
                "broken-media",
                f"cannot be decoded ({error}); Musubi stops when it tries to load it",
                "Re-export or re-download the file, or delete it.",
            )
        ]
    found: list[Problem] = []
    if (issue := color_mode_issue(facts)) is not None:
        found.append(
            Problem(
                rel,
                "color-mode",
                f"the image {issue}",
                "Convert it to 8-bit sRGB RGB (flatten transparency onto the background you "
                "want), e.g. with Pillow `.convert('RGB')` after compositing.",
            )
        )
    orientation = facts.get("orientation")
    if orientation in ROTATIONS:
        found.append(
            Problem(
                rel,
                "exif-rotation",
                f"EXIF orientation {orientation}: viewers show it upright, but Musubi ignores "
                f"EXIF orientation (it never calls ImageOps.exif_transpose), so it trains "
                f"{ROTATIONS[orientation]}",
                "Rotate the pixels and drop the tag, e.g. `exiftran -ai FILE` or Pillow "
                "`ImageOps.exif_transpose(img).save(...)`.",
            )
        )
    return found


def video_problems(rel: str, facts: Mapping[str, Any]) -> list[Problem]:
    frames = facts.get("frames")
    if facts.get("error") or not isinstance(frames, int) or frames_suit_targets(frames):
        return []
    usable = usable_frames(frames)
    if usable == 0:
        return [
            Problem(
                rel,
                "video-frames",
                "no frame could be counted; Musubi cannot cut a clip from it",
                "Re-encode the video (e.g. `ffmpeg -i IN -c:v libx264 OUT.mp4`).",
            )
        ]
    return [
        Problem(
            rel,
            "video-frames",
            f"{frames} frames is not 4n+1; the longest whole clip is {usable} frames and "
            f"{frames - usable} frame(s) are never trained as part of it",
            f"Use target_frames up to {usable}, or trim the video to {usable} frames.",
        )
    ]


def caption_problems(rel: str, facts: Mapping[str, Any]) -> list[Problem]:
    """Encoding and emptiness problems of one caption file."""
    encoding = facts.get("encoding")
    if encoding == "unreadable":
        return [
            Problem(
                rel,
                "caption-encoding",
                f"the caption cannot be read ({facts.get('error')})",
                "Fix the file's permissions or replace it.",
            )
        ]
    if encoding == "latin-1":
        return [
            Problem(
                rel,
                "caption-encoding",
                "the caption is not UTF-8 (it reads as Latin-1/Windows-1252); Musubi reads "
                "captions as UTF-8 and stops with UnicodeDecodeError",
                "Re-save it as UTF-8, e.g. `iconv -f latin1 -t utf-8 FILE -o FILE.new`.",
            )
        ]
    if encoding == "binary":
        return [
            Problem(
                rel,
                "caption-encoding",
                "the caption is not text (not UTF-8 and full of control bytes); Musubi stops "
                "with UnicodeDecodeError",
                "Replace it with a UTF-8 text caption.",
            )
        ]
    found: list[Problem] = []
    if encoding == "utf-8-bom":
        found.append(
            Problem(
                rel,
                "caption-encoding",
                "the caption starts with a UTF-8 byte-order mark; Musubi keeps it as an "
                "invisible first character of the caption",
                "Re-save it as UTF-8 without BOM.",
            )
        )
    if not facts.get("text"):
        found.append(
            Problem(
                rel,
                "empty-caption",
                "the caption is empty; the item trains unconditioned",
                "Write a caption, or delete the file if unconditioned training is meant.",
            )
        )
    return found


def trigger_problems(texts: Mapping[str, str], trigger: str) -> list[Problem]:
    """Each non-empty caption that lacks ``trigger`` (the recorded ``intent.trigger``),
    matched as a whole word in any case, as :func:`kura.dataset.captions.find_trigger`
    counts it."""
    from kura.dataset.captions import words

    wanted = words(trigger)
    found: list[Problem] = []
    for rel, text in sorted(texts.items()):
        tokens = words(text)
        if not text or not wanted or _contains(tokens, wanted):
            continue
        found.append(
            Problem(
                rel,
                "missing-trigger",
                f"the caption does not carry the trigger word {trigger!r} (intent.trigger)",
                f"Add {trigger!r} to the caption, or set intent.trigger=none if the dataset "
                "has no trigger word.",
            )
        )
    return found


def _contains(tokens: tuple[str, ...], wanted: tuple[str, ...]) -> bool:
    size = len(wanted)
    return any(tokens[i : i + size] == wanted for i in range(len(tokens) - size + 1))


_COPY_MARK = re.compile(
    r"(\(\d+\)|[ _.-]copy(?:[ _-]?\d+)?|^copy[ _]of[ _]|^kopie[ _]van[ _]| - copy)",
    re.IGNORECASE,
)
"""How file managers name a copy: ``name (1).png``, ``name copy.png``, ``Copy of name``."""


def likely_original(group: Iterable[str], mtimes: Mapping[str, float]) -> str:
    """The member of a duplicate group that is most likely the original: a name without a
    copy mark first, then the oldest modification time, then the shortest name."""

    def key(rel: str) -> tuple[bool, float, int, str]:
        stem = rel.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        return (bool(_COPY_MARK.search(stem)), mtimes.get(rel, 0.0), len(stem), rel)

    return min(group, key=key)


def group_problems(
    code: str,
    groups: Iterable[list[str]],
    what: str,
    mtimes: Mapping[str, float] | None = None,
) -> list[Problem]:
    """One problem per copy in each duplicate group, naming the likely original (never on
    the original itself: deleting the file a problem names must keep the original)."""
    fixes = {"duplicate": "Delete the copy, unless the extra weight is intended."}
    found: list[Problem] = []
    for group in groups:
        original = likely_original(group, mtimes or {})
        for rel in group:
            if rel != original:
                found.append(Problem(rel, code, f"{what} {original!r}", fixes[code]))
    return found


LIKENESS_WORDS = {
    "resized": "a resized copy of",
    "re-encoded": "a re-encoded copy of",
    "cropped": "a slightly cropped copy of",
    "flipped": "a mirrored copy of",
}


def likeness_problems(pairs: Iterable[Likeness]) -> list[Problem]:
    """One ``near-duplicate`` problem per likeness pair, on the copy."""
    return [
        Problem(
            pair.copy,
            "near-duplicate",
            f"looks like {LIKENESS_WORDS[pair.kind]} {pair.original!r} (pHash distance "
            f"{pair.distance}, correlation {pair.correlation:.2f})",
            "Keep the best version and delete the others, unless the extra weight is intended.",
        )
        for pair in pairs
    ]
