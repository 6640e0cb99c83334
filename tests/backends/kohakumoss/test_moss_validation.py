"""KohakuMoss's held-out loss, pure: the compiled VALIDATION block, its cadence, and the
``val_loss`` rows read back (no environment needed)."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest
from tests.backends.kohakumoss.test_moss_pure import _inputs

from kura.backends.base import AttemptRef
from kura.backends.kohakumoss.backend import BACKEND
from kura.backends.kohakumoss.compile import MossDataset, compile_moss
from kura.backends.kohakumoss.follow import loss_history, read_progress
from kura.backends.kohakumoss.validation import (
    MossValidationSettings,
    default_every,
    validation_settings,
)
from kura.errors import InvalidInput, SpecError

VALIDATION_TYPES = {"VALIDATE_EVERY": "int", "VALIDATION": "mapping"}


def _knobs(text: str) -> dict[str, Any]:
    return {
        n.targets[0].id: ast.literal_eval(n.value)
        for n in ast.parse(text).body
        if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name)
    }


def _with_validation(tmp_path: Path, **over: object) -> Any:
    base = _inputs(tmp_path)
    values: dict[str, object] = {
        "knob_types": {**base.knob_types, **VALIDATION_TYPES},
        "validation": (MossDataset("kura-val", tmp_path / "val", ".txt", 1, "kura"),),
        "validation_settings": validation_settings(
            6, 1, every=None, extra=None, datasets=("kura-val",)
        ),
    }
    values.update(over)
    return _inputs(tmp_path, **values)


def test_validation_datasets_compile_into_kohakumoss_validation_and_their_own_caches(
    tmp_path: Path,
) -> None:
    compiled = compile_moss(_with_validation(tmp_path))
    train = _knobs(compiled.files["compiled/kohakumoss/train.py"])
    val_entry = {
        "source": "folder",
        "path": (tmp_path / "val").as_posix(),
        "txt_as": "tags",
        "weight": 1.0,
    }
    # the training data are the training dataset only; the held-out one is VALIDATION's
    assert [d["path"] for d in train["DATASETS"]] == [(tmp_path / "ds").as_posix()]
    assert train["VALIDATE_EVERY"] == 2  # STEPS 6, metrics every step: 2, 4, 6 (the last)
    assert train["VALIDATION"] == {
        "datasets": [val_entry],
        "sigmas": [0.25, 0.5, 0.75],
        "seed": 0,
        "batches": 4,
    }
    # the held-out items are cached by the same cache scripts over a config of their own
    val_data = compiled.files["compiled/kohakumoss/val_data.py"]
    assert "scripts/data/cache_text.py" in (ast.get_docstring(ast.parse(val_data)) or "")
    assert f"use_config({(compiled.data_config).as_posix()!r})" in val_data
    assert _knobs(val_data) == {"DATASETS": [val_entry], "TEXT_DROP": 0.0}
    names = [s.name for s in compiled.steps]
    assert names == [
        "inspect",
        "cache_text",
        "cache_latents",
        "cache_val_text",
        "cache_val_latents",
        "train",
    ]
    by_name = {s.name: s for s in compiled.steps}
    val_config = str(compiled.data_config.parent / "val_data.py")
    assert by_name["cache_val_text"].argv[-1] == val_config
    assert by_name["cache_val_text"].argv[2].endswith("cache_text.py")
    assert by_name["cache_val_latents"].argv[2].endswith("cache_latents.py")
    assert by_name["cache_text"].argv[-1] == str(compiled.data_config)
    assert compiled.validation is not None and compiled.validation.every == 2


def test_without_validation_nothing_changes(tmp_path: Path) -> None:
    compiled = compile_moss(_inputs(tmp_path))
    train = _knobs(compiled.files["compiled/kohakumoss/train.py"])
    assert "VALIDATE_EVERY" not in train and "VALIDATION" not in train
    assert "compiled/kohakumoss/val_data.py" not in compiled.files
    assert compiled.validation is None


def test_a_validation_dataset_that_is_trained_on_is_refused(tmp_path: Path) -> None:
    same = (MossDataset("kura-val", tmp_path / "ds", ".txt", 1),)
    with pytest.raises(InvalidInput, match="would not be held out"):
        compile_moss(_with_validation(tmp_path, validation=same))
    with pytest.raises(InvalidInput, match="without a validation cadence"):
        compile_moss(_with_validation(tmp_path, validation_settings=None))


@pytest.mark.parametrize(
    ("steps", "cadence", "every"),
    [
        (1000, 10, 250),  # four validations, the last at step 1000
        (4, 1, 1),
        (10, 1, 5),
        (997, 10, 997),  # a prime: once, at the last step
        (12, 5, 12),  # no divisor is a multiple of the metrics cadence: the last step only
        (600, 25, 150),
        (1, 10, 1),
    ],
)
def test_the_default_cadence_validates_the_last_step(steps: int, cadence: int, every: int) -> None:
    chosen = default_every(steps, cadence)
    assert chosen == every
    assert steps % chosen == 0 and steps // chosen <= 4
    assert chosen % cadence == 0 or chosen == steps


def test_explicit_validation_settings_are_checked() -> None:
    ok = validation_settings(
        100, 10, every=50, extra={"sigmas": [0.5], "batches": 2, "seed": 3}, datasets=("v",)
    )
    assert ok == MossValidationSettings(
        50, (0.5,), 3, 2, "backend.config.VALIDATE_EVERY (a person's choice)"
    )
    assert ok is not None and ok.forward_passes == 2 and ok.validations(100) == 2
    problems = [
        ({"every": 30, "extra": None}, "must divide STEPS 100"),
        ({"every": 25, "extra": None}, "multiple of the metrics cadence 10"),
        ({"every": 0, "extra": None}, "would report no held-out loss"),
        ({"every": None, "extra": {"datasets": []}}, "Kura writes VALIDATION\\['datasets'\\]"),
        ({"every": None, "extra": {"sigmas": [1.5]}}, "between 0 and 1"),
        ({"every": None, "extra": {"batches": 0}}, "VALIDATION.batches must be"),
    ]
    for kwargs, message in problems:
        with pytest.raises(SpecError, match=message):
            validation_settings(100, 10, datasets=("v",), **kwargs)  # type: ignore[arg-type]
    with pytest.raises(SpecError, match="lists no validation datasets"):
        validation_settings(100, 10, every=50, extra=None, datasets=())
    assert validation_settings(100, 10, every=None, extra=None, datasets=()) is None


def _logged(step: int, when: float, loss: float, val: dict[str, float] | None = None) -> str:
    """One row as KohakuMoss writes it: ``ConsoleLogger.log`` (logging/sinks.py) dumps
    ``{"step", "time", **metrics}``; ``LogMetrics`` (callbacks/monitor.py) builds metrics from
    the state, then the step's outputs, then ``state.metrics`` (where ``Validation`` put
    ``val_loss@<σ>`` and ``val_loss``)."""
    metrics: dict[str, float] = {
        "loss": loss,
        "grad_norm": 0.5,
        "lr": 1e-4,
        "loss_scale": 1.0,
        "skipped_steps": 0.0,
        "nonfinite_steps": 0.0,
        "nonfinite_params": 0.0,
        "step_time": 0.25,
        "samples_per_s": 8.0,
        "tokens_per_s": 512.0,
    }
    metrics.update(val or {})
    return json.dumps({"step": step, "time": when, **metrics})


def _val(mean: float) -> dict[str, float]:
    parts = {"val_loss@0.25": mean - 0.1, "val_loss@0.5": mean, "val_loss@0.75": mean + 0.1}
    return {**parts, "val_loss": sum(parts.values()) / 3}


def test_the_held_out_loss_is_read_back_into_progress_and_the_loss_history(
    tmp_path: Path,
) -> None:
    run = tmp_path / "runs" / "r1"
    out = run / "output" / "r1"
    (run / "logs").mkdir(parents=True)
    out.mkdir(parents=True)
    rows = [
        _logged(1, 101.0, 0.9),
        _logged(2, 102.0, 0.8, _val(0.7)),
        _logged(3, 103.0, 0.75),
        _logged(4, 104.0, 0.6, _val(0.5)),
    ]
    (out / "metrics.jsonl").write_text("\n".join(rows) + "\n" + '{"step": 5, "val_lo')
    (out / "log.txt").write_text("[t] [training.entry] [INFO] training from step 0 to 4\n")
    found = read_progress(out)
    assert found.validation_loss == pytest.approx(0.5) and found.validation_step == 4
    progress = BACKEND.progress(run / "logs" / "train.log")
    assert progress.validation_loss == pytest.approx(0.5) and progress.loss == 0.6
    assert progress.to_dict()["validation_loss"] == pytest.approx(0.5)
    attempt = AttemptRef(1, 100.0, current=True, folder=run)
    history = loss_history(run, [attempt])
    (only,) = history.attempts

    def series(key: str) -> tuple[list[int], list[float]]:
        return [s for s, _ in only.others[key]], [v for _, v in only.others[key]]

    assert series("val_loss") == ([2, 4], pytest.approx([0.7, 0.5]))
    assert series("val_loss@0.75") == ([2, 4], pytest.approx([0.8, 0.6]))
    assert set(only.others) == {
        "grad_norm",
        "val_loss",
        "val_loss@0.25",
        "val_loss@0.5",
        "val_loss@0.75",
    }
    assert [p.step for p in only.points] == [1, 2, 3, 4]


def test_before_the_first_validation_there_is_no_held_out_loss(tmp_path: Path) -> None:
    (tmp_path / "metrics.jsonl").write_text(_logged(1, 1.0, 0.9) + "\n")
    assert read_progress(tmp_path).validation_loss is None


def test_kohakumoss_reports_a_held_out_loss_for_sweeps() -> None:
    assert BACKEND.search_keys("moss_image").heldout_loss is True


def test_the_plan_names_the_validation_cost_as_unsized() -> None:
    from kura.backends.kohakumoss.backend import _validation_line

    settings = validation_settings(1000, 10, every=None, extra=None, datasets=("v",))
    assert settings is not None
    line = _validation_line(settings, 1000)
    assert "VALIDATE_EVERY 250" in line and "4 time(s)" in line
    assert "12 forward passes" in line and "48 in all" in line and "unsized" in line
