"""Planning an AI-Toolkit run: its aids on the one ladder, sized by Kura's estimator.

AI-Toolkit ships no memory or step-time estimator; Kura's (:mod:`.estimator`) sizes every
step it runs (load, caching, training per bucket, sampling) from the DiT's shape and
AI-Toolkit's semantics for each option. The ladder walks the aids in their cost order; a
model without a shape in Kura (none of the shipped bundles: Chroma and SDXL have theirs)
stays unsized (``StepCost.fits`` None), so its plan needs ``--accept-risk`` and says which
steps are unsized. The remedy after an
out-of-memory is the next aid up this ladder, and the plan states the effective LoRA scale
AI-Toolkit trains with.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import TYPE_CHECKING

from kura.backends.aitoolkit.aids import LAYER_OFFLOAD_LEVELS, aids_for
from kura.backends.aitoolkit.archs import AitkModel, model_for
from kura.backends.aitoolkit.estimator.estimate import (
    AitkEstimate,
    estimate_setup,
    setup_for,
    sizeable,
)
from kura.backends.aitoolkit.knobs import Knobs, read_knobs
from kura.backends.base import (
    AidChoice,
    Contingency,
    Evaluation,
    MemoryAid,
    PlanFit,
    PlanInputs,
    StepCost,
)
from kura.errors import SpecError
from kura.planning.ladder import walk

if TYPE_CHECKING:
    from kura.planning.gpus import GpuClass
    from kura.schema.run import RunSpec

__all__ = ["NOT_SIZEABLE", "AitkProblem", "estimate_run", "fit_run", "next_rung"]

NOT_SIZEABLE = (
    "Kura cannot size this model's AI-Toolkit runs (no DiT shape for it): this plan cannot "
    "say that the run fits. Choose memory aids from the list (each with its cost); after an "
    "out-of-memory the diagnosis proposes the next one."
)
SOURCE = "ai-toolkit: not sizeable (no shape for this model)"


def _model(spec: RunSpec, inputs: PlanInputs) -> AitkModel:
    model = model_for(inputs.bundle.id)
    if model is None:
        raise SpecError(
            f"bundle {inputs.bundle.id} is not an AI-Toolkit bundle",
            hint="choose an AI-Toolkit bundle (`kura model bundles`)",
        )
    return model


def _unsized_costs(why: str) -> tuple[StepCost, ...]:
    notes = (NOT_SIZEABLE, why)
    return (
        StepCost("prepare", "prepare", None, None, None, None, True, "link files only", ()),
        StepCost("train", "train", None, None, None, None, None, SOURCE, notes),
    )


def _total_steps(spec: RunSpec, inputs: PlanInputs) -> tuple[int | None, int | None]:
    """Optimizer steps of the run and steps per epoch (None where the item counts are
    unknown), as the compiler counts them."""
    from kura.backends.aitoolkit.compile import epoch_steps, total_steps

    per_epoch = epoch_steps(spec, inputs.compile) if inputs.compile else None
    if spec.training.max_steps is not None:
        return spec.training.max_steps, per_epoch
    if per_epoch is None:
        return None, None
    return total_steps(spec, per_epoch), per_epoch


def _sample_every(spec: RunSpec, knobs: Knobs, per_epoch: int | None) -> int | None:
    if knobs.sample_every_steps is not None:
        return knobs.sample_every_steps
    epochs = spec.training.sample_every_n_epochs
    if epochs is None:
        return None
    return None if per_epoch is None else epochs * per_epoch


def _estimate(
    spec: RunSpec, model: AitkModel, knobs: Knobs, gpu: GpuClass | None, inputs: PlanInputs
) -> AitkEstimate:
    total, per_epoch = _total_steps(spec, inputs)
    return estimate_setup(
        setup_for(spec, model, knobs, inputs.compile.datasets if inputs.compile else None),
        gpu,
        accumulation=max(1, spec.training.effective_batch // knobs.batch_size),
        total_steps=total,
        sample_every=_sample_every(spec, knobs, per_epoch),
        prompts=len(spec.training.sample_prompts),
        items=_items(inputs),
    )


def _items(inputs: PlanInputs) -> int | None:
    """Files the caching steps encode: every dataset's items once (None when uncounted)."""
    if inputs.compile is None:
        return None
    counts = [source.items for source in inputs.compile.datasets]
    return None if any(c is None for c in counts) else sum(c or 0 for c in counts)


