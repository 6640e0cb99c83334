"""Planning an AI-Toolkit run: its aids on the one ladder, and an honest "cannot size".

AI-Toolkit ships no memory or step-time estimator, and Kura does not invent one: every
step's cost is unknown (``StepCost.fits`` None), so the ladder finds no choice it can call
fitting and the plan cannot say "fits". The aids are still laid out with their costs, the
remedy after an out-of-memory is the next aid up this ladder, and the plan states the
effective LoRA scale AI-Toolkit trains with.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import TYPE_CHECKING

from kura.backends.aitoolkit.aids import LAYER_OFFLOAD_LEVELS, aids_for
from kura.backends.aitoolkit.archs import AitkModel, model_for
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
    from kura.spec.run import RunSpec

__all__ = ["NOT_SIZEABLE", "AitkProblem", "estimate_run", "fit_run", "next_rung"]

NOT_SIZEABLE = (
    "AI-Toolkit ships no memory estimator and Kura has none for it: this plan cannot say "
    "that the run fits. Choose memory aids from the list (each with its cost); after an "
    "out-of-memory the diagnosis proposes the next one."
)
SOURCE = "ai-toolkit: not sizeable (no estimator)"


def _model(spec: RunSpec, inputs: PlanInputs) -> AitkModel:
    model = model_for(inputs.bundle.id)
    if model is None:
        raise SpecError(
            f"bundle {inputs.bundle.id} is not an AI-Toolkit bundle",
            hint="choose an AI-Toolkit bundle (`kura model bundles`)",
        )
    return model


def _costs(total_steps: int | None) -> tuple[StepCost, ...]:
    notes = (NOT_SIZEABLE,)
    return (
        StepCost("prepare", "prepare", None, None, None, None, True, "link files only", ()),
        StepCost("train", "train", None, None, None, None, None, SOURCE, notes),
    )


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


def _detail(
    spec: RunSpec, model: AitkModel, gpu: GpuClass | None, inputs: PlanInputs
) -> dict[str, object]:
    return {
        "peak_vram_gib": None,
        "band_gib": None,
        "usable_gib": None if gpu is None else gpu.usable_gib,
        "fits": None,
        "confidence": "none: " + NOT_SIZEABLE,
        "breakdown": {},
        "host_ram_gib": None,
        "step_seconds": None,
        "total_hours": None,
        "config": {"total_steps": spec.training.max_steps},
        "network": network_document(spec, model),
        "trainer_report": [environment_report(inputs), _buckets_section(spec, inputs)],
    }


class AitkProblem:
    """One AI-Toolkit recipe on one GPU class: the aids, and costs that are all unknown."""

    def __init__(self, spec: RunSpec, model: AitkModel, gpu: GpuClass, inputs: PlanInputs):
        self.spec = spec
        self.model = model
        self.gpu = gpu
        self.inputs = inputs
        self.aids = aids_for(model, spec.training.effective_batch)

    def baseline(self) -> AidChoice:
        return {aid.name: aid.off for aid in self.aids}

    def evaluate(self, choice: AidChoice) -> Evaluation:
        return Evaluation(
            _costs(self.spec.training.max_steps),
            None,
            _detail(self.spec, self.model, self.gpu, self.inputs),
        )

    def change(self, aid: MemoryAid, choice: AidChoice) -> Mapping[str, object]:
        return dict(self.settings({aid.name: choice[aid.name]}))

    def reason(self, aid: MemoryAid, before: Evaluation, after: Evaluation) -> str:
        return f"{aid.saves}; costs {aid.costs}"

    def settings(self, choice: AidChoice) -> Mapping[str, object]:
        return settings_for(choice)


def settings_for(choice: AidChoice) -> dict[str, object]:
    """backend.config values for a choice of aids (by aid name)."""
    out: dict[str, object] = {}
    if "micro-batch" in choice:
        out["batch_size"] = choice["micro-batch"]
    if "gradient-checkpointing" in choice:
        out["gradient_checkpointing"] = bool(choice["gradient-checkpointing"])
    if choice.get("quantize"):
        out.update(quantize=True, qtype="qfloat8")
    if choice.get("4bit-accuracy-recovery"):
        out.update(quantize=True, accuracy_recovery_adapter=True)
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
    document = {
        "kind": "fit-plan",
        "gpu": gpu.id,
        "fits": result.fits,
        "sizeable": False,
        "ask_first": result.ask_first,
        "rungs": [rung.to_dict() for rung in result.rungs],
        "recipe_options": [],
        "notes": [NOT_SIZEABLE, str(network_document(spec, model)["note"])],
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
    aid_keys = tuple(key for aid in problem.aids for key in aid.keys)
    return PlanFit(gpu.id, result.fits, result.rungs, {}, {}, document, aid_keys)


def estimate_run(spec: RunSpec, inputs: PlanInputs, gpu: GpuClass | None) -> Evaluation:
    model = _model(spec, inputs)
    return Evaluation(_costs(spec.training.max_steps), None, _detail(spec, model, gpu, inputs))


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


def knobs_of(spec: RunSpec) -> Knobs:
    return read_knobs(spec.backend.config)
