"""Musubi's memory aids for the fit ladder, and what to do when none is enough.

The recipe's own memory aids are cleared first (fp8, checkpointing, block swap): the planner
decides them, and a GPU with headroom gets none (DESIGN invariant 3). The aids, in the order
of vram.md §6 as the planner applies them:

1. meaning-preserving artifacts: fp8 weights (``scaled`` where Musubi supports it for the
   architecture, plain ``base`` for HunyuanVideo);
2. speed-only aids: gradient checkpointing, a smaller micro-batch with more accumulation
   (the effective batch is kept), block swap (the fewest blocks that fit, classic or
   H2D-only, whichever is faster), activation CPU offload.

:class:`MusubiFitProblem` describes them as data for the one walker
(:func:`kura.planning.ladder.walk`) and estimates every choice with Musubi's estimator. When
nothing fits, :func:`fastest_fitting` lists recipe-touching options (lower resolution, fewer
frames, smaller batch, lower rank) with their estimated peaks and the smallest catalog GPU
class that fits as is.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from kura.backends.base import AidChoice, Evaluation, MemoryAid, Rung, StepCost
from kura.backends.musubi.estimator.cachetime import (
    CACHE_TIME_BAND,
    IMAGE_ENCODERS,
    latent_cache_seconds,
    text_encoder_cache_seconds,
)
from kura.backends.musubi.estimator.config import Bucket, EstimateConfig
from kura.backends.musubi.estimator.estimate import Estimate, estimate
from kura.backends.musubi.estimator.memory import peak_memory
from kura.backends.musubi.estimator.sampling import (
    SamplePrompt,
    images_per_gpu,
    parse_prompt,
    sampling_points,
)
from kura.backends.musubi.estimator.steps import (
    ENCODERS,
    STEP_BAND,
    VAE_CHUNK_FRAMES,
    latent_cache_gib,
    sample_gib,
    text_encoder_gib,
    vae_decode_seconds,
)
from kura.backends.musubi.estimator.steptime import forward_seconds
from kura.backends.musubi.estimator.tokens import bucket_tokens
from kura.errors import Unsupported
from kura.planning.gpus import GPU_CLASSES, GpuClass, get_gpu_class
from kura.planning.ladder import (
    ASK_FIRST_SLOWDOWN,
    CHOICE_RULE,
    Alternative,
    LadderResult,
    walk,
)
from kura.sizing.optimizers import state_bytes_per_param
from kura.sizing.shapes import GIB, ModelShape, base_model, get_shape

__all__ = [
    "ASK_FIRST_SLOWDOWN",
    "FitPlan",
    "MusubiFitProblem",
    "RecipeOption",
    "StepSetup",
    "config_changes",
    "fastest_fitting",
    "steps_per_epoch",
]

RESOLUTION_SCALES = (0.875, 0.75, 0.625, 0.5)
RANK_FLOOR = 4
PIXEL_STEP = 64
TE_FP8_AID = "text-encoder-fp8"
VAE_AID = "vae-chunking"


@dataclass(frozen=True)
class StepSetup:
    """What the steps around training need to be sized: the adapter's text-encoder fp8
    key (None when it has none or this model version refuses it), whether the VAE takes
    ``--vae_chunk_size``/``--vae_tiling``, whether training samples, and the run's own
    settings of those aids (for the estimate as written)."""

    te_fp8_key: str | None = None
    vae_aids: bool = False
    sampling: bool = False
    te_fp8: bool = False
    vae_chunked: bool = False
    vae_tiled: bool = False
    custom: tuple[str, ...] = ()
    """Steps a person's argv replaced: Kura cannot size them."""
    samples: tuple[SamplePrompt, ...] = ()
    """Every sample prompt as Musubi's sampler will render it (:mod:`.estimator.sampling`)."""
    sample_every_n_epochs: int | None = None
    sample_at_first: bool = False
    epochs: int | None = None
    """The run's epochs when it is given in epochs (else derived from its steps)."""
    cache_items: tuple[Bucket, ...] = ()
    """The items the caching scripts encode, each once (buckets without repeats); empty:
    the estimate's buckets (repeats included, an overestimate the note says)."""
    cache_captions: int | None = None
    """Captions the text-encoder caching encodes (one per media file); None: one per item."""

    def step_settings(self, choice: AidChoice) -> dict[str, object]:
        """backend.config values of the step aids in ``choice``."""
        values: dict[str, object] = {}
        if self.te_fp8_key is not None and TE_FP8_AID in choice:
            values[self.te_fp8_key] = bool(choice[TE_FP8_AID])
        if self.vae_aids and VAE_AID in choice:
            on = bool(choice[VAE_AID])
            values["vae_chunk_size"] = VAE_CHUNK_FRAMES if on else None
            values["vae_tiling"] = on
        return values


