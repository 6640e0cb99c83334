"""Report sections built from facts: counts, formats, sizes, buckets, captions, videos and
control pairs."""

from __future__ import annotations

import math
import statistics
from collections import Counter
from typing import Any

from kura.dataset.buckets import BucketRule
from kura.dataset.captions import caption_stats
from kura.dataset.context import Context, usable
from kura.dataset.pairs import Pairing
from kura.dataset.videos import frames_suit_targets, usable_frames

__all__ = [
    "buckets",
    "caption_texts",
    "captions_section",
    "counts",
    "formats",
    "pairs_section",
    "sizes",
    "video_rows",
]

ASPECT_RANGES: tuple[tuple[str, float, float], ...] = (
    ("tall (<3:4)", 0.0, 0.75),
    ("portrait (3:4–19:20)", 0.75, 0.95),
    ("square (±5%)", 0.95, 1.0 / 0.95),
    ("landscape (to 3:2)", 1.0 / 0.95, 1.5),
    ("wide (>3:2)", 1.5, math.inf),
)


def counts(ctx: Context) -> dict[str, int]:
    return {
        "images": len(ctx.scan.images),
        "videos": len(ctx.scan.videos),
        "captions": len(ctx.scan.captions),
        "controls": len(ctx.controls.images) if ctx.controls is not None else 0,
        "unsupported": len(ctx.scan.unsupported),
        "nested_media": len(ctx.scan.nested),
        "other_files": ctx.scan.other,
    }


def formats(ctx: Context) -> dict[str, int]:
    counted = Counter(e.ext.lower() for e in (*ctx.scan.images, *ctx.scan.videos))
    return dict(sorted(counted.items()))


def sizes(ctx: Context) -> dict[str, Any]:
    """Resolution distribution of the readable images and videos."""
    known = ctx.facts
    sizes = [
        (facts["width"], facts["height"])
        for facts in (known[e.path] for e in (*ctx.scan.images, *ctx.scan.videos))
        if usable(facts)
    ]
    if not sizes:
        return {"count": 0, "width": None, "height": None, "aspect": {}, "top_ratios": []}
    widths = [w for w, _ in sizes]
    heights = [h for _, h in sizes]
    area = ctx.rule.resolution[0] * ctx.rule.resolution[1]
    each = Counter(sizes)  # a dataset has few distinct sizes: each is judged once
    return {
        "count": len(sizes),
        "width": _min_median_max(widths),
        "height": _min_median_max(heights),
        "aspect": _aspect_ranges(each),
        "top_ratios": _top_ratios(each),
        "smaller_than_resolution": sum(n for (w, h), n in each.items() if w * h < area),
    }


def _min_median_max(values: list[int]) -> dict[str, float]:
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


def _aspect_ranges(sizes: Counter[tuple[int, int]]) -> dict[str, int]:
    counts = dict.fromkeys((name for name, _, _ in ASPECT_RANGES), 0)
    for (w, h), times in sizes.items():
        ratio = w / h
        for name, low, high in ASPECT_RANGES:
            if low <= ratio < high:
                counts[name] += times
                break
    return counts


def _top_ratios(sizes: Counter[tuple[int, int]]) -> list[dict[str, Any]]:
    """The five commonest reduced ratios; on a tie, the one met first in the folder (sizes
    count in the order they were first met, so their ratios do too)."""
    ratios: Counter[str] = Counter()
    for (w, h), times in sizes.items():
        ratios[f"{w // math.gcd(w, h)}:{h // math.gcd(w, h)}"] += times
    return [{"ratio": r, "count": n} for r, n in ratios.most_common(5)]


def buckets(ctx: Context) -> list[dict[str, Any]]:
    """Per bucket: how many images land there, how many are upscaled or cropped and by how
    much (``crop`` is the fraction of the scaled picture cut away).

    Images of one size land alike, so each size is fitted once and counted as often as it
    occurs (the maxima and the exactly rounded mean do not depend on the order)."""
    known = ctx.facts
    image_facts = (known[entry.path] for entry in ctx.scan.images)
    sizes = Counter((f["width"], f["height"]) for f in image_facts if usable(f))
    rows: dict[tuple[int, int], dict[str, Any]] = {}
    for size, times in sizes.items():
        fit = ctx.rule.fit(size)
        row = rows.setdefault(
            fit.bucket,
            {
                "width": fit.bucket[0],
                "height": fit.bucket[1],
                "count": 0,
                "upscaled": 0,
                "cropped": 0,
                "max_upscale": 1.0,
                "max_crop_fraction": 0.0,
                "crops": [],
            },
        )
        row["count"] += times
        row["upscaled"] += times * fit.upscaled
        row["cropped"] += times * fit.cropped
        row["max_upscale"] = round(max(row["max_upscale"], fit.scale), 3)
        row["max_crop_fraction"] = round(max(row["max_crop_fraction"], fit.crop_fraction), 4)
        row["crops"] += [fit.crop_fraction] * times
    for row in rows.values():
        row["mean_crop_fraction"] = round(statistics.fmean(row.pop("crops")), 4)
    return sorted(rows.values(), key=lambda r: (-r["count"], r["width"], r["height"]))