def network_document(spec: RunSpec, model: AitkModel) -> dict[str, object]:
    from kura.backends.aitoolkit.compile import effective_scale

    recipe = spec.training.network
    scale = effective_scale(recipe.rank, recipe.alpha, model.peft)
    return {
        "rank": recipe.rank,
        "alpha": recipe.alpha,
        "peft_format": model.peft,
        "effective_scale": scale,
        "note": (
            f"{model.arch} trains in PEFT format: alpha = rank, the written alpha is ignored; "
            f"effective scale {scale:g}"
            if model.peft
            else f"alpha/rank = {scale:g}"
        ),
    }


def environment_report(inputs: PlanInputs) -> dict[str, object]:
    """plan.md's section on what runs the trainer: the image, or the host's environment (its
    Python, in the approved argv) and the checkout ``run.py`` starts from."""
    compiled = inputs.compile
    if compiled is None:
        lines = ["not known before the run compiles"]
    elif compiled.container_image is not None:
        lines = [
            f"Docker image {compiled.container_image}; AI-Toolkit at {compiled.trainer_dir} in it",
        ]
    else:
        python = posixpath.join(compiled.trainer_bin, "python") if compiled.trainer_bin else "?"
        lines = [
            f"host environment: {python} (made by `kura backend install ai-toolkit`)",
            f"checkout: {compiled.trainer_dir} (run.py starts there; nothing is written into it)",
        ]
    return {"title": "AI-Toolkit environment", "lines": lines}


def _buckets_section(spec: RunSpec, inputs: PlanInputs) -> dict[str, object]:
    from kura.backends.aitoolkit.buckets import buckets_report

    return buckets_report(spec, inputs.compile)


def _unsized_detail(
    spec: RunSpec, model: AitkModel, gpu: GpuClass | None, inputs: PlanInputs, why: str
) -> dict[str, object]:
    return {
        "peak_vram_gib": None,
        "band_gib": None,
        "usable_gib": None if gpu is None else gpu.usable_gib,
        "fits": None,
        "confidence": f"none: {why}",
        "breakdown": {},
        "host_ram_gib": None,
        "step_seconds": None,
        "total_hours": None,
        "config": {"total_steps": spec.training.max_steps},
        "network": network_document(spec, model),
        "trainer_report": [environment_report(inputs), _buckets_section(spec, inputs)],
    }


def _detail(
    spec: RunSpec,
    model: AitkModel,
    gpu: GpuClass | None,
    inputs: PlanInputs,
    found: AitkEstimate,
) -> dict[str, object]:
    from kura.backends.aitoolkit.estimator.calibration import held_out_median_error
    from kura.backends.aitoolkit.estimator.memory import grouped

    cost = max(found.costs, key=lambda c: c.upper_gib or 0.0)
    worst = next(m for m in found.memories if m.step == cost.step)
    train = [c for c in found.costs if c.kind == "train"]
    seconds = [c.seconds for c in train]
    total_hours = None if None in seconds else sum(s or 0.0 for s in seconds) / 3600
    error = held_out_median_error()
    return {
        "model": model.bundle,
        "gpu": None if gpu is None else gpu.id,
        "peak_vram_gib": round(worst.peak_gib, 2),
        "band_gib": round(2 * ((cost.upper_gib or 0.0) - worst.peak_gib), 2),
        "upper_gib": cost.upper_gib,
        "usable_gib": None if gpu is None else gpu.usable_gib,
        "fits": None if gpu is None else all(c.fits for c in found.costs),
        "worst_step": worst.step,
        "confidence": f"band ±{found.band / 2:.0%} ({found.band_reason}); held-out median "
        + ("error unknown" if error is None else f"error {error:.0%}"),
        "breakdown": grouped(worst),
        "terms": dict(worst.terms),
        "host_ram_gib": round(found.host_ram_gib, 1),
        "step_seconds": None if found.step_seconds is None else round(found.step_seconds, 3),
        "total_hours": None if total_hours is None else round(total_hours, 3),
        "config": {"total_steps": found.total_steps},
        "step_memory": [
            {
                "step": m.step,
                "peak_gib": round(m.peak_gib, 2),
                "terms": m.terms,
                "notes": list(m.notes),
            }
            for m in found.memories
        ],
        "network": network_document(spec, model),
        "trainer_report": [environment_report(inputs), _buckets_section(spec, inputs)],
    }