@dataclass(frozen=True)
class RecipeOption:
    """A change to the recipe itself, estimated with every memory aid applied and judged by
    the worst step of the run (issue 23 item 4: a change to training cannot fix a sampling
    or caching step that does not fit)."""

    option: str
    change: dict[str, Any]
    peak_gib: float
    upper_gib: float
    fits: bool
    step: str = "train"
    """The worst step with the option applied: its peak is the option's (``fits``: every
    step fits)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "option": self.option,
            "change": dict(self.change),
            "step": self.step,
            "peak_gib": round(self.peak_gib, 2),
            "upper_gib": round(self.upper_gib, 2),
            "fits": self.fits,
        }


@dataclass(frozen=True)
class FitPlan:
    """The answer for one recipe on one GPU class: the configuration to run and why."""

    gpu: str
    fits: bool
    recipe: EstimateConfig
    estimate: Estimate
    rungs: tuple[Rung, ...] = ()
    recipe_options: tuple[RecipeOption, ...] = ()
    smallest_gpu: dict[str, Any] | None = None
    cheapest_priced_gpu: dict[str, Any] | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    alternatives: tuple[Alternative, ...] = ()
    step_settings: dict[str, object] = field(default_factory=dict)
    costs: tuple[StepCost, ...] = ()

    @property
    def config(self) -> EstimateConfig:
        """The configuration to run (the recipe plus the applied aids)."""
        assert self.estimate.config is not None
        return self.estimate.config

    @property
    def ask_first(self) -> bool:
        return any(rung.ask_first for rung in self.rungs)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "fit-plan",
            "gpu": self.gpu,
            "fits": self.fits,
            "ask_first": self.ask_first,
            "rungs": [rung.to_dict() for rung in self.rungs],
            "estimate": self.estimate.to_dict(),
            "steps": [_cost_document(cost) for cost in self.costs],
            "recipe_options": [option.to_dict() for option in self.recipe_options],
            "smallest_gpu": self.smallest_gpu,
            "cheapest_priced_gpu": self.cheapest_priced_gpu,
            "notes": list(self.notes),
            "rule": CHOICE_RULE,
            "alternatives": [a.to_dict() for a in self.alternatives],
        }


def _fp8_choice(shape: ModelShape) -> str | None:
    """The fp8 mode the ladder may add, None when the model has no bf16 alternative."""
    if "none" not in shape.fp8_modes:
        return None
    if "scaled" in shape.fp8_modes:
        return "scaled"
    return "base" if "base" in shape.fp8_modes else None


def _mask_aid(recipe: EstimateConfig, shape: ModelShape) -> bool:
    """Whether --split_attn is an aid here: it removes HunyuanVideo's dense SDPA mask."""
    return shape.dense_sdpa_mask and recipe.attention == "sdpa" and not recipe.split_attn


def _bare(recipe: EstimateConfig, shape: ModelShape) -> EstimateConfig:
    """The recipe without memory aids (an fp8-only model keeps its only weight format)."""
    return recipe.replace(
        fp8="none" if "none" in shape.fp8_modes else shape.fp8_modes[0],
        gradient_checkpointing="off",
        blocks_to_swap=0,
        swap_h2d_only=False,
    )


def musubi_aids(
    recipe: EstimateConfig,
    shape: ModelShape,
    setup: StepSetup | None = None,
    *,
    fixed_micro_batch: bool = False,
) -> tuple[MemoryAid, ...]:
    """The memory aids Musubi offers for ``recipe``'s model, as the ladder's data; no
    micro-batch aid when a person set the micro-batch or its accumulation
    (``fixed_micro_batch``): the aid changes both keys together, and a person's value is
    never replaced (DESIGN invariant 10)."""
    aids: list[MemoryAid] = []
    setup = setup or StepSetup()
    encoder = ENCODERS.get(base_model(shape.id))
    if setup.te_fp8_key and encoder is not None and not encoder.shipped_fp8:
        aids.append(
            MemoryAid(
                name=TE_FP8_AID,
                rung=1,
                keys=(setup.te_fp8_key,),
                saves=f"half the {encoder.title} weights while caching text-encoder outputs",
                costs="fp8 rounding of the cached text embeddings",
            )
        )
    if setup.vae_aids:
        aids.append(
            MemoryAid(
                name=VAE_AID,
                rung=3,
                keys=("vae_chunk_size", "vae_tiling"),
                saves="the VAE's working set while caching latents (temporal chunks, "
                "spatial tiles)",
                costs="slower latent caching",
            )
        )
    fp8 = _fp8_choice(shape)
    if fp8:
        aids.append(
            MemoryAid(
                name="fp8",
                rung=1,
                keys=("fp8_base", "fp8_scaled"),
                saves="stored DiT weights at 1 byte per parameter",
                costs="dequantisation time per step; needs checkpointing to pay off",
                levels=("none", fp8),
                preferred=True,
            )
        )
    aids.append(
        MemoryAid(
            name="gradient-checkpointing",
            rung=2,
            keys=("gradient_checkpointing",),
            saves="every block's activations but one",
            costs="one more forward pass per step (~30 % slower)",
        )
    )
    if _mask_aid(recipe, shape):
        aids.append(
            MemoryAid(
                name="split-attention",
                rung=3,
                keys=("split_attn",),
                saves="the dense N x N attention mask SDPA builds",
                costs="attention per sample instead of per batch",
            )
        )
    batch = recipe.micro_batch
    if batch > 1 and not fixed_micro_batch:
        aids.append(
            MemoryAid(
                name="micro-batch",
                rung=4,
                keys=("batch_size", "gradient_accumulation_steps"),
                saves="activations of the samples not in the micro-batch",
                costs="less parallel work per step (the effective batch is kept)",
                levels=tuple(m for m in range(batch, 0, -1) if batch % m == 0),
            )
        )
    if shape.swap_limit >= 1:
        aids.append(
            MemoryAid(
                name="block-swap",
                rung=5,
                keys=("blocks_to_swap",),
                saves="resident weights of each swapped block",
                costs="host RAM and PCIe transfers per step",
                counted=True,
                limit=shape.swap_limit,
            )
        )
        aids.append(
            MemoryAid(
                name="h2d-only",
                rung=5,
                keys=("block_swap_h2d_only",),
                saves="the device-to-host copy of swapped blocks",
                costs="needs gradient checkpointing",
                requires=("gradient-checkpointing", "block-swap"),
                modifier_of="block-swap",
            )
        )
    if shape.gc_cpu_offload:
        aids.append(
            MemoryAid(
                name="activation-offload",
                rung=6,
                keys=("gradient_checkpointing_cpu_offload",),
                saves="activation checkpoints (moved to CPU RAM)",
                costs="PCIe transfers of every checkpoint",
                requires=("gradient-checkpointing",),
            )
        )
    return tuple(aids)


