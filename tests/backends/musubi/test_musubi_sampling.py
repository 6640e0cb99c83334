"""Sampling during training: the size, steps and CFG Musubi's sampler takes from each prompt
line (issue 11: memory at the prompt's size, not the largest bucket) and the step's time
(issue 12 item 9: per image steps x forward x CFG + decode, x prompts x sampling points)."""

from __future__ import annotations

import pytest
from musubi_cases import make_spec

from kura.backends.base import DatasetMedia, PlanInputs
from kura.backends.musubi.backend import BACKEND
from kura.backends.musubi.estimator.config import Bucket
from kura.backends.musubi.estimator.memory import peak_memory
from kura.backends.musubi.estimator.sampling import SAMPLERS, parse_prompt, sampling_points
from kura.backends.musubi.estimator.steps import vae_decode_seconds
from kura.backends.musubi.estimator.steptime import forward_seconds
from kura.backends.musubi.estimator.tokens import bucket_tokens
from kura.models.bundles import get_bundle
from kura.planning.gpus import GPU_CLASSES
from kura.schema.dataset import DatasetSpec
from kura.sizing.shapes import MODEL_SHAPES, get_shape

H100 = GPU_CLASSES["h100-sxm"]


def test_every_estimator_architecture_has_a_sampler() -> None:
    assert {shape.architecture for shape in MODEL_SHAPES.values()} <= set(SAMPLERS)


def test_a_line_without_options_takes_the_trainer_defaults() -> None:
    # trainer_base.py sample_image_inference: 20 steps, 256x256, 1 frame
    found = parse_prompt("a fox in the snow", "qwen_image")
    assert (found.width, found.height, found.frames, found.steps) == (256, 256, 1, 20)
    assert not found.cfg and found.asked == ()


def test_options_are_read_as_musubi_reads_them() -> None:
    found = parse_prompt("a fox --w 1001 --h 768 --s 30 --n blurry --l 4.0 --d 7", "qwen_image")
    assert (found.width, found.height, found.steps) == (1000, 768, 30)  # rounded down to 8
    assert found.cfg and found.forwards_per_step == 2
    # qwen_image: CFG needs a negative prompt and cfg_scale > 1
    assert not parse_prompt("a fox --n blurry --l 1.0", "qwen_image").cfg
    assert parse_prompt("a fox --n blurry", "qwen_image").cfg  # default cfg_scale 4.0
    assert parse_prompt("a fox --s 5000", "qwen_image").steps == 1000  # clamped 1..1000


def test_cfg_rules_differ_per_architecture() -> None:
    assert parse_prompt("a fox", "zimage").cfg  # do_cfg = cfg_scale (4.0) > 1, no --n needed
    assert not parse_prompt("a fox --l 1", "zimage").cfg
    assert not parse_prompt("a fox --n x", "hunyuan_video").cfg  # default cfg_scale 1.0
    assert parse_prompt("a fox --n x --l 6", "hunyuan_video").cfg
    assert parse_prompt("a fox --n x", "wan").cfg  # sample_guide_scale 5.0 / 3.x
    assert parse_prompt("a fox", "flux2").cfg  # base models: denoise_cfg
    assert not parse_prompt("a fox", "flux2", distilled=True).cfg
    assert not parse_prompt("a fox --n x --l 5", "flux_kontext").cfg
    assert parse_prompt("a fox", "kandinsky5").cfg  # guidance_weight 5.0 != 1
    assert not parse_prompt("a fox --g 1", "kandinsky5").cfg


def test_video_frames_round_to_the_vae_stride_and_kandinsky_defaults_to_native() -> None:
    assert parse_prompt("a fox --f 10", "wan").frames == 9
    found = parse_prompt("a fox", "kandinsky5", native=(512, 512))
    assert (found.width, found.height, found.steps) == (512, 512, 50)
    assert parse_prompt("a fox", "ideogram4").steps is None  # a preset decides


def test_sampling_points_follow_should_sample_images() -> None:
    assert sampling_points(16, 4, False) == 4
    assert sampling_points(16, 4, True) == 5
    assert sampling_points(10, 3, False) == 3
    assert sampling_points(10, None, True) == 1