def caption_texts(ctx: Context) -> dict[str, str]:
    """Caption text per caption file that pairs with media and decodes."""
    stems = {e.stem for e in (*ctx.scan.images, *ctx.scan.videos)}
    texts: dict[str, str] = {}
    known = ctx.facts
    for stem, entry in ctx.scan.captions.items():
        text = known[entry.path].get("text")
        if stem in stems and isinstance(text, str):
            texts[entry.rel] = text
    return texts


def captions_section(ctx: Context, texts: dict[str, str]) -> dict[str, Any]:
    media_stems = {e.stem for e in (*ctx.scan.images, *ctx.scan.videos)}
    known = ctx.facts
    captions = [(e, known[e.path]) for e in ctx.scan.captions.values()]
    encodings = Counter(facts.get("encoding") for _, facts in captions)
    return {
        "files": len(ctx.scan.captions),
        "missing": sum(
            1 for e in (*ctx.scan.images, *ctx.scan.videos) if e.stem not in ctx.scan.captions
        ),
        "empty": sum(
            1 for e, facts in captions if facts.get("text") == "" and e.stem in media_stems
        ),
        "non_utf8": encodings["latin-1"] + encodings["binary"] + encodings["unreadable"],
        "bom": encodings["utf-8-bom"],
        "orphans": sorted(e.rel for s, e in ctx.scan.captions.items() if s not in media_stems),
        **caption_stats(texts),
    }


def video_rows(ctx: Context) -> list[dict[str, Any]]:
    """Per video facts. Video datasets are always bucketed without no-upscale (Musubi's
    ``VideoDataset`` builds ``BucketSelector(resolution)`` with the defaults)."""
    rule = BucketRule(ctx.rule.resolution, ctx.rule.step, True, False)
    rows = []
    for entry in ctx.scan.videos:
        facts = ctx.of(entry)
        frames = facts.get("frames")
        row: dict[str, Any] = {
            "path": entry.rel,
            "frames": frames,
            "fps": facts.get("fps"),
            "duration": facts.get("duration"),
            "width": facts.get("width"),
            "height": facts.get("height"),
            "frames_4n1": frames_suit_targets(frames) if isinstance(frames, int) else None,
            "usable_frames": usable_frames(frames) if isinstance(frames, int) else None,
            "bucket": list(rule.select((facts["width"], facts["height"])))
            if ctx.good(entry)
            else None,
            "error": facts.get("error"),
        }
        rows.append(row)
    return rows


def pairs_section(ctx: Context, pairing: Pairing) -> dict[str, Any]:
    """Targets with controls, how many controls each, size mismatches and leftovers."""
    mismatches = []
    for target in ctx.scan.images:
        for control in pairing.controls.get(target.rel, []):
            if not (ctx.good(target) and ctx.good(control)):
                continue
            t, c = ctx.of(target), ctx.of(control)
            if (t["width"], t["height"]) != (c["width"], c["height"]):
                mismatches.append(
                    {
                        "target": target.rel,
                        "control": ctx.control_rel(control),
                        "target_size": [t["width"], t["height"]],
                        "control_size": [c["width"], c["height"]],
                        "same_aspect": abs(t["width"] / t["height"] - c["width"] / c["height"])
                        < 0.01,
                    }
                )
    per_target = Counter(len(c) for c in pairing.controls.values())
    return {
        "targets": len(ctx.scan.images),
        "with_controls": len(pairing.controls),
        "control_counts": {str(k): v for k, v in sorted(per_target.items())},
        "missing": sorted(t.rel for t in pairing.missing) + sorted(pairing.bad_suffix),
        "orphans": [ctx.control_rel(c) for c in pairing.orphans],
        "size_mismatches": mismatches,
    }