class MusubiFitProblem:
    """One recipe on one GPU class with Musubi's memory aids, for the ladder."""

    def __init__(
        self,
        recipe: EstimateConfig,
        gpu: GpuClass,
        setup: StepSetup | None = None,
        *,
        fixed_micro_batch: bool = False,
    ):
        self.shape = get_shape(recipe.model)
        self.recipe = _bare(recipe, self.shape)
        self.gpu = gpu
        self.setup = setup
        """None sizes training alone (the estimator's own question)."""
        self.fixed_micro_batch = fixed_micro_batch
        self.aids = musubi_aids(self.recipe, self.shape, setup, fixed_micro_batch=fixed_micro_batch)
        self._estimates: dict[EstimateConfig, Estimate | None] = {}

    def baseline(self) -> AidChoice:
        return {aid.name: aid.off for aid in self.aids}

    def config(self, choice: AidChoice) -> EstimateConfig:
        """The estimator configuration ``choice`` stands for."""
        recipe = self.recipe
        batch = recipe.micro_batch * recipe.grad_accum
        micro = int(str(choice.get("micro-batch", recipe.micro_batch)))
        checkpointing = "off"
        if choice.get("gradient-checkpointing"):
            checkpointing = "cpu-offload" if choice.get("activation-offload") else "on"
        return recipe.replace(
            fp8=str(choice.get("fp8", recipe.fp8)),
            gradient_checkpointing=checkpointing,
            micro_batch=micro,
            grad_accum=batch // micro,
            blocks_to_swap=int(str(choice.get("block-swap", 0))),
            swap_h2d_only=bool(choice.get("h2d-only", False)),
            split_attn=bool(choice.get("split-attention", recipe.split_attn)),
        )

    def estimate(self, choice: AidChoice) -> Estimate | None:
        config = self.config(choice)
        if config not in self._estimates:
            try:
                self._estimates[config] = estimate(config, self.gpu)
            except Unsupported:
                self._estimates[config] = None
        return self._estimates[config]

    def evaluate(self, choice: AidChoice) -> Evaluation | None:
        found = self.estimate(choice)
        if found is None:
            return None
        return evaluation_of(
            found,
            self.setup,
            te_fp8=bool(choice.get(TE_FP8_AID, False)),
            vae=bool(choice.get(VAE_AID, False)),
        )

    def change(self, aid: MemoryAid, choice: AidChoice) -> Mapping[str, object]:
        config = self.config(choice)
        if aid.name == "fp8":
            return {"fp8": config.fp8}
        if aid.name == "gradient-checkpointing":
            return {"gradient_checkpointing": "on"}
        if aid.name == "micro-batch":
            return {"micro_batch": config.micro_batch, "grad_accum": config.grad_accum}
        if aid.name == "block-swap":
            return {"blocks_to_swap": config.blocks_to_swap, "swap_h2d_only": config.swap_h2d_only}
        if aid.name == "split-attention":
            return {"split_attn": True}
        if aid.name in (TE_FP8_AID, VAE_AID) and self.setup is not None:
            return self.setup.step_settings(choice)
        return {"gradient_checkpointing": "cpu-offload"}

    def reason(self, aid: MemoryAid, before: Evaluation, after: Evaluation) -> str:
        if aid.name in (TE_FP8_AID, VAE_AID):
            step = "cache_text_encoder" if aid.name == TE_FP8_AID else "cache_latents"
            was, now = _step_cost(before, step), _step_cost(after, step)
            return (
                f"{step} peaks at {was.upper_gib or 0:.1f} GiB (band top) without it, over "
                f"{self.gpu.usable_gib:.1f} GiB usable; {now.upper_gib or 0:.1f} GiB with it"
            )
        return _reason(aid.name, _detail(before), _detail(after), self.recipe, self.shape)

    def settings(self, choice: AidChoice) -> Mapping[str, object]:
        steps = self.setup.step_settings(choice) if self.setup is not None else {}
        return {**config_changes(self.config(choice)), **steps}


def steps_per_epoch(
    buckets: tuple[Any, ...], micro_batch: int, accumulation: int, gpus: int
) -> int:
    """Optimizer steps per epoch: batches never mix buckets (Musubi groups by bucket)."""
    batches = sum(math.ceil(int(b.count) / micro_batch) for b in buckets)
    return max(1, math.ceil(batches / (accumulation * gpus)))