def _evaluation(
    spec: RunSpec, model: AitkModel, knobs: Knobs, gpu: GpuClass | None, inputs: PlanInputs
) -> Evaluation:
    why = sizeable(model)
    if why is not None:
        return Evaluation(_unsized_costs(why), None, _unsized_detail(spec, model, gpu, inputs, why))
    found = _estimate(spec, model, knobs, gpu, inputs)
    return Evaluation(found.costs, found.step_seconds, _detail(spec, model, gpu, inputs, found))


class AitkProblem:
    """One AI-Toolkit recipe on one GPU class: the aids, and costs that are all unknown."""

    def __init__(self, spec: RunSpec, model: AitkModel, gpu: GpuClass, inputs: PlanInputs):
        self.spec = spec
        self.model = model
        self.gpu = gpu
        self.inputs = inputs
        self.aids = aids_for(
            model,
            spec.training.effective_batch,
            unloads_text_encoder=bool(spec.backend.config.get("unload_text_encoder")),
        )

    def baseline(self) -> AidChoice:
        return {aid.name: aid.off for aid in self.aids}

    def evaluate(self, choice: AidChoice) -> Evaluation | None:
        config = {**dict(self.spec.backend.config), **self.settings(choice)}
        try:
            knobs = read_knobs(config)
        except SpecError:
            return None  # a combination AI-Toolkit refuses (caching with unloading)
        return _evaluation(self.spec, self.model, knobs, self.gpu, self.inputs)

    def change(self, aid: MemoryAid, choice: AidChoice) -> Mapping[str, object]:
        return dict(self.settings({aid.name: choice[aid.name]}))

    def reason(self, aid: MemoryAid, before: Evaluation, after: Evaluation) -> str:
        b, a = before.worst, after.worst
        if b.upper_gib is None or a.upper_gib is None:
            return f"{aid.saves}; costs {aid.costs}"
        return (
            f"{aid.saves}: the worst step {b.step} {b.upper_gib:.1f} GiB → {a.step} "
            f"{a.upper_gib:.1f} GiB (upper edge, {self.gpu.usable_gib:.1f} usable); "
            f"costs {aid.costs}"
        )

    def settings(self, choice: AidChoice) -> Mapping[str, object]:
        return settings_for(choice, ara_qtype=_ara_qtype(self.model))


def _ara_qtype(model: AitkModel) -> str | None:
    """The qtype of the model's accuracy-recovery adapter (4-bit before 3-bit)."""
    return next((q for q in ("uint4", "uint3") if q in model.ara), None)


def settings_for(choice: AidChoice, ara_qtype: str | None = None) -> dict[str, object]:
    """backend.config values for a choice of aids (by aid name)."""
    out: dict[str, object] = {}
    if "cache-text-embeddings" in choice:
        out["cache_text_embeddings"] = bool(choice["cache-text-embeddings"])
    if "micro-batch" in choice:
        out["batch_size"] = choice["micro-batch"]
    if "gradient-checkpointing" in choice:
        out["gradient_checkpointing"] = bool(choice["gradient-checkpointing"])
    if choice.get("quantize"):
        out.update(quantize=True, qtype="qfloat8")
    if choice.get("4bit-accuracy-recovery"):
        out.update(quantize=True, accuracy_recovery_adapter=True)
        if ara_qtype is not None:
            out["qtype"] = ara_qtype
    if "quantize-text-encoder" in choice:
        on = bool(choice["quantize-text-encoder"])
        out["quantize_te"] = on
    if "low-vram" in choice:
        out["low_vram"] = bool(choice["low-vram"])
    if "layer-offloading" in choice:
        out["layer_offloading_transformer_percent"] = choice["layer-offloading"]
    return out


