"""Sampling during training: what each prompt line asks Musubi's sampler for, and its cost.

Musubi parses every line of the ``--sample_prompts`` file with
``training/sampling_prompts.py`` ``line_to_prompt_dict`` (the line split at ``" --"``, every
piece read, the prompt text too: :mod:`kura.backends.musubi.prompts`;
``w``/``h``/``f``/``s``/``g``/``l``/``n`` read the width, height, frame count, steps,
guidance, CFG scale and negative prompt) and samples each prompt at every sampling point.
What a line leaves out comes from the trainer: ``training/trainer_base.py``
``sample_image_inference`` takes 20 steps at 256x256, one frame, unless the architecture
overrides it (:data:`SAMPLERS`, each with the lines read). Classifier-free guidance runs the
DiT twice per step; when it does is architecture specific too.

Per image: ``steps x forward x (2 with CFG) + VAE decode``; the forward pass is the training
step's FLOP model without backward or recompute (:func:`kura.backends.musubi.estimator.
steptime.forward_seconds`). Per run: every prompt at every sampling point
(``sample_at_first`` + one per ``sample_every_n_epochs``, ``trainer_base.py``
``should_sample_images``), prompts split over the GPUs (``sample_images`` gives each process
every n-th prompt).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "SAMPLERS",
    "SamplePrompt",
    "Sampler",
    "parse_prompt",
    "sampling_points",
]

CfgRule = Literal["negative", "scale", "never", "always"]
"""When CFG runs: ``negative`` — the line gives ``--n`` and the CFG scale passes the test;
``scale`` — the scale passes the test (the negative prompt defaults); ``never`` — guidance is
embedded (distilled); ``always`` — the sampler always runs cond and uncond."""

BASE = "training/trainer_base.py sample_image_inference (20 steps, 256x256, 1 frame)"


@dataclass(frozen=True)
class Sampler:
    """How Musubi's sampler of one architecture fills what a prompt line leaves out."""

    cfg: CfgRule
    source: str
    scale_key: Literal["cfg_scale", "guidance_scale"] = "cfg_scale"
    """The prompt key CFG's scale is read from (``--l``; Kandinsky 5 reads ``--g``)."""
    default_scale: float = 1.0
    greater_than_one: bool = False
    """The test is ``scale > 1`` (else ``scale != 1``)."""
    size: int | None = 256
    """Default width and height; None: the model's native size (the task's resolution)."""
    steps: int | None = 20
    """Default steps; None: a preset decides steps and guidance (``--s`` alone does not say
    whether CFG runs), so Kura cannot time the step."""
    frame_stride: int = 1
    """``frame_count`` is rounded to ``(f - 1) // stride * stride + 1``."""


_NEG: CfgRule = "negative"
SAMPLERS: dict[str, Sampler] = {
    "hunyuan_video": Sampler(
        _NEG,
        BASE + "; hv_train_network.py do_inference: cfg_scale None -> 1.0, CFG if != 1",
        frame_stride=4,
    ),
    "framepack": Sampler(
        _NEG, BASE + "; fpack_train_network.py do_inference: cfg_scale None -> 1.0, CFG if != 1"
    ),
    "hunyuan_video_1_5": Sampler(
        _NEG,
        BASE + "; hv_1_5_train_network.py do_inference: cfg_scale None -> 6.0, CFG if != 1",
        default_scale=6.0,
        frame_stride=4,
    ),
    "wan": Sampler(
        _NEG,
        BASE + "; wan_train_network.py do_inference: cfg_scale None -> sample_guide_scale[0] "
        "(wan/configs: 5.0 Wan 2.1, 3.0/3.5 Wan 2.2), CFG if != 1",
        default_scale=5.0,
        frame_stride=4,
    ),
    "qwen_image": Sampler(
        _NEG,
        BASE + "; qwen_image_train_network.py do_inference: cfg_scale None -> 4.0, CFG if > 1",
        default_scale=4.0,
        greater_than_one=True,
    ),
    "zimage": Sampler(
        "scale",
        BASE + "; zimage_train_network.py do_inference: cfg_scale None -> 4.0, "
        "do_cfg = cfg_scale > 1.0 (no negative prompt needed)",
        default_scale=4.0,
        greater_than_one=True,
    ),
    "krea2": Sampler(
        _NEG,
        BASE + "; krea2_train_network.py do_inference: cfg_scale None -> 5.5, CFG if > 1",
        default_scale=5.5,
        greater_than_one=True,
    ),
    "flux_kontext": Sampler(
        "never", BASE + "; flux_kontext_train_network.py: embedded guidance, no CFG pass"
    ),
    "flux2": Sampler(
        "always",
        BASE + "; flux_2_train_network.py do_inference: denoise_cfg (cond + uncond) for base "
        "models, denoise for guidance-distilled ones (flux2_utils FLUX2_MODEL_INFO)",
    ),
    "kandinsky5": Sampler(
        "scale",
        "kandinsky5_train_network.py sample_images: size task_conf.resolution, steps "
        "task_conf.num_steps (50), guidance --g else task_conf.guidance_weight; "
        "generation_utils.py runs the uncond pass when guidance != 1",
        scale_key="guidance_scale",
        default_scale=5.0,
        size=None,
        steps=50,
        frame_stride=4,
    ),
    "ideogram4": Sampler(
        "never",
        "ideogram4_train_network.py do_inference: the sampler preset decides steps and guidance",
        steps=None,
    ),
    "hidream_o1": Sampler(
        "never",
        "hidream_o1_train_network.py do_inference: select_inference_schedule decides steps "
        "and guidance by model type and reference count (--s only overrides the steps)",
        steps=None,
    ),
}