def config_changes(estimate_config: Any) -> dict[str, Any]:
    """The ladder-managed backend.config values that realise an estimator configuration."""
    from kura.sizing.shapes import get_shape

    values: dict[str, Any] = {
        "fp8_base": estimate_config.fp8 in ("base", "scaled"),
        "fp8_scaled": estimate_config.fp8 == "scaled",
        "gradient_checkpointing": estimate_config.gradient_checkpointing != "off",
        "gradient_checkpointing_cpu_offload": estimate_config.gradient_checkpointing
        == "cpu-offload",
        "batch_size": estimate_config.micro_batch,
        "gradient_accumulation_steps": estimate_config.grad_accum,
        "blocks_to_swap": estimate_config.blocks_to_swap,
        "block_swap_h2d_only": estimate_config.swap_h2d_only,
        "split_attn": estimate_config.split_attn,
    }
    if "none" not in get_shape(estimate_config.model).fp8_modes:
        # The weights are fp8 as shipped: the trainer takes no fp8 flag for them.
        del values["fp8_base"], values["fp8_scaled"]
    if estimate_config.blocks_to_swap and estimate_config.swap_h2d_only:
        values["block_swap_ring_size"] = estimate_config.swap_ring_size
    if estimate_config.blocks_to_swap:
        values["use_pinned_memory_for_block_swap"] = estimate_config.pinned_swap
    return values


def evaluation_of(
    found: Estimate, setup: StepSetup | None = None, *, te_fp8: bool = False, vae: bool = False
) -> Evaluation:
    """Musubi's estimate as the ladder's evaluation: every step the run takes, each with its
    own peak and fit (``setup`` None: training only, as the estimator alone sizes it)."""
    train = StepCost(
        step="train",
        kind="train",
        peak_gib=found.peak_vram_gib,
        upper_gib=found.upper_gib,
        host_ram_gib=found.host_ram_gib,
        seconds=None if found.total_hours is None else found.total_hours * 3600,
        fits=found.fits,
        source="Musubi estimator (kura.backends.musubi.estimator)",
    )
    costs = [train]
    if setup is not None:
        costs = [*_cache_costs(found, setup, te_fp8=te_fp8, vae=vae), train]
        if setup.sampling:
            costs.append(_sample_cost(found, setup))
        costs = [_custom(cost) if cost.step in setup.custom else cost for cost in costs]
    return Evaluation(
        costs=tuple(costs), step_seconds=found.step_seconds, detail={"estimate": found}
    )


def _custom(cost: StepCost) -> StepCost:
    """A step a person's argv replaced: Kura cannot say what it costs."""
    return StepCost(
        step=cost.step,
        kind=cost.kind,
        peak_gib=None,
        upper_gib=None,
        host_ram_gib=None,
        seconds=None,
        fits=None,
        source="custom command (backend.config escape hatch): not sized",
        notes=("Kura cannot size a command it did not generate",),
    )


def _fit(peak: float, usable: float | None) -> tuple[float, bool | None]:
    upper = peak * (1 + STEP_BAND / 2)
    return upper, None if usable is None else upper <= usable


def _largest_vae_call(buckets: tuple[Bucket, ...], micro_batch: int) -> tuple[Bucket, int]:
    """The bucket whose VAE call is largest, and how many of its items that call encodes.

    Latent caching batches the items of one bucket and frame count (``batch_key``,
    ``dataset/image_video_dataset.py:776-806``) up to the dataset's ``batch_size``, Kura's
    micro-batch, and encodes each batch in one VAE call (``cache_latents.py:312-314``;
    FramePack stacks the batch and encodes the whole section-aligned clip,
    ``fpack_cache_latents.py:46-85``)."""
    per_call = max(1, micro_batch)

    def items(bucket: Bucket) -> int:
        return max(1, min(bucket.count, per_call))

    largest = max(buckets, key=lambda b: b.width * b.height * b.frames * items(b))
    return largest, items(largest)


def _cache_costs(found: Estimate, setup: StepSetup, *, te_fp8: bool, vae: bool) -> list[StepCost]:
    encoder = ENCODERS.get(base_model(found.model))
    config = found.config
    if encoder is None or config is None:
        return []
    usable = found.usable_gib
    fp8 = te_fp8 or setup.te_fp8
    te_peak = text_encoder_gib(encoder, fp8)
    te_upper, te_fits = _fit(te_peak, usable)
    encoded = setup.cache_items or config.buckets
    largest, together = _largest_vae_call(encoded, config.micro_batch)
    chunk = vae or setup.vae_chunked
    tiled = vae or setup.vae_tiled
    vae_peak = latent_cache_gib(
        encoder,
        largest.width,
        largest.height,
        largest.frames,
        chunk=chunk,
        tiling=tiled,
        items=together,
    )
    vae_upper, vae_fits = _fit(vae_peak, usable)
    te_notes: tuple[str, ...] = (
        f"{encoder.title} resident in {'fp8' if fp8 or encoder.shipped_fp8 else 'bf16'}",
    )
    if encoder.fp8_refused and not fp8:
        te_notes += (f"no fp8 for it: {encoder.fp8_refused}",)
    vae_notes: tuple[str, ...] = (
        f"largest item {largest.width}x{largest.height}x{largest.frames}"
        + (f", {together} per VAE call (batch_size)" if together > 1 else "")
        + (", chunked" if chunk and setup.vae_aids else "")
        + (", tiled" if tiled and setup.vae_aids else ""),
    )
    vae_seconds = te_seconds = band = None
    if found.gpu is None:
        vae_notes += ("not timed: no GPU class",)
        te_notes += ("not timed: no GPU class",)
    else:
        gpu = get_gpu_class(found.gpu)
        items = setup.cache_items or config.buckets
        if not setup.cache_items:
            vae_notes += ("items counted with their repeats (an overestimate)",)
        latents = latent_cache_seconds(
            encoder,
            items,
            gpu,
            tiling=tiled and setup.vae_aids,
            image_encoder=IMAGE_ENCODERS.get(base_model(found.model)),
        )
        captions = setup.cache_captions or sum(bucket.count for bucket in items)
        tokens = get_shape(config.model).text_tokens_max
        text = text_encoder_cache_seconds(encoder, captions, tokens, gpu, fp8=fp8)
        vae_seconds, te_seconds, band = latents.seconds, text.seconds, latents.band
        vae_notes += latents.notes
        te_notes += text.notes
    return [
        StepCost(
            step="cache_latents",
            kind="cache",
            peak_gib=vae_peak,
            upper_gib=vae_upper,
            host_ram_gib=None,
            seconds=vae_seconds,
            fits=vae_fits,
            source=_CACHE_SOURCE.format(
                "VAE encode FLOPs + loading, [assumed] activations, disk and loader speeds"
            ),
            notes=vae_notes,
            seconds_band=band,
        ),
        StepCost(
            step="cache_text_encoder",
            kind="cache",
            peak_gib=te_peak,
            upper_gib=te_upper,
            host_ram_gib=None,
            seconds=te_seconds,
            fits=te_fits,
            source=_CACHE_SOURCE.format(f"{encoder.source}; 2 x parameters x tokens + loading"),
            notes=te_notes,
            seconds_band=band,
        ),
    ]


