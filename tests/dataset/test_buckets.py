"""Bucket assignment checked against numbers worked out by hand from Musubi's rule.

At 1024x1024 with step 16 the area is 1048576 and buckets run w = 512 … 1024, h = floor16(
1048576 // w): w=768 gives 1365 → (1360, 768); w=784 gives 1337 → (1328, 784); w=832 gives
1260 → (832, 1248) after transposing. At 512x512 (area 262144) w=384 gives 682 → (672, 384).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kura.dataset import inspect_dataset
from kura.dataset.buckets import BucketRule, bucket_resolutions, fit_into_bucket
from kura.errors import InvalidInput


@pytest.mark.parametrize(
    ("resolution", "size", "bucket"),
    [
        ((1024, 1024), (1000, 1000), (1024, 1024)),
        ((1024, 1024), (1920, 1080), (1360, 768)),
        ((1024, 1024), (1080, 1920), (768, 1360)),
        ((1024, 1024), (768, 1152), (832, 1248)),
        ((1024, 1024), (4000, 1000), (2048, 512)),
        ((512, 512), (1920, 1080), (672, 384)),
        ((512, 512), (1000, 1000), (512, 512)),
    ],
)
def test_bucket_matches_hand_derived_value(
    resolution: tuple[int, int], size: tuple[int, int], bucket: tuple[int, int]
) -> None:
    assert BucketRule(resolution).select(size) == bucket


def test_bucket_list_edges() -> None:
    buckets = bucket_resolutions((1024, 1024), 16)
    assert buckets[0] == (512, 2048)
    assert buckets[-1] == (2048, 512)
    assert (1024, 1024) in buckets
    assert all(w % 16 == 0 and h % 16 == 0 for w, h in buckets)
    assert len(buckets) == 65  # 33 widths 512…1024, mirrored, (1024, 1024) once


def test_fit_scale_and_crop() -> None:
    wide = fit_into_bucket((1920, 1080), (1360, 768))
    assert not wide.upscaled
    assert wide.crop_fraction == pytest.approx(1 - 1360 / 1365)
    portrait = fit_into_bucket((768, 1152), (832, 1248))
    assert portrait.upscaled
    assert portrait.scale == pytest.approx(832 / 768)
    assert portrait.crop_fraction == 0.0
    small = fit_into_bucket((1920, 1080), (672, 384))
    assert small.crop_fraction == pytest.approx(1 - 672 / 683)


def test_no_upscale_keeps_small_images_rounded_down() -> None:
    rule = BucketRule((1024, 1024), no_upscale=True)
    assert rule.select((300, 200)) == (288, 192)
    assert rule.select((1920, 1080)) == (1360, 768)  # larger than the area: normal bucket


def test_bucketing_off_uses_the_resolution_itself() -> None:
    rule = BucketRule((1000, 1000), enable_bucket=False)
    assert rule.select((1920, 1080)) == (1000, 1000)
    fit = BucketRule((1024, 1024), enable_bucket=False).fit((1920, 1080))
    assert fit.crop_fraction == pytest.approx(1 - 1024 / 1820)


@pytest.mark.parametrize("kwargs", [{"resolution": (0, 1024)}, {"bucket_step": 0}])
def test_bad_bucket_settings_raise(build, kwargs: dict) -> None:
    build.image("a.png")
    with pytest.raises(InvalidInput) as info:
        inspect_dataset(build.root, **kwargs)
    assert info.value.hint


def test_inspection_bucket_counts(build) -> None:
    build.image("square.png", (1000, 1000), seed=1)
    build.image("wide1.jpg", (1920, 1080), seed=2)
    build.image("wide2.jpg", (1920, 1080), seed=3)
    build.image("tall.png", (768, 1152), seed=4)
    rows = {(b["width"], b["height"]): b for b in inspect_dataset(build.root).to_dict()["buckets"]}
    assert set(rows) == {(1024, 1024), (1360, 768), (832, 1248)}
    assert rows[(1360, 768)]["count"] == 2
    assert rows[(1360, 768)]["upscaled"] == 0
    assert rows[(1360, 768)]["cropped"] == 2
    assert rows[(1360, 768)]["max_crop_fraction"] == pytest.approx(1 - 1360 / 1365, abs=1e-4)
    assert rows[(1024, 1024)]["upscaled"] == 1
    assert rows[(1024, 1024)]["cropped"] == 0
    assert rows[(832, 1248)]["upscaled"] == 1


def test_inspection_at_512(build) -> None:
    build.image("wide.jpg", (1920, 1080), seed=2)
    build.image("square.png", (1000, 1000), seed=1)
    result = inspect_dataset(build.root, resolution=(512, 512)).to_dict()
    rows = {(b["width"], b["height"]): b for b in result["buckets"]}
    assert set(rows) == {(672, 384), (512, 512)}
    assert rows[(512, 512)]["upscaled"] == 0
    assert rows[(512, 512)]["cropped"] == 0
    assert result["resolution"] == [512, 512]


@settings(max_examples=300, deadline=None)
@given(
    width=st.integers(16, 6000),
    height=st.integers(16, 6000),
    resolution=st.sampled_from([(1024, 1024), (960, 544), (512, 512), (768, 1344)]),
    step=st.sampled_from([16, 32]),
)
def test_bucket_choice_matches_musubis_linear_scan(
    width: int, height: int, resolution: tuple[int, int], step: int
) -> None:
    """The bisect lookup picks what a first-minimum linear scan over the buckets picks."""
    import math

    from kura.dataset.buckets import BucketRule

    rule = BucketRule(resolution, step)
    ratio = width / height
    expected, best = rule.buckets[0], math.inf
    for bucket in rule.buckets:
        error = abs(bucket[0] / bucket[1] - ratio)
        if error < best:
            expected, best = bucket, error
    assert rule.select((width, height)) == expected
