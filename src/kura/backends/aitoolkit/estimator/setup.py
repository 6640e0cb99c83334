"""One AI-Toolkit job as the estimator reads it: the DiT, the knobs, the buckets, sampling.

Tokens per sample follow the shape (``kura.sizing.shapes``): ``F' x (H / (vae x patch)) x
(W / (vae x patch))`` image tokens (vram.md §1.1); edit models put the control image's latents
into the same sequence ([code] extensions_built_in/diffusion_models/flux_kontext/
flux_kontext.py:311-314 and qwen_image/qwen_image_edit.py:260 concatenate them to the packed
latents), so a control doubles the image tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

from kura.backends.aitoolkit.knobs import Knobs
from kura.sizing.shapes import BlockGroup, ModelShape

__all__ = ["AitkSetup", "Bucket", "Tokens", "tokens_of"]


@dataclass(frozen=True)
class Bucket:
    """One training (or sample) size: pixels and frames (1 for images)."""

    width: int
    height: int
    frames: int = 1


@dataclass(frozen=True)
class Tokens:
    """Tokens one sample puts through the DiT."""

    image: int
    text: int
    joint: bool

    @property
    def sequence(self) -> int:
        return self.image + (self.text if self.joint else 0)

    def seen_by(self, group: BlockGroup) -> float:
        if group.sees == "text":
            return self.text
        if group.sees == "image":
            return self.image * group.token_scale
        return self.sequence * group.token_scale


@dataclass(frozen=True)
class AitkSetup:
    """What the estimator needs of one compiled AI-Toolkit job."""

    shape: ModelShape
    arch: str
    knobs: Knobs
    rank: int
    optimizer: str
    buckets: tuple[Bucket, ...]
    control: bool = False
    two_experts: bool = False
    sample: Bucket | None = None
    sample_first: bool = False
    sample_steps: int = 20
    """AI-Toolkit's default ``sample.sample_steps`` ([code] toolkit/config_modules.py:90)."""

    @property
    def quantized_transformer(self) -> bool:
        """``quantize`` quantizes the DiT, except where the class never calls quantize on its
        model (SDXL's UNet: :data:`.components.COMPONENTS`)."""
        from kura.backends.aitoolkit.estimator.components import components_for

        return self.knobs.quantize and components_for(self.arch).quantizes_model

    @property
    def text_encoder_in_training(self) -> bool:
        """The text encoder stays on the GPU through training unless the captions are cached
        or the encoder unloaded ([code] extensions_built_in/sd_trainer/SDTrainer.py:351-378:
        both unload it after encoding)."""
        return not (self.knobs.cache_text_embeddings or self.knobs.unload_text_encoder)


def tokens_of(shape: ModelShape, bucket: Bucket, control: bool) -> Tokens:
    """Tokens of one sample of ``bucket``; a control image adds as many image tokens."""
    side = shape.vae_spatial * shape.patch[1]
    frames = 1
    if shape.video and bucket.frames > 1:
        frames = (bucket.frames - 1) // shape.vae_temporal + 1
    image = (bucket.width // side) * (bucket.height // side) * max(1, frames // shape.patch[0])
    if control:
        image *= 2
    return Tokens(image=image, text=shape.text_tokens_typical, joint=shape.text_joint)
