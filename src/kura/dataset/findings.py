"""Assemble every problem of an inspection from the facts, pairing and duplicate groups."""

from __future__ import annotations

import contextlib

from kura.dataset.checks import (
    caption_problems,
    group_problems,
    likeness_problems,
    media_problems,
    video_problems,
)
from kura.dataset.context import Context
from kura.dataset.likeness import Likeness
from kura.dataset.pairs import Pairing
from kura.dataset.problems import Problem

__all__ = ["problems"]


def problems(
    ctx: Context,
    duplicates: list[list[str]],
    near: list[Likeness],
    pairing: Pairing | None,
) -> list[Problem]:
    """Every problem: per file, caption pairing, unsupported and nested files, duplicate
    groups, likeness pairs and control pairing."""
    found: list[Problem] = []
    known = ctx.facts
    for entry in ctx.scan.images:
        found += media_problems(entry.rel, known[entry.path])
    for entry in ctx.scan.videos:
        found += media_problems(entry.rel, ctx.of(entry))
        found += video_problems(entry.rel, ctx.of(entry))
    found += _caption_pairing_problems(ctx)
    media_stems = {e.stem for e in (*ctx.scan.images, *ctx.scan.videos)}
    for stem, entry in ctx.scan.captions.items():
        if stem in media_stems:
            found += caption_problems(entry.rel, known[entry.path])
    for entry, reason in ctx.scan.unsupported:
        found.append(
            Problem(
                entry.rel,
                "unsupported-format",
                f"{reason}, so it is left out of training",
                "Convert it to PNG or JPEG (video: MP4) with a lower- or upper-case extension, "
                "or move it out of the folder.",
            )
        )
    for rel in ctx.scan.nested:
        found.append(
            Problem(
                rel,
                "nested-media",
                "this file is in a subfolder; Musubi reads only the top level of the folder",
                "Move it up into the dataset folder, or keep it as a separate dataset.",
            )
        )
    found += group_problems("duplicate", duplicates, "same bytes as", _mtimes(ctx, duplicates))
    found += likeness_problems(_one_per_content(ctx, near))
    if ctx.controls is not None and pairing is not None:
        found += _control_problems(ctx, pairing)
    return found


def _mtimes(ctx: Context, groups: list[list[str]]) -> dict[str, float]:
    """Modification times of the duplicate groups' members (the older is the original)."""
    times: dict[str, float] = {}
    for rel in (r for group in groups for r in group):
        with contextlib.suppress(OSError):
            times[rel] = (ctx.root / rel).stat().st_mtime
    return times


def _one_per_content(ctx: Context, pairs: list[Likeness]) -> list[Likeness]:
    """One likeness pair per pair of contents: a pair that only repeats another through an
    exact copy (which already gets a ``duplicate`` problem) is left out."""
    if not pairs:
        return []
    content = {e.rel: ctx.of(e).get("sha256") for e in ctx.scan.images}
    seen: set[tuple[str | None, str | None]] = set()
    kept = []
    for pair in pairs:
        contents = (content.get(pair.original), content.get(pair.copy))
        if contents not in seen:
            seen.add(contents)
            kept.append(pair)
    return kept


def _caption_pairing_problems(ctx: Context) -> list[Problem]:
    found: list[Problem] = []
    ext = ctx.caption_ext
    videos = {e.path for e in ctx.scan.videos}
    for entry in (*ctx.scan.images, *ctx.scan.videos):
        if entry.stem not in ctx.scan.captions:
            effect = (
                "Musubi lists every video and stops with FileNotFoundError when it reads this "
                "caption"
                if entry.path in videos
                else "Musubi keeps only images that have one, so this image is silently left out"
            )
            found.append(
                Problem(
                    entry.rel,
                    "missing-caption",
                    f"no caption file; {effect}",
                    f"Write a caption file named {entry.stem + ext!r} next to it.",
                )
            )
    media_stems = {e.stem for e in (*ctx.scan.images, *ctx.scan.videos)}
    for stem, entry in ctx.scan.captions.items():
        if stem not in media_stems:
            found.append(
                Problem(
                    entry.rel,
                    "orphan-caption",
                    "this caption has no image or video with the same name",
                    "Rename it to match its image, or delete it.",
                )
            )
    return found


def _control_problems(ctx: Context, pairing: Pairing) -> list[Problem]:
    assert ctx.controls is not None
    found: list[Problem] = []
    for entry in ctx.controls.images:
        found += media_problems(ctx.control_rel(entry), ctx.of(entry))
    for entry, reason in ctx.controls.unsupported:
        found.append(
            Problem(
                ctx.control_rel(entry),
                "unsupported-format",
                f"{reason}, so it is not used as a control",
                "Convert it to PNG or JPEG, or move it out of the control folder.",
            )
        )
    for target in pairing.missing:
        found.append(
            Problem(
                target.rel,
                "missing-control",
                "no control image with the same name; Musubi refuses the dataset until every "
                "target has one",
                f"Add {target.stem!r}.png (or {target.stem!r}_0.png, _1 … for several) to the "
                "control folder, or remove this target.",
            )
        )
    for rel, bad in pairing.bad_suffix.items():
        names = ", ".join(repr(c.name) for c in bad)
        found.append(
            Problem(
                rel,
                "missing-control",
                f"control(s) {names} match this target by prefix but do not end in _<number>; "
                "Musubi stops with 'Invalid digits suffix'",
                "Rename the controls to <stem>.png or <stem>_0.png, <stem>_1.png ….",
            )
        )
    for entry in pairing.orphans:
        found.append(
            Problem(
                ctx.control_rel(entry),
                "orphan-control",
                "this control image matches no target image",
                "Rename it to '<target stem>.png' (or '<target stem>_0.png'), or delete it.",
            )
        )
    return found
