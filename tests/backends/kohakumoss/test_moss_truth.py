"""KohakuMoss, the rest of its truth (issue 22, item 5), pure: no environment needed.

The memory band contains the calibration the plan prints; the plan's CPU runs name the CPU
class; a DiT missing a layer or with a head size that does not divide its width is refused
by ``model check`` (the backend's file rules) before anything runs.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from kura.backends.kohakumoss.backend import MossProblem
from kura.backends.kohakumoss.memory import CALIBRATION, README_SETUP, band, calibrate
from kura.backends.kohakumoss.queries import MemoryEstimate, PlanAnswer
from kura.errors import CheckFailed
from kura.planning.gpus import get_gpu_class
from kura.schema.run import RunSpec


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


# -- a killed trainer ---------------------------------------------------------------------


def _killed_run(tmp_path: Path, *, checkpoint: bool) -> Path:
    run = tmp_path / "runs" / "r1"
    out = run / "output" / "r1"
    (run / "logs").mkdir(parents=True)
    out.mkdir(parents=True)
    # the last lines of a killed process are not why it stopped
    (run / "logs" / "train.log").write_text(
        "[t] [training.callbacks.monitor] [INFO] step 3 [loss=1.0]\n"
        "WARNING: /data/extra does not exist, skipped\n"
    )
    if checkpoint:
        (out / "checkpoints" / "step_00000003").mkdir(parents=True)
        (out / "checkpoints" / "step_00000003" / "state.json").write_text("{}")
    return run


@pytest.mark.parametrize(("code", "words"), [(-9, "SIGKILL (signal 9)"), (143, "SIGTERM")])
def test_a_killed_kohakumoss_run_is_reported_killed_and_offered_resume(
    tmp_path: Path, code: int, words: str
) -> None:
    from kura.execution.logs import diagnose_step

    run = _killed_run(tmp_path, checkpoint=True)
    found = diagnose_step(
        run / "logs" / "train.log", backend="kohakumoss", step="train", exit_code=code, config={}
    )
    assert found["code"] == "killed"  # not "missing_files" from the warning line
    assert f"step train was killed by {words}" in str(found["message"])
    assert "KohakuMoss writes no checkpoint or export" in str(found["message"])
    assert found["next"] == {
        "action": "resume",
        "command": "kura run resume r1",
        "why": "KohakuMoss saved a checkpoint before the kill: continue from it",
    }


def test_a_killed_kohakumoss_run_without_a_checkpoint_is_offered_relaunch(tmp_path: Path) -> None:
    from kura.execution.logs import diagnose_step

    run = _killed_run(tmp_path, checkpoint=False)
    found = diagnose_step(
        run / "logs" / "train.log", backend="kohakumoss", step="train", exit_code=-9, config={}
    )
    following = found["next"]
    assert found["code"] == "killed" and isinstance(following, dict)
    assert following["command"] == "kura run relaunch r1"
    assert "no KohakuMoss checkpoint" in str(following["why"])


# -- a damaged DiT ------------------------------------------------------------------------


def _layout(**changes: Any) -> dict[str, tuple[str, list[int]]]:
    """The tiny MOSS DiT's full header, with keys dropped (value None) or reshaped."""
    from kura.models.layouts import component_layout

    layout = {
        k: (dtype, list(shape))
        for k, (dtype, shape) in component_layout("moss-image-dit-custom").items()
    }
    for key, shape in changes.items():
        name = key.replace("__", ".")
        if shape is None:
            layout.pop(name)
        else:
            layout[name] = ("BF16", list(shape))
    return layout


def _renumbered(layout: dict[str, Any], old: int, new: int) -> dict[str, Any]:
    return {
        (f"layers.{new}." + k[len(f"layers.{old}.") :] if k.startswith(f"layers.{old}.") else k): v
        for k, v in layout.items()
    }


