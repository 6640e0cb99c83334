"""KohakuMoss, the rest of its truth (issue 22, item 5), pure: no environment needed.

The memory band contains the calibration the plan prints; the plan's CPU runs name the CPU
class; a DiT missing a layer or with a head size that does not divide its width is refused
by ``model check`` (the backend's file rules) before anything runs.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from kura.backends.kohakumoss.backend import MossProblem
from kura.backends.kohakumoss.memory import CALIBRATION, README_SETUP, band, calibrate
from kura.backends.kohakumoss.queries import MemoryEstimate, PlanAnswer
from kura.errors import CheckFailed
from kura.planning.gpus import get_gpu_class
from kura.spec.run import RunSpec


def _row(name: str, profile: str, total: float, tokens: int = 8192) -> MemoryEstimate:
    return MemoryEstimate(name, profile, tokens, tokens // 2, tokens // 2, 0, total, {})


# KohakuMoss 0.1.0's estimates of the README's two cells (what a plan on this machine
# prints: the 50/50 image/text split of MAX_TEXT_TOKENS 4096 makes them conservative).
CELLS = (_row("balanced 8192", "balanced", 11.45), _row("minimal 8192", "minimal", 5.06))


def _spec(**config: Any) -> RunSpec:
    return RunSpec.model_validate(
        {
            "id": "20261201-0900",
            "model": {"base": "moss-image-base", "root": "/models/moss"},
            "datasets": [{"name": "kura", "resolution": [64]}],
            "training": {"max_steps": 6, "sample_prompts": []},
            "backend": {"name": "kohakumoss", "config": {"vram_layer": "8g", **config}},
            "execution": {"executor": "host"},
        }
    )


def test_the_band_contains_every_calibration_cell() -> None:
    found = band(CELLS)
    cells = calibrate(CELLS)
    assert [c.name for c, _ in cells] == [c.name for c in CALIBRATION]
    for cell, estimate in cells:
        assert found.contains(cell, estimate), (cell, estimate, found)
    assert found.low == pytest.approx(3.45 / 5.06)  # minimal's lowest measurement
    assert found.measured_high == pytest.approx(9.54 / 11.45)  # balanced's highest
    assert found.high == 1.0  # every cell measured below its estimate: the top is the estimate


def test_a_cell_measured_above_its_estimate_raises_the_top() -> None:
    found = band((_row("balanced 8192", "balanced", 9.0), _row("minimal 8192", "minimal", 3.3)))
    assert found.high == pytest.approx(4.06 / 3.3) and found.low == pytest.approx(8.82 / 9.0)
    for cell, estimate in calibrate(
        (_row("balanced 8192", "balanced", 9.0), _row("minimal 8192", "minimal", 3.3))
    ):
        assert found.contains(cell, estimate)


def test_no_calibration_means_no_band() -> None:
    failed = MemoryEstimate("balanced 8192", "", 0, 0, 0, 0, float("nan"), {}, error="boom")
    with pytest.raises(CheckFailed, match=r"no figure for its README.s measured setups.*boom"):
        band((failed,))


def test_the_calibration_asks_for_the_readme_setup_whatever_the_run_sets() -> None:
    from kura.backends.kohakumoss.memory import calibration_options

    for option, cell in zip(calibration_options(), CALIBRATION, strict=True):
        assert option.knobs["ALGO"] == "lora" and option.knobs["DIM"] == 32
        assert option.knobs["MEMORY_PROFILE"] == cell.profile
        assert option.knobs["MAX_TOKENS"] == cell.max_tokens
        assert {k: option.knobs[k] for k in README_SETUP} == dict(README_SETUP)


def _numbers(line: str) -> list[float]:
    return [float(n) for n in re.findall(r"[-+]?\d+(?:\.\d+)?", line)]


def test_the_printed_band_contains_the_printed_calibration_on_the_cpu_class() -> None:
    written = _row("vram_8g", "minimal", 1.2, tokens=512)
    answer = PlanAnswer(rows=(written, *CELLS), data=None, data_error="not asked")
    problem = MossProblem(_spec(), answer, False, get_gpu_class("cpu"))
    evaluation = problem.evaluate(problem.baseline())
    assert evaluation is not None
    detail = evaluation.detail
    [cost] = evaluation.costs
    low = detail["peak_vram_gib"] - detail["band_gib"] / 2
    high = detail["peak_vram_gib"] + detail["band_gib"] / 2
    assert low == pytest.approx(1.2 * 3.45 / 5.06, abs=2e-3)
    assert high == pytest.approx(1.2, abs=2e-3) == cost.upper_gib
    assert detail["estimate_gib"] == 1.2 and detail["usable_gib"] == 15.2
    [section] = [s for s in detail["trainer_report"] if "calibration" in s["title"]]
    lines = section["lines"]
    # Each printed cell: "estimate E GiB vs measured A–B GiB ...: x % … y % of the estimate",
    # and the printed band "band used: l % … h % of the estimate".
    band_line = next(line for line in lines if line.startswith("band used:"))
    used_low, used_high = _numbers(band_line)[:2]
    cells = [line for line in lines if "nvidia-smi" in line]
    assert len(cells) == 2
    for line in cells:
        estimate = _numbers(line.split("estimate ")[1])[0]
        measured_low, measured_high = (
            abs(x) for x in _numbers(line.split("measured ")[1].split(" GiB")[0])
        )
        assert estimate * (1 + used_low / 100) <= measured_low + 0.01
        assert measured_high <= estimate * (1 + used_high / 100) + 0.01
    assert "its top is the estimate itself" in band_line
