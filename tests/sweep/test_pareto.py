"""`objective.mode: pareto`: a two-objective study over the toy trainer, scored by a judge
defined here; the report's Pareto front, promote by a chosen trial of it, an unscored trial
told failed, and every mix that cannot work refused with its fix."""

from __future__ import annotations

import hashlib
import io
import json
import math
from collections.abc import Sequence
from pathlib import Path

import pytest

from kura.cli.main import main
from kura.errors import CheckFailed, SpecError, UsageError
from kura.sweep.envelope import approve_sweep, plan_sweep
from kura.sweep.new import new_sweep
from kura.sweep.records import load_sweep, load_trials, sweep_dir
from kura.sweep.report import promote_winner, sweep_report, sweep_status
from kura.sweep.space import load_space
from kura.sweep.study import check_mode, load_study
from kura.sweep.worker import run_worker
from kura.workspace import Workspace
from tests.sweep.conftest import SPACE, base_run, write_space


def judge(run_dir: Path, samples: Sequence[Path]) -> float:
    """Likes bold learning rates (1e-5 → 0, 1e-2 → 1): the toy's loss is lowest at 3e-4, so
    the two objectives disagree above it."""
    lr = json.loads((run_dir / "compiled" / "toy.json").read_text())["learning_rate"]
    return min(1.0, max(0.0, (math.log10(lr) + 5) / 3))


def silent(run_dir: Path, samples: Sequence[Path]) -> list[float]:
    """A judge with nothing to say about this trial (no score)."""
    return []


PARETO = """\
axes:
  training.learning_rate: {choices: [0.0001, 0.0003, 0.001, 0.003]}
objective: {mode: pareto, metric: heldout_loss, judge: "tests.sweep.test_pareto:JUDGE"}
"""


def _space(tmp_path: Path, judge_name: str = "judge", extra: str = "") -> Path:
    return write_space(tmp_path, PARETO.replace("JUDGE", judge_name) + extra)


def _front(points: dict[int, tuple[float, float]]) -> set[int]:
    """Trials no other beats on both (loss down, judge up), computed here independently."""

    def beats(a: tuple[float, float], b: tuple[float, float]) -> bool:
        return a[0] <= b[0] and a[1] >= b[1] and a != b

    return {n for n, p in points.items() if not any(beats(q, p) for q in points.values())}


def _ready(ws: Workspace, tmp_path: Path, space: Path, trials: int) -> str:
    card = ws.knowledge_dir / "toy-trainer" / "zimage.md"
    card.write_text(
        card.read_text() + "\n## character\n- sweep.curated.mid: "
        '{"training.learning_rate": 0.0003} — source: agent (test)\n'
    )
    run = base_run(ws, "training.learning_rate=0.0001")
    created = new_sweep(ws, base_run=run, space=space, trials=trials)
    assert (
        created["early_stop"]["enabled"] is False and "cannot prune" in created["early_stop_note"]
    )
    plan = plan_sweep(ws, created["sweep"], gpu="h100-pcie")
    objective = plan.model_dump(mode="json")["objective"]
    assert objective["mode"] == "pareto" and "judge_weight" not in objective
    approve_sweep(ws, created["sweep"])
    return str(created["sweep"])


def test_a_pareto_sweep_reports_its_front_and_promotes_the_chosen_trial(
    ws: Workspace, tmp_path: Path
) -> None:
    sweep_id = _ready(ws, tmp_path, _space(tmp_path), trials=4)
    study = load_study(ws, load_sweep(ws, sweep_id))
    assert [d.name for d in study.directions] == ["MINIMIZE", "MAXIMIZE"]
    result = run_worker(ws, sweep_id, gpu="h100-pcie", seed=4)
    assert result["stopped"] == "all 4 approved trials are taken"
    records = {r.number: r for r in load_trials(ws, sweep_id)}
    assert {r.status for r in records.values()} == {"complete"}, records
    points = {}
    for number, record in records.items():
        assert record.objective is not None and record.objective.mode == "pareto"
        assert record.objective.values is not None
        loss, score = record.objective.values
        assert loss == record.objective.loss and score == record.objective.judge_score
        points[number] = (loss, score)
    # trial 0 is the baseline (1e-4), trial 1 the curated 3e-4: lower loss, bolder, so 0 is
    # dominated and never on the front
    assert records[0].params["training.learning_rate"] == 0.0001
    assert records[1].params["training.learning_rate"] == 0.0003
    front = _front(points)
    assert 0 not in front and 1 in front

    report = sweep_report(ws, sweep_id)
    assert report["mode"] == "pareto" and report["best"] is None
    assert report["directions"] == {"loss": "minimize", "judge_score": "maximize"}
    assert {r["number"] for r in report["pareto_front"]} == front
    assert [r["values"][0] for r in report["pareto_front"]] == sorted(
        r["values"][0] for r in report["pareto_front"]
    )
    assert all(r["objective"] is None and r["told"] is None for r in report["rows"])
    assert {r["number"]: tuple(r["values"]) for r in report["rows"]} == points
    assert set(report["importance_by_objective"]) == {"loss", "judge_score"}
    assert report["unscored"] == []
    assert not (sweep_dir(ws, sweep_id) / "winner.json").exists()  # a person chooses

    with pytest.raises(UsageError, match="no --trial given") as caught:
        promote_winner(ws, sweep_id)
    for number in front:
        assert f"{number} (loss" in caught.value.message
    # the command line: the report renders the front; promote names the fix
    out = io.StringIO()
    assert main(["-w", str(ws.root), "sweep", "report", sweep_id], stdout=out) == 0
    assert f"front: trial {min(front)} loss" in out.getvalue()
    out = io.StringIO()
    assert main(["--json", "-w", str(ws.root), "sweep", "report", sweep_id], stdout=out) == 0
    steps = [s["command"] for s in json.loads(out.getvalue())["next"]]
    assert steps[:-1] == [
        f"kura sweep promote {sweep_id} --trial {r['number']}" for r in report["pareto_front"]
    ]
    assert steps[-1].startswith(f"kura sweep collect {sweep_id}")
    out = io.StringIO()
    assert main(["--json", "-w", str(ws.root), "sweep", "promote", sweep_id], stdout=out) == 2
    assert "--trial N" in json.loads(out.getvalue())["error"]["hint"]
    with pytest.raises(UsageError, match="trial 0 is not on the front"):
        promote_winner(ws, sweep_id, trial=0)
    chosen = max(front)
    promoted = promote_winner(ws, sweep_id, trial=chosen)
    assert f"trial {chosen} of the Pareto front" in promoted["source"]
    card = (ws.knowledge_dir / "toy-trainer" / "zimage.md").read_text()
    assert f"source: sweep {sweep_id} (trial {chosen} of the Pareto front" in card
    winner = json.loads((sweep_dir(ws, sweep_id) / "winner.json").read_text())
    assert winner["number"] == chosen and winner["values"] == list(points[chosen])

    # a study made in one mode refuses a space in the other
    space = sweep_dir(ws, sweep_id) / "space.yaml"
    space.write_text(SPACE)
    with pytest.raises(CheckFailed, match="changed since sweep"):
        run_worker(ws, sweep_id, gpu="h100-pcie")
    with pytest.raises(CheckFailed, match=r"created for objective\.mode pareto") as refused:
        check_mode(study, load_sweep(ws, sweep_id), "weighted")
    assert "start a new sweep" in refused.value.hint