def _check(tmp_path: Path, name: str, layout: dict[str, Any]) -> tuple[str, ...]:
    from kura.backends.kohakumoss.backend import BACKEND
    from kura.models.identify import identify
    from kura.models.layouts import write_sparse_safetensors

    report = identify(write_sparse_safetensors(tmp_path / f"{name}.safetensors", layout))
    assert report.component == "moss-image-dit-custom"
    return BACKEND.file_rules(report, "moss_image").refusals


def test_a_complete_moss_dit_passes_in_every_form(tmp_path: Path) -> None:
    from kura.backends.kohakumoss.ditcheck import dit_problems
    from kura.models.layouts import component_layout

    assert _check(tmp_path, "whole", _layout()) == ()
    prefixed = {f"model.diffusion_model.{k}": v for k, v in _layout().items()}
    assert _check(tmp_path, "prefixed", prefixed) == ()
    fused = _layout()
    for i in range(2):
        fused.pop(f"layers.{i}.proj.k.weight"), fused.pop(f"layers.{i}.proj.v.weight")
        fused[f"layers.{i}.proj.qkv.weight"] = ("BF16", [192, 64])
        fused.pop(f"layers.{i}.proj.q.weight")
    assert _check(tmp_path, "fused", fused) == ()
    base = component_layout("moss-image-dit")  # the released shape's stand-in
    assert dit_problems({k: tuple(s) for k, (_, s) in base.items()}) == ()


def test_a_dit_missing_a_block_is_refused(tmp_path: Path) -> None:
    # blocks 0 and 2: KohakuMoss builds three from the highest index, block 1 has no weights
    gap = _renumbered(_layout(), 1, 2)
    [refusal] = _check(tmp_path, "gap", gap)
    assert refusal.startswith("KohakuMoss cannot build and load this DiT: layers 1 missing")


def test_a_block_missing_a_tensor_is_refused(tmp_path: Path) -> None:
    [refusal] = _check(tmp_path, "hole", _layout(layers__1__proj__o__weight=None))
    assert refusal == "KohakuMoss cannot build and load this DiT: layers.1 lacks proj.o.weight"


def test_a_head_size_that_does_not_divide_the_width_is_refused(tmp_path: Path) -> None:
    norms = {f"layers__{i}__{n}_norm__weight": (24,) for i in range(2) for n in "qk"}
    [refusal] = _check(tmp_path, "heads", _layout(**norms))
    assert "the head size 24 (layers.0.q_norm.weight) does not divide the width 64" in refusal


def test_a_head_size_rope_cannot_split_is_refused(tmp_path: Path) -> None:
    norms = {f"layers__{i}__{n}_norm__weight": (4,) for i in range(2) for n in "qk"}
    [refusal] = _check(tmp_path, "rope", _layout(**norms))
    assert "head size 4 (width 64 ÷ 16 heads) is not a multiple of 8" in refusal


def test_a_block_of_another_shape_is_refused(tmp_path: Path) -> None:
    refusals = _check(tmp_path, "odd", _layout(layers__1__proj__ffn_down__weight=(64, 96)))
    assert refusals == (
        "KohakuMoss cannot build and load this DiT: layers.1.proj.ffn_down.weight is [64, 96], "
        "layers.0's is [64, 128]",
    )


def test_model_check_refuses_the_damaged_dit(tmp_path: Path) -> None:
    import io
    import json

    from kura.cli.main import main
    from kura.models.layouts import write_sparse_safetensors

    path = write_sparse_safetensors(
        tmp_path / "hole.safetensors", _layout(layers__1__proj__o__weight=None)
    )
    out = io.StringIO()
    code = main(["model", "check", str(path), "--arch", "moss_image", "--json"], stdout=out)
    doc = json.loads(out.getvalue())
    assert code != 0, doc
    [checked] = doc["files"]
    assert checked["verdict"]["status"] == "refused"
    assert "layers.1 lacks proj.o.weight" in " ".join(checked["verdict"]["refusals"])