_CACHE_SOURCE = (
    "kura.backends.musubi.estimator.steps + .cachetime ({}; time derived, not measured: "
    f"±{CACHE_TIME_BAND:.0%})"
)


def _sample_cost(found: Estimate, setup: StepSetup) -> StepCost:
    """Sampling: memory at the largest prompt's size, time for every prompt at every point."""
    encoder = ENCODERS.get(base_model(found.model))
    config = found.config
    resident = found.breakdown.get("weights", 0.0) + found.breakdown.get("lora_and_optimizer", 0.0)
    resident += found.breakdown.get("context", 0.0)
    if config is None:
        upper, fits = _fit(resident, found.usable_gib)
        return StepCost("sample", "sample", resident, upper, None, None, fits, _SAMPLE_SOURCE)
    shape = get_shape(config.model)
    prompts = setup.samples or (parse_prompt("", shape.architecture),)
    memory = peak_memory(config).breakdown
    peak = resident
    largest = max(prompts, key=lambda p: p.width * p.height * p.frames)
    for prompt in prompts:
        tokens = bucket_tokens(shape, config, Bucket(prompt.width, prompt.height, prompt.frames))
        forward = max(g.act_bytes_per_token * tokens.seen_by(g) for g in shape.groups) / GIB
        if encoder is not None:
            prompt_peak = sample_gib(
                encoder, resident, prompt.width, prompt.height, prompt.frames, forward
            )
        else:
            prompt_peak = resident + forward
        peak = max(peak, prompt_peak)
    upper, fits = _fit(peak, found.usable_gib)
    points = sampling_points(
        _epochs(found, setup), setup.sample_every_n_epochs, setup.sample_at_first
    )
    notes = [
        f"{len(prompts)} prompt(s) x {points} sampling point(s); largest "
        f"{largest.width}x{largest.height}x{largest.frames}"
        + (
            ""
            if "width" in largest.asked
            else " (the sampler's default: the prompt sets no --w/--h)"
        ),
    ]
    seconds = None
    if found.gpu is None:
        notes.append("not timed: no GPU class")
    elif any(p.steps is None for p in prompts):
        notes.append("not timed: the trainer's sampler preset decides the steps (give --s)")
    else:
        gpu = get_gpu_class(found.gpu)
        per_image = []
        for prompt in prompts:
            tokens = bucket_tokens(
                shape, config, Bucket(prompt.width, prompt.height, prompt.frames)
            )
            forward_s = forward_seconds(shape, config, tokens, memory, gpu)
            steps = prompt.steps or 0
            decode = vae_decode_seconds(prompt.width, prompt.height, prompt.frames, gpu.bf16_tflops)
            per_image.append(steps * prompt.forwards_per_step * forward_s + decode)
        gpus = config.gpu_count
        per_point = max(sum(per_image[i::gpus]) for i in range(min(gpus, len(per_image))))
        seconds = points * per_point
        cfg = sum(1 for p in prompts if p.cfg)
        notes.append(
            f"{seconds / 60:.1f} min: {per_point:.1f} s per sampling point "
            f"({images_per_gpu(len(prompts), gpus)} image(s) per GPU"
            + (f", {cfg} with CFG: two forwards per step" if cfg else "")
            + ")"
        )
    return StepCost(
        step="sample",
        kind="sample",
        peak_gib=peak,
        upper_gib=upper,
        host_ram_gib=None,
        seconds=seconds,
        fits=fits,
        source=_SAMPLE_SOURCE,
        notes=tuple(notes),
    )


_SAMPLE_SOURCE = (
    "kura.backends.musubi.estimator.steps + .sampling (resident DiT, forward at the prompt's "
    "size x steps x CFG + VAE decode, [assumed] decode)"
)


def _epochs(found: Estimate, setup: StepSetup) -> int:
    """Epochs the run trains: as given, else its steps over steps per epoch (Musubi's
    ``num_train_epochs = ceil(max_train_steps / steps per epoch)``)."""
    if setup.epochs:
        return setup.epochs
    config = found.config
    if config is None or not config.total_steps:
        return 1
    per_epoch = steps_per_epoch(
        config.buckets, config.micro_batch, config.grad_accum, config.gpu_count
    )
    return math.ceil(config.total_steps / per_epoch)