def fit_run(
    spec: RunSpec, inputs: PlanInputs, gpu: GpuClass, *, host_ram_gib: float | None
) -> PlanFit:
    model = _model(spec, inputs)
    problem = AitkProblem(spec, model, gpu, inputs)
    result = walk(problem, host_ram_gib=host_ram_gib)
    why = sizeable(model)
    document = {
        "kind": "fit-plan",
        "gpu": gpu.id,
        "fits": result.fits,
        "sizeable": why is None,
        "ask_first": result.ask_first,
        "rungs": [rung.to_dict() for rung in result.rungs],
        "recipe_options": [],
        "notes": [*([why] if why else []), str(network_document(spec, model)["note"])],
        "aids": [
            {
                "aid": a.name,
                "keys": list(a.keys),
                "saves": a.saves,
                "costs": a.costs,
                "levels": list(a.levels),
            }
            for a in problem.aids
        ],
        "network": network_document(spec, model),
    }
    aid_keys = tuple(dict.fromkeys(key for aid in problem.aids for key in aid.keys))
    settings: dict[str, object] = {}
    reasons: dict[str, str] = {}
    if result.fits and result.rungs:
        settings = dict(problem.settings(result.choice))
        for rung in result.rungs:
            for key in rung.change:
                reasons[key] = rung.reason
    return PlanFit(gpu.id, result.fits, result.rungs, settings, reasons, document, aid_keys)


def estimate_run(spec: RunSpec, inputs: PlanInputs, gpu: GpuClass | None) -> Evaluation:
    model = _model(spec, inputs)
    return _evaluation(spec, model, read_knobs(spec.backend.config), gpu, inputs)


def failure_config(spec: RunSpec, inputs: PlanInputs) -> dict[str, object]:
    """backend.config plus what the remedy must know of the model (JSON values)."""
    model = _model(spec, inputs)
    read_knobs(spec.backend.config)
    return {
        **dict(spec.backend.config),
        "aitk_ara_qtypes": sorted(model.ara),
        "aitk_layer_offloading": model.layer_offloading,
        "effective_batch": spec.training.effective_batch,
    }


def next_rung(config: Mapping[str, object], *, step: str, phase: str) -> dict[str, object]:
    """The next aid up the ladder after an out-of-memory, as a rung document."""
    facts = {
        k: config[k]
        for k in ("aitk_ara_qtypes", "aitk_layer_offloading", "effective_batch")
        if k in config
    }
    knobs = read_knobs({k: v for k, v in config.items() if k not in facts})
    batch = knobs.batch_size
    if batch > 1:
        smaller = max(
            n for n in range(1, batch) if int(str(facts.get("effective_batch", batch))) % n == 0
        )
        return _rung(
            "micro-batch", {"batch_size": smaller}, "same effective batch, fewer samples at once"
        )
    if not knobs.gradient_checkpointing:
        return _rung("gradient-checkpointing", {"gradient_checkpointing": True}, "about 1/3 slower")
    if not knobs.quantize:
        return _rung("quantize", {"quantize": True, "qtype": "qfloat8"}, "8-bit base weights")
    if not knobs.quantize_te:
        return _rung("quantize-text-encoder", {"quantize_te": True}, "8-bit text encoder")
    if not knobs.low_vram:
        return _rung("low-vram", {"low_vram": True}, "slower loading and sampling")
    ara = [q for q in ("uint4", "uint3") if q in list(facts.get("aitk_ara_qtypes") or [])]  # type: ignore[call-overload]
    if ara and not knobs.accuracy_recovery_adapter:
        return _rung(
            "4bit-accuracy-recovery",
            {"qtype": ara[0], "accuracy_recovery_adapter": True},
            f"{ara[0]} base with ostris' accuracy-recovery adapter: lower fidelity",
        )
    if facts.get("aitk_layer_offloading"):
        now = knobs.layer_offloading_transformer_percent
        higher = [level for level in LAYER_OFFLOAD_LEVELS if level > now]
        if higher:
            return _rung(
                "layer-offloading",
                {"layer_offloading_transformer_percent": higher[0]},
                "streams weights from host RAM every step",
            )
    return {
        "action": "change",
        "key": "gpu",
        "why": f"every AI-Toolkit memory aid is already in use after an OOM in {step} ({phase})",
    }


def _rung(aid: str, change: dict[str, object], why: str) -> dict[str, object]:
    return {"action": "set", "aid": aid, "key": next(iter(change)), "change": change, "why": why}


def contingency_for(spec: RunSpec, inputs: PlanInputs) -> Contingency | None:
    rung = next_rung(failure_config(spec, inputs), step="train", phase="training")
    change = rung.get("change")
    if not isinstance(change, dict):
        return None
    return Contingency(on="out-of-memory in training", rung=rung, change=change)
