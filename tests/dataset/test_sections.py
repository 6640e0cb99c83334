"""Report sections from facts: the bucket table fits each distinct picture size once and
counts it as often as it occurs, with the same table as fitting every image (issue 27)."""

from __future__ import annotations

import statistics
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kura.dataset import sections
from kura.dataset.buckets import BucketRule
from kura.dataset.context import Context
from kura.dataset.scan import Entry, Scan

SIZES = [(1920, 1080), (1080, 1920), (1000, 1000), (768, 1152), (333, 777), (96, 96), (4000, 999)]


def _context(sizes: list[tuple[int, int] | None], rule: BucketRule) -> Context:
    scan = Scan(root=Path("/data"))
    facts: dict[str, dict[str, Any]] = {}
    for index, size in enumerate(sizes):
        name = f"{index:04d}.png"
        entry = Entry(f"/data/{name}", name, name, f"{index:04d}", ".png")
        scan.images.append(entry)
        if size is None:
            facts[entry.path] = {"kind": "image", "error": "cannot be decoded"}
        else:
            facts[entry.path] = {"kind": "image", "width": size[0], "height": size[1]}
    return Context(Path("/data"), None, scan, None, facts, rule, ".txt")


def _fitting_every_image(ctx: Context) -> list[dict[str, Any]]:
    """The table as it was built before: one fit per image, in the folder's order."""
    rows: dict[tuple[int, int], dict[str, Any]] = {}
    for entry in ctx.scan.images:
        if not ctx.good(entry):
            continue
        facts = ctx.of(entry)
        fit = ctx.rule.fit((facts["width"], facts["height"]))
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
        row["count"] += 1
        row["upscaled"] += fit.upscaled
        row["cropped"] += fit.cropped
        row["max_upscale"] = round(max(row["max_upscale"], fit.scale), 3)
        row["max_crop_fraction"] = round(max(row["max_crop_fraction"], fit.crop_fraction), 4)
        row["crops"].append(fit.crop_fraction)
    for row in rows.values():
        row["mean_crop_fraction"] = round(statistics.fmean(row.pop("crops")), 4)
    return sorted(rows.values(), key=lambda r: (-r["count"], r["width"], r["height"]))


@settings(max_examples=60, deadline=None)
@given(
    picks=st.lists(st.one_of(st.none(), st.sampled_from(SIZES)), max_size=60),
    no_upscale=st.booleans(),
)
def test_the_bucket_table_is_the_table_of_fitting_every_image(
    picks: list[tuple[int, int] | None], no_upscale: bool
) -> None:
    ctx = _context(picks, BucketRule((1024, 1024), 16, True, no_upscale))
    assert sections.buckets(ctx) == _fitting_every_image(ctx)


def test_each_distinct_size_is_fitted_once(monkeypatch: pytest.MonkeyPatch) -> None:
    fitted: list[tuple[int, int]] = []
    real = BucketRule.fit

    def counting(rule: BucketRule, size: tuple[int, int]) -> Any:
        fitted.append(size)
        return real(rule, size)

    ctx = _context([SIZES[i % 3] for i in range(3000)] + [None], BucketRule((1024, 1024)))
    monkeypatch.setattr(BucketRule, "fit", counting)
    table = sections.buckets(ctx)
    assert sorted(fitted) == sorted(SIZES[:3])
    assert sum(row["count"] for row in table) == 3000


def _sizes_one_by_one(ctx: Context) -> dict[str, Any]:
    """The size section as it was built before: every image judged on its own."""
    import math

    found = [(ctx.of(e)["width"], ctx.of(e)["height"]) for e in ctx.scan.images if ctx.good(e)]
    if not found:
        return {"count": 0, "width": None, "height": None, "aspect": {}, "top_ratios": []}
    aspect = dict.fromkeys((name for name, _, _ in sections.ASPECT_RANGES), 0)
    for w, h in found:
        for name, low, high in sections.ASPECT_RANGES:
            if low <= w / h < high:
                aspect[name] += 1
                break
    ratios = Counter(f"{w // math.gcd(w, h)}:{h // math.gcd(w, h)}" for w, h in found)
    widths, heights = [w for w, _ in found], [h for _, h in found]
    area = ctx.rule.resolution[0] * ctx.rule.resolution[1]
    return {
        "count": len(found),
        "width": {"min": min(widths), "median": statistics.median(widths), "max": max(widths)},
        "height": {
            "min": min(heights),
            "median": statistics.median(heights),
            "max": max(heights),
        },
        "aspect": aspect,
        "top_ratios": [{"ratio": r, "count": n} for r, n in ratios.most_common(5)],
        "smaller_than_resolution": sum(1 for w, h in found if w * h < area),
    }


@settings(max_examples=60, deadline=None)
@given(picks=st.lists(st.one_of(st.none(), st.sampled_from([*SIZES, (200, 100), (2, 1)]))))
def test_the_size_section_is_the_section_of_judging_every_image(
    picks: list[tuple[int, int] | None],
) -> None:
    ctx = _context(picks, BucketRule((1024, 1024)))
    assert sections.sizes(ctx) == _sizes_one_by_one(ctx)