@dataclass(frozen=True)
class SamplePrompt:
    """One sample image (or clip) as Musubi's sampler will render it."""

    width: int
    height: int
    frames: int
    steps: int | None
    cfg: bool
    asked: tuple[str, ...]
    """What the line itself set (``width``, ``sample_steps`` …); the rest is the default."""

    @property
    def forwards_per_step(self) -> int:
        return 2 if self.cfg else 1


def _fields(line: str) -> dict[str, str]:
    """``line_to_prompt_dict``'s reading of one line (:mod:`kura.backends.musubi.prompts`:
    every piece, the prompt text too, first match per piece, a later piece winning)."""
    from kura.backends.musubi.prompts import pieces

    found: dict[str, str] = {}
    for piece in pieces(line):
        if piece.key in _SIZED and piece.value is not None:
            found[piece.key] = piece.value
    return found


_SIZED = frozenset(
    {
        "width",
        "height",
        "frame_count",
        "seed",
        "sample_steps",
        "guidance_scale",
        "discrete_flow_shift",
        "cfg_scale",
        "negative_prompt",
    }
)
"""The options that change what sampling costs (the file options do not)."""


def _number(text: str | None) -> float | None:
    try:
        return None if text is None else float(text)
    except ValueError:  # "1.2.3" matches [\d\.]+; Musubi logs the error and skips it
        return None


def parse_prompt(
    line: str,
    architecture: str,
    *,
    native: tuple[int, int] | None = None,
    distilled: bool = False,
) -> SamplePrompt:
    """What Musubi samples for one prompt line of ``architecture`` (``native``: the model's
    own size, for samplers that default to it; ``distilled``: a guidance-distilled FLUX.2)."""
    sampler = SAMPLERS[architecture]
    fields = _fields(line)
    default_w, default_h = (sampler.size, sampler.size) if sampler.size else native or (512, 512)
    width = int(fields.get("width", default_w)) // 8 * 8
    height = int(fields.get("height", default_h)) // 8 * 8
    frames = int(fields.get("frame_count", 1))
    frames = (frames - 1) // sampler.frame_stride * sampler.frame_stride + 1
    steps: int | None = sampler.steps
    if "sample_steps" in fields and sampler.steps is not None:
        steps = max(1, min(1000, int(fields["sample_steps"])))
    scale = _number(fields.get(sampler.scale_key))
    scale = sampler.default_scale if scale is None else scale
    passes = scale > 1.0 if sampler.greater_than_one else scale != 1.0
    cfg = {
        "negative": "negative_prompt" in fields and passes,
        "scale": passes,
        "never": False,
        "always": not distilled,
    }[sampler.cfg]
    return SamplePrompt(max(8, width), max(8, height), max(1, frames), steps, cfg, tuple(fields))


def sampling_points(epochs: int, every_n_epochs: int | None, at_first: bool) -> int:
    """How often training samples: ``should_sample_images`` is true at step 0 with
    ``--sample_at_first`` and after every epoch ``e`` with ``e % every_n_epochs == 0``."""
    points = 1 if at_first else 0
    if every_n_epochs:
        points += epochs // every_n_epochs
    return points


def images_per_gpu(prompts: int, gpus: int) -> int:
    """Prompts one process renders: ``sample_images`` hands process i prompts i, i+n, …"""
    return math.ceil(prompts / max(1, gpus))
