"""Inspect a dataset folder: what Musubi Tuner will see, what will go wrong, what to ask.

``inspect_dataset`` scans the folder (``scan``), reads per-file facts through the stat cache
(``facts``), and derives the report: problems (``findings``, ``checks``), report sections
such as buckets, captions, videos and control pairs (``sections``), duplicates
(``similarity``), and the task suggestion and questions only a person can answer
(``intent``). A folder whose listings, stats, settings and inspection code are all as they
were is answered with the report kept from last time (``reportcache``).
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kura.dataset.findings as findings
import kura.dataset.intent as intent
import kura.dataset.sections as sections
from kura.dataset.buckets import BucketRule
from kura.dataset.captions import find_trigger
from kura.dataset.checks import trigger_problems
from kura.dataset.context import Context
from kura.dataset.facts import add_pixel_facts, file_keys, gather_facts
from kura.dataset.inspection import Inspection
from kura.dataset.likeness import Likeness, Picture, find_likenesses
from kura.dataset.pairs import pair_controls
from kura.dataset.problems import BLOCKING_CODES, Problem
from kura.dataset.reportcache import Slot, stamp
from kura.dataset.scan import (
    IMAGE_EXTENSIONS,
    VIDEO_EXTENSIONS,
    Scan,
    check_folder,
    scan_controls,
    scan_dataset,
)
from kura.dataset.similarity import exact_groups, hash_candidates
from kura.dataset.statcache import StatCache
from kura.errors import InvalidInput

__all__ = ["BLOCKING_CODES", "Inspection", "Problem", "inspect_dataset"]


def inspect_dataset(
    media_dir: Path,
    *,
    caption_ext: str = ".txt",
    control_dir: Path | None = None,
    resolution: tuple[int, int] = (1024, 1024),
    bucket_step: int = 16,
    enable_bucket: bool = True,
    bucket_no_upscale: bool = False,
    cache: StatCache | None = None,
    progress: Callable[[int, int], None] | None = None,
    trigger: str | None = None,
) -> Inspection:
    """Inspect ``media_dir`` (and ``control_dir`` for paired-edit data); ``trigger`` is the
    recorded ``intent.trigger``, whose absence from a caption is a warning.

    Raises ``NotFound`` for a missing folder and ``InvalidInput`` for a path that is not a
    folder or a bad setting; every problem with the files themselves is a ``Problem``."""
    _check_caption_ext(caption_ext)
    rule = BucketRule(_resolution(resolution), bucket_step, enable_bucket, bucket_no_upscale)
    root = check_folder(media_dir, "dataset")
    control_root = check_folder(control_dir, "control") if control_dir is not None else None
    if control_root is not None and os.path.samefile(root, control_root):
        raise InvalidInput(
            "the control folder is the dataset folder itself",
            hint="Keep control images in their own folder, with the same stems as the targets.",
            path=control_root,
        )
    scan = scan_dataset(root, caption_ext, skip=control_root)
    controls = scan_controls(control_root) if control_root is not None else None
    jobs = _jobs(scan, controls)
    phases = _Phases(progress, reading=len(jobs), comparing=len(scan.images))
    slot = Slot(
        root=str(root),
        control_root=None if control_root is None else str(control_root),
        caption_ext=caption_ext,
        resolution=rule.resolution,
        bucket_step=rule.step,
        enable_bucket=rule.enable_bucket,
        bucket_no_upscale=rule.no_upscale,
        trigger=trigger,
    )
    scans = [scan] if controls is None else [scan, controls]
    kept = stamp(cache, slot, scans, jobs, file_keys(jobs, {}))
    if kept is not None and (report := kept.kept()) is not None:
        phases.finished()
        return report
    facts = gather_facts(jobs, cache=cache, progress=phases.reading)
    add_pixel_facts(hash_candidates(scan, facts), facts, cache=cache)
    report = _build(
        root, control_root, scan, controls, facts, rule, caption_ext, phases.comparing, trigger
    )
    if kept is not None:
        kept.keep(report, facts)
    return report


class _Phases:
    """One progress bar over both passes: reading every file (one unit each), then
    comparing the pictures for likenesses (one unit per image, spread over the pairs
    judged), so the bar reaches its end only when the whole inspection has."""

    def __init__(
        self, report: Callable[[int, int], None] | None, *, reading: int, comparing: int
    ) -> None:
        self.report = report
        self.reading_units = reading
        self.total = reading + comparing

    def finished(self) -> None:
        """The whole bar at once (a report kept from the last inspection)."""
        if self.report is not None:
            self.report(self.total, self.total)

    def reading(self, done: int, total: int) -> None:
        if self.report is not None:
            self.report(done, self.total)

    def comparing(self, done: int, total: int) -> None:
        if self.report is not None:
            units = self.total - self.reading_units
            share = units * done // total if total else units
            self.report(self.reading_units + share, self.total)


def _check_caption_ext(caption_ext: str) -> None:
    low = caption_ext.lower() if isinstance(caption_ext, str) else ""
    if (
        not low.startswith(".")
        or len(low) < 2
        or os.sep in low
        or low in IMAGE_EXTENSIONS
        or low in VIDEO_EXTENSIONS
    ):
        raise InvalidInput(
            f"caption extension {caption_ext!r} is not usable",
            hint="Give the caption files' extension with its dot, e.g. '.txt' or '.caption'.",
        )


def _resolution(value: tuple[int, int]) -> tuple[int, int]:
    try:
        width, height = value
    except (TypeError, ValueError) as exc:
        raise InvalidInput(
            f"resolution must be (width, height), got {value!r}",
            hint="Give the training resolution as two numbers, e.g. (1024, 1024).",
        ) from exc
    return width, height


def _jobs(scan: Scan, controls: Scan | None) -> list[tuple[str, str]]:
    jobs = [(e.path, "image") for e in scan.images]
    jobs += [(e.path, "video") for e in scan.videos]
    jobs += [(e.path, "caption") for e in scan.captions.values()]
    if controls is not None:
        jobs += [(e.path, "image") for e in controls.images]
    return jobs


def _build(
    root: Path,
    control_root: Path | None,
    scan: Scan,
    controls: Scan | None,
    facts: dict[str, dict[str, Any]],
    rule: BucketRule,
    caption_ext: str,
    comparing: Callable[[int, int], None],
    recorded_trigger: str | None = None,
) -> Inspection:
    ctx = Context(root, control_root, scan, controls, facts, rule, caption_ext)
    texts = sections.caption_texts(ctx)
    trigger = find_trigger(texts)
    duplicates, near = _similar_media(ctx, comparing)
    pairing = pair_controls(scan.images, controls.images) if controls is not None else None
    problems = findings.problems(ctx, duplicates, near, pairing)
    if recorded_trigger and recorded_trigger.lower() != "none":
        problems += trigger_problems(texts, recorded_trigger)
    task = intent.task_suggestion(ctx, pairing)
    rows = _digest_rows(ctx)
    return Inspection(
        root=str(root),
        resolution=rule.resolution,
        settings={
            "caption_ext": caption_ext,
            "control_dir": str(control_root) if control_root is not None else None,
            "bucket_step": rule.step,
            "enable_bucket": rule.enable_bucket,
            "bucket_no_upscale": rule.no_upscale,
        },
        counts=sections.counts(ctx),
        formats=sections.formats(ctx),
        sizes=sections.sizes(ctx),
        problems=tuple(sorted(problems, key=lambda p: (p.path, p.code, p.message))),
        buckets=tuple(sections.buckets(ctx)),
        captions=sections.captions_section(ctx, texts),
        trigger=trigger.to_dict() if trigger is not None else None,
        duplicates=tuple(tuple(g) for g in duplicates),
        likenesses=tuple(near),
        videos=tuple(sections.video_rows(ctx)),
        pairs=sections.pairs_section(ctx, pairing) if pairing is not None else None,
        task_suggestion=task,
        questions=tuple(intent.questions(ctx, texts, trigger, pairing, task)),
        digest=_digest(rows),
        files={_printable(label): sha for label, sha, _ in rows},
    )


def _printable(label: str) -> str:
    """``label`` as text: a name that is not UTF-8 keeps its bytes escaped (``\\xff``)."""
    return label if label.isascii() else os.fsencode(label).decode("utf-8", "backslashreplace")


def _similar_media(
    ctx: Context, progress: Callable[[int, int], None]
) -> tuple[list[list[str]], list[Likeness]]:
    """Exact-duplicate groups of media, and the likeness pairs among the images (those
    with hashes: a flat picture has none)."""
    known = ctx.facts
    digests: dict[str, str] = {}
    pictures: list[Picture] = []
    for entry in ctx.scan.images:
        facts = known[entry.path]
        if facts.get("sha256") and not facts.get("error"):
            digests[entry.rel] = facts["sha256"]
            if (picture := Picture.of(entry.rel, entry.path, facts)) is not None:
                pictures.append(picture)
    for entry in ctx.scan.videos:
        facts = known[entry.path]
        if facts.get("sha256") and not facts.get("error"):
            digests[entry.rel] = facts["sha256"]
    return exact_groups(digests), find_likenesses(pictures, progress)


def _digest(rows: list[tuple[str, str, int]]) -> str:
    """sha256 over sorted (label, content sha256, size) of every media, caption and control
    file (``rows``, see :func:`_digest_rows`); labels are paths relative to the dataset
    (``control/…`` for control files), so the digest does not depend on where the folders
    live."""
    encoding, errors = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()  # fsencode
    lines = b"".join(
        b"%s\0%s\0%d\n" % (label.encode(encoding, errors), sha.encode(), size)
        for label, sha, size in sorted(rows)
    )
    return "sha256:" + hashlib.sha256(lines).hexdigest()


def _digest_rows(ctx: Context) -> list[tuple[str, str, int]]:
    rows: list[tuple[str, str, int]] = []
    known = ctx.facts
    for entry in (*ctx.scan.images, *ctx.scan.videos, *ctx.scan.captions.values()):
        facts = known[entry.path]
        rows.append((entry.rel, facts.get("sha256") or "unreadable", int(facts.get("bytes", 0))))
    if ctx.controls is not None:
        for entry in ctx.controls.images:
            facts = ctx.of(entry)
            rows.append(
                (
                    "control/" + entry.rel,
                    facts.get("sha256") or "unreadable",
                    int(facts.get("bytes", 0)),
                )
            )
    return rows
