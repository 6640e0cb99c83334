"""The caching steps are timed (issue 11 item 7, issue 12 item 10): latent caching = start +
VAE (and image encoder) load + items x encode; text-encoder caching = start + encoder load +
captions x 2 P T; each with its wide band, counted in the run's total."""

from __future__ import annotations

import pytest
from musubi_cases import make_spec

from kura.backends.base import DatasetMedia, PlanInputs
from kura.backends.musubi.backend import BACKEND
from kura.backends.musubi.estimator.cachetime import (
    CACHE_TIME_BAND,
    DISK_READ_GBS,
    IMAGE_ENCODERS,
    ITEM_OVERHEAD_S,
    PROCESS_START_S,
    latent_cache_seconds,
    text_encoder_cache_seconds,
)
from kura.backends.musubi.estimator.config import Bucket
from kura.backends.musubi.estimator.steps import ENCODERS
from kura.models.bundles import get_bundle
from kura.planning.gpus import GPU_CLASSES
from kura.runs.timecost import TIME_BAND, time_and_cost
from kura.schema.dataset import DatasetSpec
from kura.sizing.shapes import MODEL_SHAPES

H100 = GPU_CLASSES["h100-sxm"]
RTX4090 = GPU_CLASSES["rtx-4090"]
WAN = ENCODERS["wan2.1-t2v-14b"]
QWEN = ENCODERS["qwen-image"]


def test_latent_caching_scales_with_items_resolution_and_frames() -> None:
    one = latent_cache_seconds(QWEN, (Bucket(1024, 1024, 1, 10),), H100)
    more = latent_cache_seconds(QWEN, (Bucket(1024, 1024, 1, 100),), H100)
    larger = latent_cache_seconds(QWEN, (Bucket(2048, 2048, 1, 10),), H100)
    assert one.load_s == more.load_s and one.start_s == PROCESS_START_S
    assert more.work_s == pytest.approx(10 * one.work_s)
    overhead = 10 * ITEM_OVERHEAD_S
    assert larger.work_s - overhead > 3 * (one.work_s - overhead)  # 4x the pixels
    video = latent_cache_seconds(WAN, (Bucket(832, 480, 81, 10),), H100)
    frame = latent_cache_seconds(WAN, (Bucket(832, 480, 1, 10),), H100)
    # 3D kernels cost more per pixel-frame than the 2D ones of an image
    assert video.work_s - overhead > 81 * (frame.work_s - overhead)
    assert one.band == CACHE_TIME_BAND and more.items == 100


def test_latent_caching_is_slower_on_a_slower_card_and_tiling_adds_the_overlap() -> None:
    items = (Bucket(1280, 720, 129, 4),)
    hv = ENCODERS["hunyuan-video"]
    fast = latent_cache_seconds(hv, items, H100)
    slow = latent_cache_seconds(hv, items, RTX4090)
    assert slow.work_s > fast.work_s
    tiled = latent_cache_seconds(hv, items, H100, tiling=True)
    overhead = 4 * ITEM_OVERHEAD_S  # the encode hides the media loading here
    assert tiled.work_s - overhead == pytest.approx((fast.work_s - overhead) / 0.75**2)


def test_pixel_space_caching_has_no_vae_and_framepack_adds_its_image_encoder() -> None:
    pixel = latent_cache_seconds(ENCODERS["hidream-o1"], (Bucket(1024, 1024, 1, 10),), H100)
    assert pixel.load_s == 0 and "no VAE" in pixel.notes[0]
    items = (Bucket(640, 640, 37, 10),)
    plain = latent_cache_seconds(ENCODERS["framepack"], items, H100)
    siglip = latent_cache_seconds(
        ENCODERS["framepack"], items, H100, image_encoder=IMAGE_ENCODERS["framepack"]
    )
    assert siglip.load_s > plain.load_s and siglip.work_s > plain.work_s
    assert any("SigLIP" in note for note in siglip.notes)


def test_text_encoder_caching_is_load_plus_two_p_t_per_caption() -> None:
    mistral = ENCODERS["flux2-dev"]  # 24 B parameters: its load takes most of a minute or more
    few = text_encoder_cache_seconds(mistral, 10, 512, H100)
    many = text_encoder_cache_seconds(mistral, 1000, 512, H100)
    assert few.load_s == pytest.approx(24.0 * 2 / DISK_READ_GBS)
    assert many.work_s == pytest.approx(100 * few.work_s)
    longer = text_encoder_cache_seconds(mistral, 10, 1024, H100)
    assert longer.work_s > few.work_s
    shipped = ENCODERS["ideogram4"]  # an fp8 file reads one byte per parameter
    assert text_encoder_cache_seconds(shipped, 10, 512, H100).load_s == pytest.approx(
        shipped.params_b / DISK_READ_GBS
    )
    assert many.seconds == pytest.approx(many.start_s + many.load_s + many.work_s)