def _cost_document(cost: StepCost) -> dict[str, Any]:
    return {
        "step": cost.step,
        "kind": cost.kind,
        "peak_gib": None if cost.peak_gib is None else round(cost.peak_gib, 2),
        "upper_gib": None if cost.upper_gib is None else round(cost.upper_gib, 2),
        "seconds": None if cost.seconds is None else round(cost.seconds, 1),
        "seconds_band": cost.seconds_band,
        "fits": cost.fits,
        "source": cost.source,
        "notes": list(cost.notes),
    }


def _step_cost(result: Evaluation, step: str) -> StepCost:
    return next(cost for cost in result.costs if cost.step == step)


def _detail(result: Evaluation) -> Estimate:
    found = result.detail["estimate"]
    assert isinstance(found, Estimate)
    return found


def _reason(
    aid: str, before: Estimate, after: Estimate, recipe: EstimateConfig, shape: ModelShape
) -> str:
    aids = after.config
    assert aids is not None
    b, a = before.breakdown, after.breakdown
    if aid == "fp8":
        stored = shape.weights_gib
        return (
            f"fp8 {aids.fp8} weights for {shape.architecture} (Musubi supports it for LoRA): "
            f"stored weights {stored[before.config.fp8 if before.config else 'none']:.1f} -> "
            f"{stored[aids.fp8]:.1f} GiB; autograd keeps a bf16 copy of each dequantised "
            "weight, so the saving needs gradient checkpointing (vram.md §4.5)"
        )
    if aid == "gradient-checkpointing":
        return (
            f"without checkpointing every block's activations stay alive: "
            f"activations {b['activations']:.1f} -> {a['activations']:.1f} GiB"
        )
    if aid == "micro-batch":
        return (
            f"micro-batch {recipe.micro_batch} -> {aids.micro_batch} with gradient "
            f"accumulation {recipe.grad_accum} -> {aids.grad_accum} (effective batch "
            f"{recipe.effective_batch} kept): activations {b['activations']:.1f} -> "
            f"{a['activations']:.1f} GiB"
        )
    if aid == "split-attention":
        return (
            f"--split_attn drops the dense N x N attention mask SDPA builds for "
            f"{shape.architecture}: extras {b['extras']:.1f} -> {a['extras']:.1f} GiB"
        )
    if aid == "block-swap":
        mode = "H2D-only" if aids.swap_h2d_only else "classic"
        return (
            f"{aids.blocks_to_swap} blocks swapped ({mode}), the fewest that fit: resident "
            f"weights {b['weights']:.1f} -> {a['weights']:.1f} GiB, "
            f"host RAM {after.host_ram_gib:.0f} GiB"
        )
    return (
        f"activation checkpoints to CPU RAM: activations {b['activations']:.1f} -> "
        f"{a['activations']:.1f} GiB"
    )


