"""A sweep on one machine (journal storage) over the toy trainer: warm start, one approval,
trials as ordinary runs, the memory gate, caches once, the held-out split, early stop, the
report and the card; and every bad input refused with its fix, nothing earlier lost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kura.errors import CheckFailed, SpecError, StateConflict
from kura.execution.state import read_state
from kura.sweep.envelope import approve_sweep, plan_sweep
from kura.sweep.new import new_sweep
from kura.sweep.records import load_trials, sweep_dir
from kura.sweep.report import promote_winner, sweep_report, sweep_status
from kura.sweep.worker import run_worker
from kura.workspace import Workspace
from tests.sweep.conftest import base_run, write_space

GATED = """\
axes:
  training.learning_rate: {low: 1.0e-5, high: 1.0e-2, log: true}
  training.network.rank: {choices: [32, 256]}
objective: {metric: heldout_loss, validation_fraction: 0.2}
early_stop: {enabled: false}
"""


def _card(ws: Workspace, line: str) -> None:
    path = ws.knowledge_dir / "toy-trainer" / "zimage.md"
    path.write_text(path.read_text() + f"\n## character\n{line}\n")


def _ready(ws: Workspace, tmp_path: Path, text: str, trials: int, **kw: object) -> str:
    run = base_run(ws)
    sweep = new_sweep(ws, base_run=run, space=write_space(tmp_path, text), trials=trials, **kw)
    plan_sweep(ws, sweep["sweep"], gpu="h100-pcie")
    approve_sweep(ws, sweep["sweep"])
    return str(sweep["sweep"])


def test_a_sweep_runs_gated_cached_trials_and_promotes_its_winner(
    ws: Workspace, tmp_path: Path
) -> None:
    _card(ws, '- sweep.curated.fast: {"training.learning_rate": 0.001} — source: upstream (toy)')
    run = base_run(ws)
    created = new_sweep(ws, base_run=run, space=write_space(tmp_path, GATED), trials=5)
    sweep_id = created["sweep"]
    names = [c["name"] for c in created["warm_start"]]
    assert names == ["baseline", "fast"], created["warm_start_notes"]
    assert created["warm_start"][1]["source"].endswith("upstream (toy)")
    # the split: one of five items held out, never in the training dataset
    split = created["split"]
    held = split["held_out"]["myaku"]
    assert len(held) == 1
    train_media = ws.root / "sweeps" / sweep_id / "split" / "myaku-train"
    assert held[0] not in {p.name for p in train_media.iterdir()}

    with pytest.raises(StateConflict, match="not approved"):
        run_worker(ws, sweep_id, gpu="h100-pcie")
    plan = plan_sweep(ws, sweep_id, gpu="h100-pcie")
    assert plan.estimate.cache_seconds_once == 5.0
    assert plan.changes.axes == ["training.learning_rate", "training.network.rank"]
    assert "training.optimizer" in plan.unchanged
    rank256 = [c for c in plan.estimate.configs if c.config.endswith("rank=256")]
    assert rank256 and rank256[0].fits is False
    approve_sweep(ws, sweep_id)

    result = run_worker(ws, sweep_id, gpu="h100-pcie", seed=3)
    assert result["stopped"] == "all 5 approved trials are taken"
    records = {r.number: r for r in load_trials(ws, sweep_id)}
    assert records[0].source.startswith("baseline") and records[1].source.startswith("fast")
    statuses = [r.status for r in records.values()]
    assert set(statuses) <= {"complete", "infeasible"} and "complete" in statuses
    for record in records.values():
        run_dir = ws.run_dir(record.run_id)
        assert (run_dir / "plan.md").is_file()
        if record.status == "infeasible":
            assert record.params["training.network.rank"] == 256
            assert record.estimate is not None and record.estimate.upper_gib is not None
            assert record.estimate.upper_gib > record.estimate.usable_gib
            assert not (run_dir / "state.json").exists()  # never launched
            continue
        approval = json.loads((run_dir / "approval.json").read_text())
        assert approval["via"] == f"sweep {sweep_id}"
        assert record.objective is not None and record.objective.metric == "heldout_loss"
        assert any(a.path.endswith("toy-lora.safetensors") for a in record.artifacts)
    # caches once: exactly one trial ran the caching step, the others reused it
    launched = [r for r in records.values() if r.status == "complete"]
    prepared = [read_state(ws.run_dir(r.run_id)).step("prepare").status for r in launched]
    assert prepared.count("succeeded") == 1 and prepared.count("skipped") == len(launched) - 1

    report = sweep_report(ws, sweep_id)
    # a weighted sweep's report is what it was before objective modes (the web page reads it)
    assert set(report) == {
        "kind",
        "sweep",
        "base_run",
        "objective",
        "rows",
        "best",
        "best_interval",
        "best_interval_note",
        "importance",
        "importance_note",
        "step_times_by_gpu_class",
        "parallel_coordinates",
    }
    assert set(report["objective"]) == {"metric", "validation_fraction", "judge", "judge_weight"}
    assert "values" not in report["rows"][0] and "mode" not in records[0].objective
    best = report["best"]
    assert best["objective"] == min(
        r.objective.value for r in launched if r.objective and r.objective.value is not None
    )
    assert "no interval" in report["best_interval_note"]
    assert set(report["step_times_by_gpu_class"]) <= {"h100-pcie"}
    promoted = promote_winner(ws, sweep_id)
    card = (ws.knowledge_dir / "toy-trainer" / "zimage.md").read_text()
    assert f"source: sweep {sweep_id}" in card
    assert promoted["section"] == "character"

    # a later sweep on the same architecture × task starts from this winner
    again = new_sweep(ws, base_run=run, space=write_space(tmp_path, GATED), trials=2)
    sources = [c["source"] for c in again["warm_start"]]
    assert any(f"sweep {sweep_id}" in s for s in sources), sources


def test_weak_trials_are_stopped_and_say_why(ws: Workspace, tmp_path: Path) -> None:
    text = (
        "axes:\n  training.learning_rate: {choices: [0.0003, 0.00001]}\n"
        "objective: {metric: heldout_loss}\nearly_stop: {min_resource: 1, reduction_factor: 2}\n"
    )
    _card(ws, '- sweep.curated.slow: {"training.learning_rate": 0.00001} — source: agent (test)')
    run = base_run(ws, "backend.config.step_sleep=0.15", "training.learning_rate=0.0003")
    sweep = new_sweep(ws, base_run=run, space=write_space(tmp_path, text), trials=2)
    plan_sweep(ws, sweep["sweep"], gpu="h100-pcie")
    approve_sweep(ws, sweep["sweep"])
    run_worker(ws, sweep["sweep"], gpu="h100-pcie", seed=1)
    records = load_trials(ws, sweep["sweep"])
    # the good lr ran first and completed; the bad one (higher loss at every rung) was stopped
    assert [r.status for r in records] == ["complete", "pruned"]
    stopped = records[1].stopped
    assert stopped is not None and stopped.by.startswith("successive halving")
    state = read_state(ws.run_dir(records[1].run_id))
    assert state.status == "cancelled"
    written = json.loads((ws.run_dir(records[1].run_id) / "sweep-stop.json").read_text())
    assert written == stopped.to_dict()


def test_a_changed_space_or_release_is_refused_and_trials_are_kept(
    ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sweep_id = _ready(ws, tmp_path, GATED, trials=1)
    run_worker(ws, sweep_id, gpu="h100-pcie", seed=1)
    before = sorted(p.name for p in (sweep_dir(ws, sweep_id) / "trials").iterdir())
    space = sweep_dir(ws, sweep_id) / "space.yaml"
    original = space.read_text()
    space.write_text(original.replace("32, 256", "32, 64"))
    with pytest.raises(CheckFailed, match="changed since sweep") as caught:
        run_worker(ws, sweep_id, gpu="h100-pcie")
    assert "kura sweep new" in caught.value.hint
    space.write_text(original)
    from tests.backends.toy.backend import ToyBackend

    monkeypatch.setattr(ToyBackend, "release", "2.0")
    with pytest.raises(CheckFailed, match=r"trainer release changed .*1\.0 → 2\.0"):
        run_worker(ws, sweep_id, gpu="h100-pcie")
    assert sorted(p.name for p in (sweep_dir(ws, sweep_id) / "trials").iterdir()) == before


def test_a_spent_budget_is_refused_with_the_fix(ws: Workspace, tmp_path: Path) -> None:
    sweep_id = _ready(ws, tmp_path, GATED, trials=10, budget_hours=1e-9)
    result = run_worker(ws, sweep_id, gpu="h100-pcie", seed=1)
    assert result["stopped"].startswith("the budget is spent")
    assert len(result["trials"]) == 1
    with pytest.raises(CheckFailed, match="budget is spent") as caught:
        run_worker(ws, sweep_id, gpu="h100-pcie")
    assert "--budget-hours" in caught.value.hint
    assert len(load_trials(ws, sweep_id)) == 1


def test_an_unreachable_storage_is_a_clear_error(ws: Workspace, tmp_path: Path) -> None:
    run = base_run(ws)
    unreachable = r"cannot reach the sweep storage postgresql://kura@127\.0\.0\.1:1/x"
    with pytest.raises(CheckFailed, match=unreachable) as caught:
        new_sweep(
            ws,
            base_run=run,
            space=write_space(tmp_path, GATED),
            storage="postgresql://kura:secret@127.0.0.1:1/x",
        )
    assert "secret" not in caught.value.message
    assert "start PostgreSQL" in caught.value.hint
    assert not (ws.root / "sweeps").exists() or not list((ws.root / "sweeps").iterdir())


def test_a_space_outside_the_trainers_limits_writes_nothing(ws: Workspace, tmp_path: Path) -> None:
    run = base_run(ws)
    with pytest.raises(SpecError, match="outside the trainer's limits"):
        new_sweep(
            ws,
            base_run=run,
            space=write_space(
                tmp_path, "axes:\n  training.learning_rate: {low: 1.0e-5, high: 3.0}\n"
            ),
        )
    assert not (ws.root / "sweeps").exists() or not list((ws.root / "sweeps").iterdir())


def test_status_and_collect_from_another_machine(ws: Workspace, tmp_path: Path) -> None:
    import shutil

    from kura.sweep.collect import collect_sweep

    sweep_id = _ready(ws, tmp_path, GATED, trials=1)
    run_worker(ws, sweep_id, gpu="h100-pcie", seed=2)
    status = sweep_status(ws, sweep_id)
    assert sum(status["counts"].values()) == 1
    # "another machine": a copy of this workspace's sweep folder; here the artifacts go away
    other = tmp_path / "other-machine"
    shutil.copytree(ws.root / "sweeps", other / "sweeps")
    shutil.rmtree(sweep_dir(ws, sweep_id) / "trials" / "t0000" / "artifacts")
    missing = collect_sweep(ws, sweep_id, sources=[])
    assert missing["counts"]["missing"] > 0
    got = collect_sweep(ws, sweep_id, sources=[other])
    assert got["counts"]["copied"] == missing["counts"]["missing"]
    assert got["counts"]["missing"] == 0
