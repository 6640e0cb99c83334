"""The fit ladder: the fastest set of memory aids that makes a recipe fit a GPU class.

The recipe's own memory aids are cleared first (fp8, checkpointing, block swap): the planner
decides them, and a GPU with headroom gets none (DESIGN invariant 3). Then, in the order of
vram.md §6 as the planner applies them,

1. meaning-preserving artifacts: fp8 weights (``scaled`` where Musubi supports it for the
   architecture, plain ``base`` for HunyuanVideo);
2. speed-only aids: gradient checkpointing, a smaller micro-batch with more accumulation
   (the effective batch is kept), block swap (the fewest blocks that fit, classic or
   H2D-only, whichever is faster), activation CPU offload.

Every combination of those aids is estimated (block swap by bisection: memory falls with
every swapped block) and the fastest one that fits wins; ties go to fewer aids. Each applied
aid carries its reason and its expected slowdown (step time after / before it, applied in
ladder order); a step past ~2x is marked ``ask_first``. When nothing fits, the answer lists
recipe-touching options (lower resolution, fewer frames, smaller batch, lower rank) with
their estimated peaks and the smallest catalog GPU class that fits as is.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kura.errors import Unsupported
from kura.planning.config import Bucket, EstimateConfig
from kura.planning.estimate import Estimate, estimate
from kura.planning.gpus import GPU_CLASSES, GpuClass
from kura.planning.optimizers import state_bytes_per_param
from kura.planning.shapes import ModelShape, get_shape

__all__ = ["ASK_FIRST_SLOWDOWN", "FitPlan", "RecipeOption", "Rung", "fastest_fitting"]

ASK_FIRST_SLOWDOWN = 2.0
"""A memory aid that makes a step this much slower needs the user's yes."""

TIE_TOLERANCE = 0.03
"""Combinations this close to the fastest count as equally fast (the model's own noise)."""

RESOLUTION_SCALES = (0.875, 0.75, 0.625, 0.5)
RANK_FLOOR = 4
PIXEL_STEP = 64


@dataclass(frozen=True)
class Rung:
    """One applied memory aid."""

    aid: str
    change: dict[str, Any]
    reason: str
    slowdown: float
    ask_first: bool
    peak_gib: float
    upper_gib: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "aid": self.aid,
            "change": dict(self.change),
            "reason": self.reason,
            "slowdown": round(self.slowdown, 2),
            "ask_first": self.ask_first,
            "peak_gib": round(self.peak_gib, 2),
            "upper_gib": round(self.upper_gib, 2),
        }


@dataclass(frozen=True)
class RecipeOption:
    """A change to the recipe itself, estimated with every memory aid applied."""

    option: str
    change: dict[str, Any]
    peak_gib: float
    upper_gib: float
    fits: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "option": self.option,
            "change": dict(self.change),
            "peak_gib": round(self.peak_gib, 2),
            "upper_gib": round(self.upper_gib, 2),
            "fits": self.fits,
        }


@dataclass(frozen=True)
class FitPlan:
    """The solver's answer for one recipe on one GPU class."""

    gpu: str
    fits: bool
    recipe: EstimateConfig
    estimate: Estimate
    rungs: tuple[Rung, ...] = ()
    recipe_options: tuple[RecipeOption, ...] = ()
    smallest_gpu: dict[str, Any] | None = None
    cheapest_priced_gpu: dict[str, Any] | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

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
            "recipe_options": [option.to_dict() for option in self.recipe_options],
            "smallest_gpu": self.smallest_gpu,
            "cheapest_priced_gpu": self.cheapest_priced_gpu,
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class _Aids:
    """One combination of memory aids (fields of EstimateConfig)."""

    fp8: str
    gradient_checkpointing: str
    micro_batch: int
    grad_accum: int
    blocks_to_swap: int = 0
    swap_h2d_only: bool = False
    split_attn: bool = False

    def apply(self, recipe: EstimateConfig) -> EstimateConfig:
        return recipe.replace(
            fp8=self.fp8,
            gradient_checkpointing=self.gradient_checkpointing,
            micro_batch=self.micro_batch,
            grad_accum=self.grad_accum,
            blocks_to_swap=self.blocks_to_swap,
            swap_h2d_only=self.swap_h2d_only,
            split_attn=self.split_attn,
        )

    def with_(self, **changes: Any) -> _Aids:
        return dataclasses.replace(self, **changes)