def _scaled_buckets(buckets: tuple[Bucket, ...], scale: float) -> tuple[Bucket, ...]:
    def side(pixels: int) -> int:
        return max(PIXEL_STEP, int(pixels * scale) // PIXEL_STEP * PIXEL_STEP)

    return tuple(Bucket(side(b.width), side(b.height), b.frames, b.count) for b in buckets)


def _fewer_frames(buckets: tuple[Bucket, ...], scale: float) -> tuple[Bucket, ...]:
    def frames(count: int) -> int:
        if count <= 1:
            return count
        latent = max(1, int(((count - 1) // 4) * scale))
        return latent * 4 + 1

    return tuple(Bucket(b.width, b.height, frames(b.frames), b.count) for b in buckets)


def _most_aided(
    recipe: EstimateConfig, shape: ModelShape, *, fixed_micro_batch: bool = False
) -> EstimateConfig:
    """The recipe with every memory aid at its strongest (least VRAM); a micro-batch a
    person set stays."""
    fp8 = _fp8_choice(shape) or shape.fp8_modes[0]
    gc = "cpu-offload" if shape.gc_cpu_offload else "on"
    micro = recipe.micro_batch if fixed_micro_batch else 1
    return recipe.replace(
        fp8=fp8,
        gradient_checkpointing=gc,
        micro_batch=micro,
        grad_accum=recipe.micro_batch * recipe.grad_accum // micro,
        blocks_to_swap=shape.swap_limit,
        swap_h2d_only=False,
        offload_inactive_dit=False,
        split_attn=recipe.split_attn or _mask_aid(recipe, shape),
    )


@dataclass(frozen=True)
class _Judge:
    """Judges a recipe option on one GPU class by its worst step: every step the run
    takes (caching, training, sampling) with every memory aid at its strongest, the step
    aids (text-encoder fp8, VAE chunking) included."""

    gpu: GpuClass
    setup: StepSetup | None
    te_fp8: bool = False
    vae: bool = False

    def option(
        self,
        name: str,
        change: dict[str, Any],
        config: EstimateConfig,
        setup: StepSetup | None = None,
        *,
        off_gpu: tuple[str, ...] = (),
    ) -> RecipeOption:
        """``setup``: the steps around training as the option changes them (default: as
        they are); ``off_gpu``: steps the option moves off the GPU."""
        found = estimate(config, self.gpu)
        setup = setup or self.setup
        if setup is None:
            return RecipeOption(
                name, change, found.peak_vram_gib, found.upper_gib, bool(found.fits)
            )
        costs = [
            cost
            for cost in evaluation_of(found, setup, te_fp8=self.te_fp8, vae=self.vae).costs
            if cost.step not in off_gpu
        ]
        worst = max(costs, key=lambda c: -1.0 if c.upper_gib is None else c.upper_gib)
        fits = all(cost.fits is True for cost in costs)
        return RecipeOption(
            name, change, worst.peak_gib or 0.0, worst.upper_gib or 0.0, fits, worst.step
        )


def _judge(problem: MusubiFitProblem, gpu: GpuClass) -> _Judge:
    names = {aid.name for aid in problem.aids}
    return _Judge(gpu, problem.setup, TE_FP8_AID in names, VAE_AID in names)


def _first_fitting(options: list[RecipeOption]) -> RecipeOption | None:
    for option in options:
        if option.fits:
            return option
    return options[-1] if options else None


def _scaled_setup(setup: StepSetup | None, buckets: tuple[Bucket, ...]) -> StepSetup | None:
    """The caching steps encode the changed items too."""
    if setup is None or not setup.cache_items:
        return setup
    return replace(setup, cache_items=buckets)


def _recipe_options(
    problem: MusubiFitProblem, failing: list[str], fixed_micro_batch: bool = False
) -> list[RecipeOption]:
    """Recipe changes (with every aid applied), each judged by its worst step: first what
    changes the steps that do not fit besides training (smaller or shorter sample prompts,
    sampling off, text-encoder caching off the GPU), then the training recipe's own
    (resolution, frames, optimizer, rank): per kind the mildest that fits, else the
    strongest."""
    recipe, shape, gpu = problem.recipe, problem.shape, problem.gpu
    judge = _judge(problem, gpu)
    aided = _most_aided(recipe, shape, fixed_micro_batch=fixed_micro_batch)
    setup = problem.setup
    result: list[RecipeOption] = _step_options(judge, aided, setup, failing)
    if fixed_micro_batch and recipe.micro_batch > 1:
        smaller = _most_aided(recipe, shape)
        result.append(
            judge.option(
                f"micro-batch 1, accumulation {smaller.grad_accum} (your batch_size "
                f"{recipe.micro_batch}; the effective batch is kept)",
                {"batch_size": 1, "gradient_accumulation_steps": smaller.grad_accum},
                smaller,
            )
        )
    cached = setup.cache_items if setup is not None else ()
    resolution = [
        judge.option(
            f"resolution x{scale}",
            {"buckets": [b.to_dict() for b in _scaled_buckets(recipe.buckets, scale)]},
            aided.replace(buckets=_scaled_buckets(recipe.buckets, scale)),
            _scaled_setup(setup, _scaled_buckets(cached, scale)),
        )
        for scale in RESOLUTION_SCALES
    ]
    result += [option for option in [_first_fitting(resolution)] if option]
    if shape.video and any(b.frames > 1 for b in recipe.buckets):
        frames = [
            judge.option(
                f"frames x{scale}",
                {"buckets": [b.to_dict() for b in _fewer_frames(recipe.buckets, scale)]},
                aided.replace(buckets=_fewer_frames(recipe.buckets, scale)),
                _scaled_setup(setup, _fewer_frames(cached, scale)),
            )
            for scale in RESOLUTION_SCALES
        ]
        result += [option for option in [_first_fitting(frames)] if option]
    if state_bytes_per_param(recipe.optimizer, recipe.rank) > state_bytes_per_param(
        "adafactor", recipe.rank
    ):
        result.append(
            judge.option(
                "optimizer adafactor",
                {"optimizer": "adafactor"},
                aided.replace(optimizer="adafactor"),
            )
        )
    ranks = []
    rank = recipe.rank // 2
    while rank >= RANK_FLOOR:
        ranks.append(judge.option(f"rank {rank}", {"rank": rank}, aided.replace(rank=rank)))
        rank //= 2
    result += [option for option in [_first_fitting(ranks)] if option]
    return result


SAMPLE_SCALES = (0.75, 0.5)


def _step_options(
    judge: _Judge, aided: EstimateConfig, setup: StepSetup | None, failing: list[str]
) -> list[RecipeOption]:
    """What fixes a blocking step other than training, each judged by the worst step."""
    if setup is None:
        return []
    out: list[RecipeOption] = []
    if "sample" in failing and setup.sampling:
        prompts = setup.samples or (parse_prompt("", get_shape(aided.model).architecture),)
        smaller = [
            judge.option(
                f"sample prompts at x{scale} size (--w/--h)",
                {"sample_prompts": [_size(p, scale) for p in prompts]},
                aided,
                replace(setup, samples=tuple(_sample_scaled(p, scale) for p in prompts)),
            )
            for scale in SAMPLE_SCALES
        ]
        out += [option for option in [_first_fitting(smaller)] if option]
        if any(p.frames > 1 for p in prompts):
            shorter = tuple(replace(p, frames=_fewer_frame_count(p.frames, 0.5)) for p in prompts)
            out.append(
                judge.option(
                    "sample prompts at half the frames (--f)",
                    {"sample_prompts": [f"{_size(p, 1.0)}x{p.frames}" for p in shorter]},
                    aided,
                    replace(setup, samples=shorter),
                )
            )
        out.append(
            judge.option(
                "no sampling during training (training.sample_prompts: [])",
                {"sample_prompts": []},
                aided,
                replace(setup, sampling=False, samples=()),
            )
        )
    if "cache_text_encoder" in failing:
        out.append(
            judge.option(
                "text-encoder caching on the CPU (Musubi's cache script takes --device cpu, "
                "cache_text_encoder_outputs.py:215: backend.config.cache_text_encoder_command; "
                "hours, not minutes, and Kura cannot size a command it did not generate)",
                {"cache_text_encoder": "--device cpu"},
                aided,
                off_gpu=("cache_text_encoder",),
            )
        )
    return out


def _sample_scaled(prompt: SamplePrompt, scale: float) -> SamplePrompt:
    return replace(
        prompt,
        width=max(8, int(prompt.width * scale) // 8 * 8),
        height=max(8, int(prompt.height * scale) // 8 * 8),
    )


def _size(prompt: SamplePrompt, scale: float) -> str:
    scaled = _sample_scaled(prompt, scale)
    return f"{scaled.width}x{scaled.height}"


def _fewer_frame_count(count: int, scale: float) -> int:
    if count <= 1:
        return count
    return max(1, int(((count - 1) // 4) * scale)) * 4 + 1


def _gpu_summary(gpu: GpuClass) -> dict[str, Any]:
    offer = gpu.cheapest_offer()
    return {
        "id": gpu.id,
        "name": gpu.name,
        "memory_gib": gpu.memory_gib,
        "usd_per_hour": None if offer is None else offer.usd_per_hour,
        "price_provider": None if offer is None else offer.provider,
        "price_seen": None if offer is None else offer.price_seen,
    }


def _bigger_gpus(
    problem: MusubiFitProblem, aided: EstimateConfig
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The catalog class with the least memory on which every step fits with every aid,
    and the cheapest class that fits among those with a known price (None where none)."""
    fitting = [
        gpu for gpu in GPU_CLASSES.values() if _judge(problem, gpu).option("as is", {}, aided).fits
    ]
    if not fitting:
        return None, None
    smallest = min(fitting, key=lambda gpu: (gpu.memory_gib, gpu.bf16_tflops))
    priced = [
        (offer.usd_per_hour, gpu)
        for gpu in fitting
        if (offer := gpu.cheapest_offer()) is not None and offer.usd_per_hour is not None
    ]
    cheapest = min(priced, key=lambda item: item[0])[1] if priced else None
    return _gpu_summary(smallest), None if cheapest is None else _gpu_summary(cheapest)


def fastest_fitting(
    recipe: EstimateConfig,
    gpu: GpuClass,
    *,
    host_ram_gib: float | None = None,
    setup: StepSetup | None = None,
    fixed_micro_batch: bool = False,
) -> FitPlan:
    """The fastest configuration of ``recipe`` that fits ``gpu``, and how it got there.

    ``recipe``'s fp8, checkpointing and block-swap settings are ignored: the ladder decides
    them. ``host_ram_gib`` (e.g. ``host_facts().ram_available_gib``) rules out
    configurations whose swapped weights would not fit in host RAM.
    """
    problem = MusubiFitProblem(recipe, gpu, setup, fixed_micro_batch=fixed_micro_batch)
    shape, bare = problem.shape, problem.recipe
    estimate(bare, gpu)  # raises Unsupported for a recipe Musubi refuses outright
    result: LadderResult = walk(problem, host_ram_gib=host_ram_gib)
    if result.fits:
        chosen = problem.estimate(result.choice)
        assert chosen is not None and result.evaluation is not None
        return FitPlan(
            gpu.id,
            True,
            bare,
            chosen,
            result.rungs,
            notes=result.notes,
            step_settings=(
                problem.setup.step_settings(result.choice) if problem.setup is not None else {}
            ),
            costs=result.evaluation.costs,
            alternatives=result.alternatives,
        )
    strongest = {aid.name: aid.levels[-1] for aid in problem.aids if not aid.counted}
    unsized = [c.step for c in (problem.evaluate(strongest) or _empty()).costs if c.fits is None]
    failing = [c.step for c in (problem.evaluate(strongest) or _empty()).costs if c.fits is False]
    aided = _most_aided(bare, shape, fixed_micro_batch=fixed_micro_batch)
    smallest, cheapest = _bigger_gpus(problem, aided)
    notes = ["Does not fit with every memory aid; the recipe has to change or the GPU."]
    if unsized:
        notes = [
            f"Kura cannot size the custom command(s) of step(s) {', '.join(unsized)}: the "
            "plan cannot say it fits, and applies no memory aid it cannot pass on."
        ]
    elif failing and failing != ["train"]:
        notes.append(f"Step(s) that still do not fit: {', '.join(failing)}.")
    if bare.micro_batch > 1 and fixed_micro_batch:
        notes.append(
            f"Your micro-batch {bare.micro_batch} is kept (backend.config.batch_size / "
            "gradient_accumulation_steps are yours): the recipe options show what micro-batch "
            "1 with more accumulation would give."
        )
    elif bare.micro_batch > 1:
        notes.append(
            "A smaller effective batch does not lower the peak: the aided configuration "
            "already runs micro-batch 1 with accumulation."
        )
    return FitPlan(
        gpu.id,
        False,
        bare,
        estimate(aided, gpu),
        recipe_options=tuple(_recipe_options(problem, failing, fixed_micro_batch)),
        smallest_gpu=smallest,
        cheapest_priced_gpu=cheapest,
        notes=tuple(notes),
        costs=(problem.evaluate(strongest) or _empty()).costs,
    )


def _empty() -> Evaluation:
    return Evaluation(costs=(), step_seconds=None)