def _inputs(bundle: str, kind: str, count: int, resolution: int) -> PlanInputs:
    facts = {
        "digest": "sha256:0",
        "inspected_at": "2026-01-01",
        "resolution": [resolution, resolution],
        "counts": {kind: count},
    }
    dataset = DatasetSpec.model_validate({"name": "d", "media": "/data/d", "facts": facts})
    media = DatasetMedia(images=count) if kind == "images" else DatasetMedia()
    return PlanInputs(bundle=get_bundle(bundle), datasets={"d": dataset}, media={"d": media})


def _costs(
    base: str,
    kind: str = "images",
    count: int = 20,
    resolution: int = 1024,
    frames: tuple[int, ...] = (33,),
    **extra,
):
    use = {"name": "d", "repeats": 5, "resolution": [resolution, resolution]}
    if kind == "videos":
        use["frames"] = list(frames)
    spec = make_spec(
        {
            "model": {"base": base},
            "datasets": [use],
            "backend": {"name": "musubi-tuner", "config": {"gradient_checkpointing": True}},
            "training": {"max_steps": 500, **extra},
        }
    )
    found = BACKEND.estimate(spec, _inputs(base, kind, count, resolution), H100)
    return {cost.step: cost for cost in found.costs}


@pytest.mark.parametrize(("base", "kind"), [("qwen-image", "images"), ("wan2.1-t2v-14b", "videos")])
def test_an_image_and_a_video_run_time_both_caching_steps_in_the_total(base, kind) -> None:
    costs = _costs(base, kind)
    for step in ("cache_latents", "cache_text_encoder"):
        cost = costs[step]
        assert cost.seconds is not None and cost.seconds > PROCESS_START_S
        assert cost.seconds_band == CACHE_TIME_BAND
        assert "not measured" in cost.source
    frames = 33 if kind == "videos" else 1
    assert f"largest item 1024x1024x{frames}" in costs["cache_latents"].notes[0]
    # the caching scripts encode every item once: the repeats are not encoded again
    assert any("20 item(s) encoded once" in note for note in costs["cache_latents"].notes)
    assert any("20 caption(s)" in note for note in costs["cache_text_encoder"].notes)
    document = {
        "total_hours": (costs["train"].seconds or 0) / 3600,
        "steps": [
            {"step": c.step, "kind": c.kind, "seconds": c.seconds, "seconds_band": c.seconds_band}
            for c in costs.values()
        ],
    }
    whole = time_and_cost(document, usd_per_hour=3.0)
    assert whole.untimed == ()
    caching = (costs["cache_latents"].seconds or 0) + (costs["cache_text_encoder"].seconds or 0)
    train = (costs["train"].seconds or 0) / 3600
    assert whole.hours == pytest.approx(train + caching / 3600)
    assert whole.usd == pytest.approx(3.0 * (train + caching / 3600))
    assert whole.high_hours == pytest.approx(
        train * (1 + TIME_BAND) + caching / 3600 * (1 + CACHE_TIME_BAND)
    )


def test_plan_caching_time_grows_with_items_and_resolution() -> None:
    small = _costs("qwen-image", count=20, resolution=512)["cache_latents"].seconds or 0
    many = _costs("qwen-image", count=200, resolution=512)["cache_latents"].seconds or 0
    large = _costs("qwen-image", count=20, resolution=1024)["cache_latents"].seconds or 0
    assert many > small and large > small


def test_every_estimator_model_with_an_encoder_times_its_caching_steps() -> None:
    """No caching step is left untimed for a Musubi model whose encoders are known."""
    from kura.backends.musubi.estimator.config import EstimateConfig
    from kura.backends.musubi.estimator.estimate import estimate
    from kura.backends.musubi.fit import StepSetup, evaluation_of

    missing = sorted(set(MODEL_SHAPES) - set(ENCODERS))
    for model in sorted(set(MODEL_SHAPES) & set(ENCODERS)):
        shape = MODEL_SHAPES[model]
        frames = 17 if shape.video else 1
        config = EstimateConfig.at_resolution(model, 512, 512, frames, fp8=shape.fp8_modes[0])
        costs = evaluation_of(estimate(config, H100), StepSetup()).costs
        untimed = [c.step for c in costs if c.kind == "cache" and c.seconds is None]
        assert untimed == [], (model, untimed)
    assert missing == [], f"no encoder table entry (caching not sized): {missing}"


def test_a_video_with_several_clips_is_one_caption_and_several_latents() -> None:
    costs = _costs("wan2.1-t2v-14b", "videos", count=20, frames=(1, 33))
    assert any("40 item(s) encoded once" in note for note in costs["cache_latents"].notes)
    assert any("20 caption(s)" in note for note in costs["cache_text_encoder"].notes)