def _inputs(bundle: str) -> PlanInputs:
    dataset = DatasetSpec.model_validate(
        {
            "name": "photos",
            "media": "/data/photos",
            "facts": {
                "digest": "sha256:0",
                "inspected_at": "2026-01-01",
                "resolution": [1024, 1024],
                "counts": {"images": 20},
            },
        }
    )
    return PlanInputs(
        bundle=get_bundle(bundle),
        datasets={"photos": dataset},
        media={"photos": DatasetMedia(images=20)},
    )


def _sample(prompts: list[str], *, every: int = 5, at_first: bool = False, epochs: int = 10):
    spec = make_spec(
        {
            "model": {"base": "qwen-image"},
            "backend": {
                "name": "musubi-tuner",
                "config": {"gradient_checkpointing": True, "fp8_base": True, "fp8_scaled": True},
            },
            "training": {
                "epochs": epochs,
                "sample_prompts": prompts,
                "sample_every_n_epochs": every,
                "sample_at_first": at_first,
            },
        }
    )
    found = BACKEND.estimate(spec, _inputs("qwen-image"), H100)
    cost = next(c for c in found.costs if c.step == "sample")
    return found, cost


def test_sampling_memory_is_at_the_prompt_size_not_the_largest_bucket() -> None:
    _, default = _sample(["a fox"])
    _, large = _sample(["a fox --w 1024 --h 1024"])
    _, huge = _sample(["a fox --w 2048 --h 2048"])
    assert default.peak_gib is not None and large.peak_gib is not None
    assert huge.peak_gib is not None
    assert default.peak_gib < large.peak_gib < huge.peak_gib
    assert any("256x256x1 (the sampler's default" in note for note in default.notes)
    assert any("largest 2048x2048x1" in note for note in huge.notes)


def test_sampling_time_is_steps_times_forwards_plus_decode_times_prompts_and_points() -> None:
    found, cost = _sample(["a fox --w 512 --h 512 --s 30", "a cat --n blurry"], at_first=True)
    estimate = found.detail["estimate"]
    config = estimate.config
    shape = get_shape(config.model)
    memory = peak_memory(config).breakdown

    def image(width: int, height: int, steps: int, forwards: int) -> float:
        tokens = bucket_tokens(shape, config, Bucket(width, height, 1))
        forward = forward_seconds(shape, config, tokens, memory, H100)
        return steps * forwards * forward + vae_decode_seconds(width, height, 1, H100.bf16_tflops)

    per_point = image(512, 512, 30, 1) + image(256, 256, 20, 2)
    points = 1 + 10 // 5  # sample_at_first + epochs 5 and 10
    assert cost.seconds == pytest.approx(points * per_point)
    assert any("2 image(s) per GPU, 1 with CFG" in note for note in cost.notes)


def test_cfg_and_steps_scale_the_sampling_time() -> None:
    _, plain = _sample(["a fox --w 1024 --h 1024"])
    _, cfg = _sample(["a fox --w 1024 --h 1024 --n blurry"])
    _, longer = _sample(["a fox --w 1024 --h 1024 --s 40"])
    _, twice = _sample(["a fox --w 1024 --h 1024"], every=1, epochs=4)
    assert plain.seconds and cfg.seconds and longer.seconds and twice.seconds
    assert cfg.seconds == pytest.approx(2 * plain.seconds, rel=0.01)  # decode is tiny
    assert longer.seconds == pytest.approx(2 * plain.seconds, rel=0.01)
    assert twice.seconds == pytest.approx(2 * plain.seconds)  # 4 points vs 2


def test_a_preset_sampler_is_named_untimed() -> None:
    spec = make_spec(
        {
            "model": {"base": "ideogram4"},
            "training": {"sample_prompts": ["a fox"], "sample_every_n_epochs": 5},
        }
    )
    found = BACKEND.estimate(spec, _inputs("ideogram4"), H100)
    cost = next(c for c in found.costs if c.step == "sample")
    assert cost.seconds is None
    assert any("preset" in note for note in cost.notes)
