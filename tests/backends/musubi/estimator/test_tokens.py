"""Token counts per bucket (vram.md §1.1 worked examples)."""

from __future__ import annotations

import pytest

from kura.backends.musubi.estimator.config import Bucket, EstimateConfig
from kura.backends.musubi.estimator.tokens import bucket_tokens
from kura.sizing.shapes import get_shape


def _tokens(model: str, width: int, height: int, frames: int = 1, **options: object) -> int:
    config = EstimateConfig.at_resolution(model, width, height, frames, **options)
    return bucket_tokens(get_shape(model), config, config.buckets[0]).sequence


@pytest.mark.parametrize(
    ("model", "size", "expected"),
    [
        ("flux1-kontext-dev", (1024, 1024, 1), 4096 + 512),
        ("krea2", (1024, 1024, 1), 4096 + 512),
        ("qwen-image", (1024, 1024, 1), 4096 + 100),
        ("wan2.1-t2v-14b", (1280, 720, 81), 75_600),
        ("wan2.1-t2v-14b", (1280, 720, 41), 39_600),
        ("wan2.1-t2v-14b", (832, 480, 81), 32_760),
        ("wan2.2-ti2v-5b", (1280, 704, 121), 27_280),
        ("hunyuan-video", (1280, 720, 41), 39_600 + 256),
        ("framepack", (640, 640, 33), 18_400 + 256 + 729),
        ("hidream-o1", (1024, 1024, 1), 1024 + 128),
    ],
)
def test_token_examples(model: str, size: tuple[int, int, int], expected: int) -> None:
    assert _tokens(model, *size) == expected


def test_cross_attention_text_is_not_in_the_sequence() -> None:
    config = EstimateConfig.at_resolution("wan2.1-t2v-14b", 832, 480, 81, text_tokens=64)
    tokens = bucket_tokens(get_shape(config.model), config, config.buckets[0])
    assert tokens.text_tokens == 64
    assert tokens.sequence == tokens.image_tokens


def test_reference_images_add_their_tokens() -> None:
    plain = _tokens("qwen-image", 1024, 1024)
    edit = _tokens("qwen-image", 1024, 1024, reference_images=1)
    assert edit - plain == 4096


def test_text_override_is_capped_at_the_model_maximum() -> None:
    assert _tokens("flux2-klein-4b", 512, 512, text_tokens=4000) == 1024 + 512


def test_bucket_to_dict_round_trips() -> None:
    bucket = Bucket(832, 480, 81, 12)
    assert Bucket(**bucket.to_dict()) == bucket