def test_a_trial_the_judge_did_not_score_is_told_failed_and_says_why(
    ws: Workspace, tmp_path: Path
) -> None:
    sweep_id = _ready(ws, tmp_path, _space(tmp_path, "silent"), trials=2)
    result = run_worker(ws, sweep_id, gpu="h100-pcie", seed=1)
    assert result["stopped"] == "all 2 approved trials are taken"  # each used its slot
    records = load_trials(ws, sweep_id)
    assert [r.status for r in records] == ["unscored", "unscored"]
    assert records[0].reason is not None and "has no score" in records[0].reason
    assert records[0].objective is not None and records[0].objective.values is None
    assert records[0].objective.loss is not None  # the loss is kept
    study = load_study(ws, load_sweep(ws, sweep_id))
    assert [t.state.name for t in study.get_trials()] == ["FAIL", "FAIL"]
    report = sweep_report(ws, sweep_id)
    assert report["unscored"] == [0, 1] and report["pareto_front"] == []
    out = io.StringIO()
    assert main(["--json", "-w", str(ws.root), "sweep", "report", sweep_id], stdout=out) == 0
    assert [s["command"] for s in json.loads(out.getvalue())["next"]] == [
        f"kura sweep worker {sweep_id}"
    ]
    assert sweep_status(ws, sweep_id)["counts"] == {"unscored": 2}
    with pytest.raises(CheckFailed, match="no completed trial on its Pareto front"):
        promote_winner(ws, sweep_id, trial=0)


@pytest.mark.parametrize(
    ("objective", "early_stop", "message"),
    [
        (
            '{mode: pareto, judge: "m:f"}',
            "early_stop: {min_resource: 2}\n",
            "early_stop with objective.mode pareto",
        ),
        ("{mode: pareto, judge: ratings}", "", "cannot use judge `ratings`"),
        ("{mode: pareto}", "", "mode pareto needs a judge"),
        ('{mode: pareto, judge: "m:f", judge_weight: 0.3}', "", "judge_weight folds"),
        ("{mode: both}", "", "objective.mode"),
    ],
)
def test_a_pareto_space_that_cannot_work_is_refused(
    tmp_path: Path, objective: str, early_stop: str, message: str
) -> None:
    path = tmp_path / "space.yaml"
    path.write_text(
        "axes:\n  training.learning_rate: {low: 1.0e-5, high: 1.0e-3}\n"
        f"objective: {objective}\n{early_stop}"
    )
    with pytest.raises(SpecError, match=message) as caught:
        load_space(path)
    assert "space.yaml" in caught.value.message


def test_a_weighted_space_keeps_its_digest_and_documents(tmp_path: Path) -> None:
    """Spaces written before `mode` existed digest as they did (sweeps resume after an
    upgrade); `mode: weighted` written out is the same space."""
    path = tmp_path / "space.yaml"
    path.write_text(SPACE)
    spec, digest = load_space(path)
    document = spec.model_dump(mode="json")
    assert "mode" not in document["objective"] and document["early_stop"]["enabled"] is True
    before = {
        "axes": document["axes"],
        "objective": {
            "metric": "heldout_loss",
            "validation_fraction": 0.2,
            "judge": None,
            "judge_weight": 0.5,
        },
        "early_stop": {"enabled": True, "min_resource": 2, "reduction_factor": 3},
    }
    canonical = json.dumps(before, sort_keys=True)
    assert digest == "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()
    path.write_text(SPACE.replace("{metric:", "{mode: weighted, metric:"))
    assert load_space(path)[1] == digest
