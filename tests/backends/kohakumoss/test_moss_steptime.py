"""KohakuMoss's step time: FLOPs on the MOSS DiT, calibrated on its README (issue 29).

Pure: the README's speed cells (kohakumoss.md) and the base DiT's shape; no environment.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from kura.backends.kohakumoss.backend import MossProblem
from kura.backends.kohakumoss.queries import MemoryEstimate, PlanAnswer
from kura.backends.kohakumoss.steptime import (
    BASE_ARCH,
    MIN_TIME_BAND,
    README_LORA_PARAMS,
    README_SPEEDS,
    _ratios,
    calibration_factor,
    step_time,
)
from kura.planning.gpus import get_gpu_class
from kura.schema.run import RunSpec

MP = 1024 * 1024


def _seconds(gpu: str = "rtx-3090", **kwargs: Any) -> float:
    options = {
        "max_tokens": 8192,
        "area": MP,
        "lora_params": README_LORA_PARAMS,
        "profile": "balanced",
        **kwargs,
    }
    return step_time(BASE_ARCH, get_gpu_class(gpu), **options).step_s


def test_every_readme_speed_lies_in_the_band_around_the_calibrated_estimate() -> None:
    factor, band = calibration_factor()
    assert band >= MIN_TIME_BAND
    for cell, ratio in zip(README_SPEEDS, _ratios(), strict=True):
        assert abs(ratio / factor - 1) <= band / 2, cell


def test_the_flops_model_scales_across_gpus_as_the_readme_measured() -> None:
    """3090 and 5090 balanced: one factor fits both within a few per cent."""
    by_gpu = {
        cell.gpu: r
        for cell, r in zip(README_SPEEDS, _ratios(), strict=True)
        if cell.profile == "balanced"
    }
    assert by_gpu["rtx-3090"] == pytest.approx(by_gpu["rtx-5090"], rel=0.05)


def test_the_readme_cell_is_reproduced() -> None:
    samples_per_step = 8192 / (4096 + 300)
    assert samples_per_step / _seconds() == pytest.approx(0.39, rel=0.1)


def test_step_time_follows_tokens_gpu_profile_and_accumulation() -> None:
    assert _seconds(max_tokens=12288) > _seconds()
    assert _seconds("rtx-5090") < _seconds()
    assert _seconds(profile="speed") < _seconds()  # no recompute
    assert _seconds(grad_accum=2) == pytest.approx(2 * _seconds())


def _spec(**config: Any) -> RunSpec:
    return RunSpec.model_validate(
        {
            "id": "20261201-0900",
            "model": {"base": "moss-image-base", "root": "/models/moss"},
            "datasets": [{"name": "kura", "resolution": [1024]}],
            "training": {"max_steps": 100, "sample_prompts": []},
            "backend": {"name": "kohakumoss", "config": {"vram_layer": "24g", **config}},
            "execution": {"executor": "host"},
        }
    )


def _row(name: str, profile: str, total: float, tokens: int = 8192) -> MemoryEstimate:
    return MemoryEstimate(name, profile, tokens, tokens // 2, tokens // 2, int(78.4e6), total, {})


CELLS = (_row("balanced 8192", "balanced", 11.45), _row("minimal 8192", "minimal", 5.06))


def test_a_kohakumoss_plan_has_a_step_time_and_a_total_with_a_band() -> None:
    answer = PlanAnswer(
        rows=(_row("vram_24g", "balanced", 12.4, 12288), *CELLS), data=None, data_error="not asked"
    )
    problem = MossProblem(_spec(), answer, True, get_gpu_class("rtx-4090"), arch=BASE_ARCH)
    evaluation = problem.evaluate(problem.baseline())
    assert evaluation is not None
    [cost] = evaluation.costs
    assert evaluation.step_seconds and evaluation.step_seconds > 0
    assert cost.seconds == pytest.approx(100 * evaluation.step_seconds, rel=1e-3)
    assert cost.seconds_band and cost.seconds_band >= MIN_TIME_BAND / 2
    assert evaluation.detail["total_hours"]


def test_without_the_dits_shape_or_a_gpu_the_time_is_unknown_not_zero() -> None:
    answer = PlanAnswer(
        rows=(_row("vram_24g", "balanced", 12.4, 12288), *CELLS), data=None, data_error="not asked"
    )
    for problem in (
        MossProblem(_spec(), answer, True, get_gpu_class("rtx-4090")),
        MossProblem(_spec(), answer, True, None, arch=BASE_ARCH),
    ):
        evaluation = problem.evaluate(problem.baseline())
        assert evaluation is not None
        assert evaluation.step_seconds is None and evaluation.costs[0].seconds is None


def test_a_smaller_dit_steps_faster() -> None:
    tiny = dataclasses.replace(BASE_ARCH, dim=1024, depth=12, ffn_dim=2048, heads=8)
    gpu = get_gpu_class("rtx-3090")
    small = step_time(tiny, gpu, max_tokens=8192, area=MP, lora_params=1e6, profile="balanced")
    assert small.step_s < _seconds() / 10