def _fp8_choice(shape: ModelShape) -> str | None:
    """The fp8 mode the ladder may add, None when the model has no bf16 alternative."""
    if "none" not in shape.fp8_modes:
        return None
    if "scaled" in shape.fp8_modes:
        return "scaled"
    return "base" if "base" in shape.fp8_modes else None


def _bare(recipe: EstimateConfig, shape: ModelShape) -> _Aids:
    """The recipe without memory aids (an fp8-only model keeps its only weight format)."""
    return _Aids(
        fp8="none" if "none" in shape.fp8_modes else shape.fp8_modes[0],
        gradient_checkpointing="off",
        micro_batch=recipe.micro_batch,
        grad_accum=recipe.grad_accum,
        split_attn=recipe.split_attn,
    )


def _mask_aid(recipe: EstimateConfig, shape: ModelShape) -> bool:
    """Whether --split_attn is an aid here: it removes HunyuanVideo's dense SDPA mask."""
    return shape.dense_sdpa_mask and recipe.attention == "sdpa" and not recipe.split_attn


def _without_needless_fp8(aids: _Aids, bare: _Aids, evaluate: _Evaluator) -> _Aids:
    """Drop fp8 when the other aids fit without it at no loss of speed.

    The ladder tries fp8 first; when the later rungs alone then suffice (checkpointing on a
    24 GB card for a 4B model, say), fp8 would be an aid the fit does not need, and every
    memory aid in a plan must have a reason."""
    if aids.fp8 == bare.fp8:
        return aids
    plain = aids.with_(fp8=bare.fp8)
    estimate_plain = evaluate(plain)
    if evaluate.fits(estimate_plain) and _seconds(estimate_plain) <= _seconds(evaluate(aids)) * (
        1 + TIE_TOLERANCE
    ):
        return plain
    return aids


def _aid_count(aids: _Aids, bare: _Aids) -> int:
    return sum(
        (
            aids.fp8 != bare.fp8,
            aids.gradient_checkpointing != "off",
            aids.micro_batch != bare.micro_batch,
            aids.blocks_to_swap > 0,
            aids.gradient_checkpointing == "cpu-offload",
            aids.split_attn != bare.split_attn,
        )
    )


