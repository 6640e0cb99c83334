"""A trial's recorded values read back typed (``kura.sweep.values``): the report's rows and
``kura sweep collect`` read the study's attributes through them, never as plain dicts."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState, create_trial

from kura.errors import InvalidInput
from kura.initialize import init_workspace
from kura.sweep.records import TrialRecord
from kura.sweep.report import _rows
from kura.sweep.space import Objective
from kura.sweep.values import (
    Artifact,
    CacheNote,
    EarlyStop,
    StepTimes,
    TrialEstimate,
    Winner,
    read_attr_list,
)

ESTIMATE = {
    "gpu": "rtx-4090",
    "usable_gib": 22.8,
    "upper_gib": 19.5,
    "peak_gib": 18.0,
    "aids": ["gradient-checkpointing"],
}
STOPPED = {"by": "successive halving (asynchronous)", "step": 40, "loss": 0.31, "why": "weak"}


def _study(*attrs: dict[str, object]) -> optuna.Study:
    study = optuna.create_study()
    for number, recorded in enumerate(attrs):
        study.add_trial(
            create_trial(
                state=TrialState.COMPLETE if "kura.objective" in recorded else TrialState.PRUNED,
                value=0.2 + number if "kura.objective" in recorded else None,
                params={"training.learning_rate": 1e-4},
                distributions={"training.learning_rate": FloatDistribution(1e-5, 1e-3)},
                user_attrs=recorded,
            )
        )
    return study


def test_a_rows_estimate_and_stop_are_typed_and_its_document_unchanged(tmp_path: Path) -> None:
    workspace, _ = init_workspace(tmp_path / "ws")
    study = _study(
        {"kura.estimate": ESTIMATE, "kura.objective": {"value": 0.2, "loss": 0.2}},
        {"kura.estimate": ESTIMATE, "kura.stopped": STOPPED, "kura.status": "pruned"},
    )
    complete, pruned = _rows(workspace, study, Objective(metric="train_loss"))
    assert complete.estimate == TrialEstimate(
        gpu="rtx-4090",
        usable_gib=22.8,
        upper_gib=19.5,
        peak_gib=18.0,
        aids=("gradient-checkpointing",),
    )
    assert (complete.objective, complete.loss, complete.stopped) == (0.2, 0.2, None)
    assert pruned.stopped == EarlyStop(by=STOPPED["by"], why="weak", step=40, loss=0.31)
    assert pruned.objective is None and pruned.judge_scores == ()
    # the --json document is what the worker recorded
    assert complete.to_dict()["estimate"] == ESTIMATE
    assert pruned.to_dict()["stopped"] == STOPPED


def test_a_damaged_attribute_names_the_trial(tmp_path: Path) -> None:
    workspace, _ = init_workspace(tmp_path / "ws")
    study = _study({"kura.estimate": {"usable_gib": "lots"}, "kura.objective": {"value": 1.0}})
    with pytest.raises(InvalidInput, match=r"trial 0's kura\.estimate in the study is damaged"):
        _rows(workspace, study, Objective(metric="train_loss"))


def test_artifacts_are_read_item_by_item() -> None:
    attrs = {"kura.artifacts": [{"path": "trials/t0000/a.log", "size": 3, "sha256": "ab"}]}
    assert read_attr_list(attrs, "kura.artifacts", Artifact, trial=0) == (
        Artifact(path="trials/t0000/a.log", size=3, sha256="ab"),
    )
    assert read_attr_list({}, "kura.artifacts", Artifact, trial=0) == ()
    with pytest.raises(InvalidInput, match="a list was expected"):
        read_attr_list({"kura.artifacts": "a.log"}, "kura.artifacts", Artifact, trial=3)


def test_step_times_are_the_median_of_one_gpu_class() -> None:
    times = StepTimes.of([2.0, 3.0, 10.0])
    assert times.to_dict() == {"trials": 3, "median_seconds_per_step": 3.0}


def test_a_winner_file_keeps_the_score_its_mode_has() -> None:
    weighted = Winner(
        sweep="s1",
        number=3,
        params={"training.learning_rate": 1e-4},
        objective=0.25,
        backend="toy-trainer",
        architecture="zimage",
        task=None,
    )
    assert weighted.to_dict() == {
        "sweep": "s1",
        "number": 3,
        "params": {"training.learning_rate": 1e-4},
        "objective": 0.25,
        "backend": "toy-trainer",
        "architecture": "zimage",
        "task": None,
    }
    pareto = weighted.model_copy(update={"objective": None, "values": (0.2, 0.8)})
    assert "objective" not in pareto.to_dict() and pareto.to_dict()["values"] == [0.2, 0.8]
    assert Winner.model_validate(weighted.to_dict()) == weighted


def test_a_damaged_winner_file_is_named_not_started_from(tmp_path: Path) -> None:
    from kura.sweep.warmstart import _read_winner

    path = tmp_path / "winner.json"
    path.write_text('{"sweep": "s1", "params": {"training.rank": 8}}')
    with pytest.raises(InvalidInput, match=r"winner\.json is damaged") as caught:
        _read_winner(path)
    assert "kura sweep report" in (caught.value.hint or "")


def _trial_record(**values: object) -> TrialRecord:
    return TrialRecord.model_validate(
        {
            "sweep": "sw-1",
            "number": 0,
            "run_id": "sw-1-t0000",
            "params": {"training.learning_rate": 1e-4},
            "source": "sampler",
            "status": "running",
            "worker": "w",
            "host": "h",
            "gpu_class": "h100-pcie",
            "seed": 1,
            "started_at": "2026-12-01T12:00:00+00:00",
            **values,
        }
    )


def test_a_trial_record_holds_typed_values_and_writes_them_unchanged() -> None:
    """trial.json's estimate, stop, score, cache note and artifacts read back as their types;
    an update the worker makes from plain values is validated into them too."""
    record = _trial_record(estimate=ESTIMATE, cache={"key": "k", "computed": ["cache"]})
    assert record.estimate == TrialEstimate.model_validate(ESTIMATE)
    assert record.cache == CacheNote(key="k", computed=("cache",))
    ended = record.updated(
        status="pruned",
        stopped=STOPPED,
        objective={"value": 0.2, "metric": "train_loss", "loss": 0.2, "note": None},
        artifacts=[{"path": "trials/t0000/a.log", "size": 3, "sha256": "ab"}],
    )
    assert ended.stopped == EarlyStop.model_validate(STOPPED)
    assert ended.objective is not None and ended.objective.metric == "train_loss"
    assert ended.artifacts == [Artifact(path="trials/t0000/a.log", size=3, sha256="ab")]
    assert TrialRecord.model_validate(ended.model_dump(mode="json")) == ended


def test_a_trial_record_refuses_a_stop_without_its_reason() -> None:
    with pytest.raises(ValueError, match="why"):
        _trial_record(stopped={"by": "successive halving (asynchronous)"})
