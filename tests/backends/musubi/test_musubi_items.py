"""Items per epoch as Musubi's VideoDataset makes them, and the plan that follows from
them (issue 11 items 1, 10, 11, 12)."""

from __future__ import annotations

from typing import Any

import pytest
from musubi_cases import make_spec

from kura.backends.base import ClipFact, DatasetMedia, PlanInputs
from kura.backends.musubi.backend import BACKEND
from kura.backends.musubi.estimation import epoch_buckets, estimate_config
from kura.backends.musubi.items import (
    extracted_frames,
    fps_frame_count,
    framepack_sections,
    rounded_targets,
    video_items,
)
from kura.models.bundles import get_bundle
from kura.planning.gpus import GPU_CLASSES
from kura.schema.dataset import DatasetSpec


def test_targets_round_down_to_4n_plus_1_unique_and_sorted() -> None:
    assert rounded_targets([45, 27, 25, 1]) == (1, 25, 45)


@pytest.mark.parametrize(
    ("extraction", "kwargs", "expected"),
    [
        ("head", {}, [1, 25]),
        ("chunk", {}, [25, 25, 25, 25]),  # 100 // 25 chunks (1 is refused for chunk)
        ("slide", {"stride": 10}, [25] * 8),  # offsets 0, 10, ..., 70
        ("uniform", {"sample": 3}, [25, 25, 25]),
        ("full", {"max_frames": 97}, [97]),
    ],
)
def test_each_extraction_mode(extraction: str, kwargs: dict[str, Any], expected: list[int]) -> None:
    targets = [25] if extraction in ("chunk", "slide", "uniform") else [1, 25]
    assert extracted_frames(100, extraction, targets, **kwargs) == expected


def test_fps_conversion_drops_frames_but_never_adds() -> None:
    assert fps_frame_count(60, 30.0, 16.0, None) == 32
    assert fps_frame_count(48, 24.0, 30.0, None) == 48
    # head reads up to max(target) converted frames: 24 -> 30 fps reaches index 37 early
    assert fps_frame_count(100, 24.0, 30.0, 37) == 30
    assert fps_frame_count(100, None, None, 37) == 37


def test_head_gives_one_item_per_target_that_fits() -> None:
    items = video_items([("a", 100), ("b", 30)], "head", [1, 25, 45])
    assert items.per_frames == {1: 2, 25: 2, 45: 1}
    assert items.count == 5


def test_uniform_with_one_sample_is_head() -> None:
    assert video_items([("a", 100)], "uniform", [25], sample=1).per_frames == {25: 1}


def test_framepack_items_are_sections_of_the_latent_window() -> None:
    assert framepack_sections(37) == 1
    assert framepack_sections(145) == 4  # 37 latent frames -> (37 - 1) // 9
    items = video_items([("a", 145), ("b", 20)], "full", None, max_frames=145, framepack_window=9)
    assert items.per_frames == {33: 4}
    assert items.no_section == ("b",)


def _dataset(name: str, videos: int = 0, images: int = 0) -> DatasetSpec:
    return DatasetSpec.model_validate(
        {
            "name": name,
            "media": f"/data/{name}",
            "facts": {
                "digest": "sha256:0",
                "inspected_at": "2026-01-01",
                "resolution": [640, 640],
                "counts": {"videos": videos, "images": images},
            },
        }
    )


def _inputs(bundle: str, name: str, media: DatasetMedia, **counts: int) -> PlanInputs:
    return PlanInputs(
        bundle=get_bundle(bundle), datasets={name: _dataset(name, **counts)}, media={name: media}
    )


def test_wan_head_counts_every_target_and_costs_each_at_its_frames() -> None:
    spec = make_spec(
        {"model": {"base": "wan2.1-t2v-14b"}},
        datasets=[{"name": "clips", "resolution": [640, 640], "frames": [1, 25, 45]}],
    )
    media = DatasetMedia(clips=(ClipFact("a.mp4", 80, 16.0), ClipFact("b.mp4", 30, 16.0)))
    config = estimate_config(
        spec, _inputs("wan2.1-t2v-14b", "clips", media, videos=2).datasets, {"clips": media}
    )
    assert sorted((b.frames, b.count) for b in config.buckets) == [(1, 2), (25, 2), (45, 1)]
    assert config.total_steps == 10 * 5  # 5 items per epoch, batch 1, 10 epochs


def test_wan_fps_conversion_changes_the_items() -> None:
    spec = make_spec(
        {"model": {"base": "wan2.1-t2v-14b"}},
        datasets=[{"name": "clips", "resolution": [640, 640], "frames": [45]}],
    )
    media = DatasetMedia(clips=(ClipFact("a.mp4", 60, 30.0),))  # 60 @ 30 -> 32 @ 16 fps
    inputs = _inputs("wan2.1-t2v-14b", "clips", media, videos=1)
    config = estimate_config(spec, inputs.datasets, inputs.media)
    assert sum(b.count for b in config.buckets) == 0


def test_framepack_is_costed_at_its_window_not_one_frame() -> None:
    spec = make_spec(
        {"model": {"base": "framepack"}},
        datasets=[{"name": "clips", "resolution": [640, 640], "max_frames": 145}],
    )
    media = DatasetMedia(clips=(ClipFact("a.mp4", 200, 30.0),))
    inputs = _inputs("framepack", "clips", media, videos=1)
    config = estimate_config(spec, inputs.datasets, inputs.media)
    assert [(b.frames, b.count) for b in config.buckets] == [(33, 4)]