def _candidates(recipe: EstimateConfig, shape: ModelShape, bare: _Aids) -> Iterator[_Aids]:
    """Every combination of fp8, checkpointing and micro-batch (swap is searched later)."""
    fp8 = _fp8_choice(shape)
    fp8_modes = [bare.fp8] + ([fp8] if fp8 else [])
    gc_modes = ["off", "on"] + (["cpu-offload"] if shape.gc_cpu_offload else [])
    batch = recipe.micro_batch * recipe.grad_accum
    micro_batches = [m for m in range(recipe.micro_batch, 0, -1) if recipe.micro_batch % m == 0]
    split_modes = [bare.split_attn, True] if _mask_aid(recipe, shape) else [bare.split_attn]
    for mode in fp8_modes:
        for split in split_modes:
            for gc in gc_modes:
                for micro in micro_batches:
                    yield _Aids(mode, gc, micro, batch // micro, split_attn=split)


class _Evaluator:
    """Estimates with a cache and the fit rule, including a host-RAM ceiling."""

    def __init__(self, recipe: EstimateConfig, gpu: GpuClass, host_ram_gib: float | None):
        self.recipe = recipe
        self.gpu = gpu
        self.host_ram_gib = host_ram_gib
        self._cache: dict[_Aids, Estimate | None] = {}

    def __call__(self, aids: _Aids) -> Estimate | None:
        """The estimate for ``aids``; None for a combination Musubi refuses."""
        if aids not in self._cache:
            try:
                self._cache[aids] = estimate(aids.apply(self.recipe), self.gpu)
            except Unsupported:
                self._cache[aids] = None
        return self._cache[aids]

    @staticmethod
    def fits_vram(est: Estimate | None) -> bool:
        return est is not None and bool(est.fits)

    def fits(self, est: Estimate | None) -> bool:
        """Fits the GPU and, when a ceiling was given, host RAM."""
        if est is None or not est.fits:
            return False
        return self.host_ram_gib is None or est.host_ram_gib <= self.host_ram_gib


def _fewest_swap(aids: _Aids, shape: ModelShape, evaluate: _Evaluator) -> _Aids | None:
    """The smallest ``blocks_to_swap`` that fits with ``aids``, or None."""

    def at(n: int) -> _Aids:
        return aids.with_(blocks_to_swap=n)

    # VRAM falls with every swapped block and host RAM rises, so bisect on VRAM and check
    # host RAM once at the fewest blocks (the least host RAM any fitting count needs).
    low, high = 1, shape.swap_limit
    if high < 1 or not evaluate.fits_vram(evaluate(at(high))):
        return None
    while low < high:
        middle = (low + high) // 2
        if evaluate.fits_vram(evaluate(at(middle))):
            high = middle
        else:
            low = middle + 1
    return at(low) if evaluate.fits(evaluate(at(low))) else None


def _fitting(recipe: EstimateConfig, shape: ModelShape, evaluate: _Evaluator) -> list[_Aids]:
    """Every aid combination that fits, each with the fewest swapped blocks it needs."""
    bare = _bare(recipe, shape)
    found = []
    for aids in _candidates(recipe, shape, bare):
        if evaluate.fits(evaluate(aids)):
            found.append(aids)
            continue
        for h2d in (False, True):
            if h2d and aids.gradient_checkpointing == "off":
                continue
            swapped = _fewest_swap(aids.with_(swap_h2d_only=h2d), shape, evaluate)
            if swapped is not None:
                found.append(swapped)
    return found


def _seconds(est: Estimate | None) -> float:
    if est is None or est.step_seconds is None:
        return math.inf
    return est.step_seconds


def _choose(found: list[_Aids], bare: _Aids, evaluate: _Evaluator) -> _Aids:
    """The fastest combination; within TIE_TOLERANCE of it, the lower rungs win.

    fp8 costs only its dequantisation time, so a combination with fp8 and fewer swapped
    blocks often runs within a few per cent of one without; the ladder then prefers the
    earlier rung (fp8), then fewer aids, then less host RAM.
    """
    fastest = min(_seconds(evaluate(aids)) for aids in found)
    close = [aids for aids in found if _seconds(evaluate(aids)) <= fastest * (1 + TIE_TOLERANCE)]

    def preference(aids: _Aids) -> tuple[bool, int, float, float]:
        est = _valid(evaluate(aids))
        return (aids.fp8 == bare.fp8, _aid_count(aids, bare), est.host_ram_gib, _seconds(est))

    return min(close, key=preference)


def _rungs(
    recipe: EstimateConfig, shape: ModelShape, chosen: _Aids, evaluate: _Evaluator
) -> list[Rung]:
    """The chosen aids applied one at a time in ladder order, with reasons and slowdowns."""
    bare = _bare(recipe, shape)
    steps: list[tuple[str, _Aids]] = []
    current = bare
    if chosen.fp8 != bare.fp8:
        current = current.with_(fp8=chosen.fp8)
        steps.append(("fp8", current))
    if chosen.gradient_checkpointing != "off":
        current = current.with_(gradient_checkpointing="on")
        steps.append(("gradient-checkpointing", current))
    if chosen.split_attn != bare.split_attn:
        current = current.with_(split_attn=chosen.split_attn)
        steps.append(("split-attention", current))
    if chosen.micro_batch != bare.micro_batch:
        current = current.with_(micro_batch=chosen.micro_batch, grad_accum=chosen.grad_accum)
        steps.append(("micro-batch", current))
    if chosen.blocks_to_swap:
        current = current.with_(
            blocks_to_swap=chosen.blocks_to_swap, swap_h2d_only=chosen.swap_h2d_only
        )
        steps.append(("block-swap", current))
    if chosen.gradient_checkpointing == "cpu-offload":
        current = current.with_(gradient_checkpointing="cpu-offload")
        steps.append(("activation-offload", current))

    rungs = []
    before = _valid(evaluate(bare))
    start_s = _seconds(before)
    for aid, aids in steps:
        after = _valid(evaluate(aids))
        slowdown = _seconds(after) / _seconds(before)
        cumulative_before = _seconds(before) / start_s
        cumulative_after = _seconds(after) / start_s
        rungs.append(
            Rung(
                aid=aid,
                change=_change(aid, aids),
                reason=_reason(aid, before, after, recipe, shape, aids),
                slowdown=slowdown,
                ask_first=slowdown >= ASK_FIRST_SLOWDOWN
                or cumulative_before < ASK_FIRST_SLOWDOWN <= cumulative_after,
                peak_gib=after.peak_vram_gib,
                upper_gib=after.upper_gib,
            )
        )
        before = after
    return rungs


def _valid(est: Estimate | None) -> Estimate:
    """Steps toward a chosen combination are valid configurations (swap/offload rules hold)."""
    if est is None:
        raise Unsupported("a step of the fit ladder is a configuration Musubi refuses")
    return est


def _change(aid: str, aids: _Aids) -> dict[str, Any]:
    if aid == "fp8":
        return {"fp8": aids.fp8}
    if aid == "gradient-checkpointing":
        return {"gradient_checkpointing": "on"}
    if aid == "micro-batch":
        return {"micro_batch": aids.micro_batch, "grad_accum": aids.grad_accum}
    if aid == "block-swap":
        return {"blocks_to_swap": aids.blocks_to_swap, "swap_h2d_only": aids.swap_h2d_only}
    if aid == "split-attention":
        return {"split_attn": True}
    return {"gradient_checkpointing": "cpu-offload"}


def _reason(
    aid: str,
    before: Estimate,
    after: Estimate,
    recipe: EstimateConfig,
    shape: ModelShape,
    aids: _Aids,
) -> str:
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


def _most_aided(recipe: EstimateConfig, shape: ModelShape) -> EstimateConfig:
    """The recipe with every memory aid at its strongest (least VRAM)."""
    fp8 = _fp8_choice(shape) or shape.fp8_modes[0]
    gc = "cpu-offload" if shape.gc_cpu_offload else "on"
    return recipe.replace(
        fp8=fp8,
        gradient_checkpointing=gc,
        micro_batch=1,
        grad_accum=recipe.micro_batch * recipe.grad_accum,
        blocks_to_swap=shape.swap_limit,
        swap_h2d_only=False,
        offload_inactive_dit=False,
        split_attn=recipe.split_attn or _mask_aid(recipe, shape),
    )


def _option(
    name: str, change: dict[str, Any], config: EstimateConfig, gpu: GpuClass
) -> RecipeOption:
    est = estimate(config, gpu)
    return RecipeOption(name, change, est.peak_vram_gib, est.upper_gib, bool(est.fits))


def _first_fitting(options: list[RecipeOption]) -> RecipeOption | None:
    for option in options:
        if option.fits:
            return option
    return options[-1] if options else None


def _recipe_options(recipe: EstimateConfig, shape: ModelShape, gpu: GpuClass) -> list[RecipeOption]:
    """Recipe changes (with every aid applied): the mildest that fits, else the strongest."""
    aided = _most_aided(recipe, shape)
    result: list[RecipeOption] = []
    resolution = [
        _option(
            f"resolution x{scale}",
            {"buckets": [b.to_dict() for b in _scaled_buckets(recipe.buckets, scale)]},
            aided.replace(buckets=_scaled_buckets(recipe.buckets, scale)),
            gpu,
        )
        for scale in RESOLUTION_SCALES
    ]
    result += [option for option in [_first_fitting(resolution)] if option]
    if shape.video and any(b.frames > 1 for b in recipe.buckets):
        frames = [
            _option(
                f"frames x{scale}",
                {"buckets": [b.to_dict() for b in _fewer_frames(recipe.buckets, scale)]},
                aided.replace(buckets=_fewer_frames(recipe.buckets, scale)),
                gpu,
            )
            for scale in RESOLUTION_SCALES
        ]
        result += [option for option in [_first_fitting(frames)] if option]
    if state_bytes_per_param(recipe.optimizer, recipe.rank) > state_bytes_per_param(
        "adafactor", recipe.rank
    ):
        result.append(
            _option(
                "optimizer adafactor",
                {"optimizer": "adafactor"},
                aided.replace(optimizer="adafactor"),
                gpu,
            )
        )
    ranks = []
    rank = recipe.rank // 2
    while rank >= RANK_FLOOR:
        ranks.append(_option(f"rank {rank}", {"rank": rank}, aided.replace(rank=rank), gpu))
        rank //= 2
    result += [option for option in [_first_fitting(ranks)] if option]
    return result


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
    recipe: EstimateConfig, shape: ModelShape
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The catalog class with the least memory that fits the recipe with every aid, and the
    cheapest class that fits among those with a known price (None where there is none)."""
    aided = _most_aided(recipe, shape)
    fitting = [gpu for gpu in GPU_CLASSES.values() if estimate(aided, gpu).fits]
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
    recipe: EstimateConfig, gpu: GpuClass, *, host_ram_gib: float | None = None
) -> FitPlan:
    """The fastest configuration of ``recipe`` that fits ``gpu``, and how it got there.

    ``recipe``'s fp8, checkpointing and block-swap settings are ignored: the solver decides
    them. ``host_ram_gib`` (e.g. ``host_facts().ram_available_gib``) rules out
    configurations whose swapped weights would not fit in host RAM.
    """
    shape = get_shape(recipe.model)
    bare = _bare(recipe, shape)
    recipe = bare.apply(recipe)
    evaluate = _Evaluator(recipe, gpu, host_ram_gib)
    start = estimate(recipe, gpu)  # raises for a recipe Musubi refuses outright
    if evaluate.fits(start):
        return FitPlan(gpu.id, True, recipe, start, notes=("Fits with headroom: no memory aid.",))
    found = _fitting(recipe, shape, evaluate)
    if found:
        chosen = _without_needless_fp8(_choose(found, bare, evaluate), bare, evaluate)
        rungs = _rungs(recipe, shape, chosen, evaluate)
        return FitPlan(gpu.id, True, recipe, _valid(evaluate(chosen)), tuple(rungs))
    aided = _most_aided(recipe, shape)
    smallest, cheapest = _bigger_gpus(recipe, shape)
    notes = ["Does not fit with every memory aid; the recipe has to change or the GPU."]
    if recipe.micro_batch > 1:
        notes.append(
            "A smaller effective batch does not lower the peak: the aided configuration "
            "already runs micro-batch 1 with accumulation."
        )
    return FitPlan(
        gpu.id,
        False,
        recipe,
        estimate(aided, gpu),
        recipe_options=tuple(_recipe_options(recipe, shape, gpu)),
        smallest_gpu=smallest,
        cheapest_priced_gpu=cheapest,
        notes=tuple(notes),
    )
