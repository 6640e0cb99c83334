"""Tokens per sample: how many positions one bucket puts into the DiT's sequence.

Formulas from vram.md §1.1: latent frames ``F' = (F - 1) / temporal + 1`` for video VAEs,
``F' x (H / (vae x patch)) x (W / (vae x patch))`` image tokens, FramePack's packed context
sections, and joint text tokens added only for models that put text into the self-attention
sequence (cross-attention models carry text separately).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kura.backends.musubi.estimator.config import Bucket, EstimateConfig
from kura.sizing.shapes import BlockGroup, ModelShape

__all__ = ["BucketTokens", "bucket_tokens", "text_tokens"]

FRAMEPACK_CLEAN_1X_FRAMES = 2
FRAMEPACK_CLEAN_4X_FRAMES = 16


@dataclass(frozen=True)
class BucketTokens:
    """Tokens one sample of a bucket contributes: image/video, text, and the total in T."""

    bucket: Bucket
    latent_frames: int
    image_tokens: int
    text_tokens: int
    sequence: int

    def seen_by(self, group: BlockGroup) -> int:
        """Tokens per sample that pass through the blocks of ``group``."""
        if group.sees == "text":
            return self.text_tokens
        if group.sees == "image":
            return self.image_tokens
        return self.sequence

    def to_dict(self) -> dict[str, object]:
        return {
            "bucket": self.bucket.to_dict(),
            "latent_frames": self.latent_frames,
            "image_tokens": self.image_tokens,
            "text_tokens": self.text_tokens,
            "sequence": self.sequence,
        }


def text_tokens(shape: ModelShape, config: EstimateConfig) -> int:
    """Text tokens per sample: the override, else the model's typical caption length."""
    count = config.text_tokens if config.text_tokens is not None else shape.text_tokens_typical
    return min(count, shape.text_tokens_max)


def _grid(pixels: int, stride: int) -> int:
    return max(1, math.ceil(pixels / stride))


def _latent_frames(shape: ModelShape, frames: int) -> int:
    if not shape.video or shape.vae_temporal <= 1 or frames <= 1:
        return 1
    return (frames - 1) // shape.vae_temporal + 1


def _image_tokens(shape: ModelShape, bucket: Bucket, latent_frames: int) -> int:
    stride = shape.token_pixels
    per_frame = _grid(bucket.width, stride) * _grid(bucket.height, stride)
    if shape.token_layout != "framepack":
        return latent_frames * per_frame
    # Noisy window + 2 clean 1x frames + clean 2x (2x4x4 embedder over 2 frames) + clean 4x
    # (4x8x8 embedder over 16 frames) (vram.md §1.1).
    clean_2x = _grid(bucket.width, 2 * stride) * _grid(bucket.height, 2 * stride)
    clean_4x = (FRAMEPACK_CLEAN_4X_FRAMES // 4) * (
        _grid(bucket.width, 4 * stride) * _grid(bucket.height, 4 * stride)
    )
    return (latent_frames + FRAMEPACK_CLEAN_1X_FRAMES) * per_frame + clean_2x + clean_4x


def bucket_tokens(shape: ModelShape, config: EstimateConfig, bucket: Bucket) -> BucketTokens:
    """Tokens of one sample of ``bucket`` under ``config`` (reference images included)."""
    latent_frames = _latent_frames(shape, bucket.frames)
    image = _image_tokens(shape, bucket, latent_frames)
    if config.reference_images:
        reference = _grid(bucket.width, shape.token_pixels) * _grid(
            bucket.height, shape.token_pixels
        )
        image += config.reference_images * reference
    text = text_tokens(shape, config)
    sequence = image + shape.extra_fixed_tokens + (text if shape.text_joint else 0)
    return BucketTokens(bucket, latent_frames, image, text, sequence)