def test_control_images_join_the_sequence() -> None:
    spec = make_spec(
        {"model": {"base": "flux1-kontext-dev"}},
        datasets=[{"name": "pairs", "resolution": [1024, 1024]}],
    )
    media = DatasetMedia(images=4, control_count=1)
    inputs = _inputs("flux1-kontext-dev", "pairs", media, images=4)
    with_controls = estimate_config(spec, inputs.datasets, inputs.media)
    assert with_controls.reference_images == 1


def test_ideogram4_plans_and_estimates_without_fp8_keys() -> None:
    spec = make_spec(
        {"model": {"base": "ideogram4"}},
        datasets=[{"name": "photos", "resolution": [1024, 1024]}],
    )
    inputs = _inputs("ideogram4", "photos", DatasetMedia(images=10), images=10)
    written = BACKEND.estimate(spec, inputs, GPU_CLASSES["h100-sxm"])
    assert written.costs
    fit = BACKEND.fit(spec, inputs, GPU_CLASSES["h100-sxm"], host_ram_gib=None)
    assert fit.fits
    assert not {"fp8_base", "fp8_scaled"} & set(fit.settings)


def test_video_items_are_counted_per_clip_bucket() -> None:
    # Musubi's training buckets (enable_bucket) never batch a tall clip with a wide one.
    spec = make_spec(
        {"model": {"base": "wan2.1-t2v-14b"}},
        datasets=[{"name": "clips", "resolution": [640, 640], "frames": [1, 25]}],
    )
    media = DatasetMedia(
        clips=(
            ClipFact("wide.mp4", 30, 16.0, (848, 480)),
            ClipFact("tall.mp4", 30, 16.0, (480, 848)),
        )
    )
    inputs = _inputs("wan2.1-t2v-14b", "clips", media, videos=2)
    buckets, notes = epoch_buckets(spec, inputs.datasets, inputs.media, "wan")
    assert sorted((b.width, b.height, b.frames, b.count) for b in buckets) == [
        (480, 848, 1, 1),
        (480, 848, 25, 1),
        (848, 480, 1, 1),
        (848, 480, 25, 1),
    ]
    assert notes == []


def test_clip_buckets_from_another_resolution_are_placed_again_and_said() -> None:
    spec = make_spec(
        {"model": {"base": "wan2.1-t2v-14b"}},
        datasets=[{"name": "clips", "resolution": [960, 544], "frames": [1]}],
    )
    media = DatasetMedia(clips=(ClipFact("wide.mp4", 30, 16.0, (848, 480)),))
    inputs = _inputs("wan2.1-t2v-14b", "clips", media, videos=1)  # inspected at 640x640
    buckets, notes = epoch_buckets(spec, inputs.datasets, inputs.media, "wan")
    assert [(b.width, b.height) for b in buckets] == [(960, 544)]
    assert "another resolution" in notes[0]


def test_hidream_images_are_bucketed_at_its_32_pixel_step() -> None:
    # Inspection buckets at 16 pixels; Musubi's BucketSelector uses 32 for HiDream-O1.
    dataset = DatasetSpec.model_validate(
        {
            "name": "photos",
            "media": "/data/photos",
            "facts": {
                "digest": "sha256:0",
                "inspected_at": "2026-01-01",
                "resolution": [1024, 1024],
                "counts": {"images": 3},
                "buckets": [
                    {"width": 1184, "height": 880, "count": 1},
                    {"width": 1024, "height": 1024, "count": 2},
                ],
            },
        }
    )
    spec = make_spec(datasets=[{"name": "photos", "resolution": [1024, 1024]}])
    buckets, notes = epoch_buckets(spec, {"photos": dataset}, {}, "hidream_o1")
    assert sorted((b.width, b.height, b.count) for b in buckets) == [
        (1024, 1024, 2),
        (1184, 864, 1),
    ]
    assert "32-pixel step" in notes[0]
    same, none = epoch_buckets(spec, {"photos": dataset}, {}, "zimage")
    assert sorted((b.width, b.height) for b in same) == [(1024, 1024), (1184, 880)]
    assert none == []


@pytest.mark.parametrize(
    ("bundle", "dataset", "expected"),
    [
        # control_resolution 2048 on a 1024 target: each control is four target buckets.
        ("flux2-dev", {"no_resize_control": True, "control_resolution": [2048, 2048]}, 4),
        ("flux2-dev", {"control_resolution": [1448, 1448]}, 2),
        # Qwen-Image-Edit-2509's default control resolution (1024) on a 512 target.
        ("qwen-image-edit-2509", {"resolution": [512, 512]}, 4),
        ("qwen-image-edit-2509", {"resolution": [512, 512], "no_resize_control": True}, 1),
    ],
)
def test_controls_are_costed_at_their_resolution(
    bundle: str, dataset: dict[str, Any], expected: int
) -> None:
    # Musubi resizes a control to a bucket of control_resolution's area (the harness run of
    # the flux2 golden case shows a 2048x2048 control kept at 2032x2016).
    spec = make_spec(
        {"model": {"base": bundle}},
        datasets=[{"name": "pairs", "resolution": [1024, 1024], **dataset}],
    )
    media = DatasetMedia(images=4, control_count=1)
    inputs = _inputs(bundle, "pairs", media, images=4)
    assert estimate_config(spec, inputs.datasets, inputs.media).reference_images == expected


def test_full_extraction_without_max_frames_caps_at_musubis_default() -> None:
    # dataset/config_utils.py:71 max_frames = 129 (issue 23 item 3: sizing never asserts)
    from kura.backends.musubi.items import MAX_FRAMES

    found = video_items([("long.mp4", 400)], "full", None)
    assert MAX_FRAMES == 129 and found.per_frames == {129: 1}
