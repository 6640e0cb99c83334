"""Real trials: a sweep over the KohakuMoss backend (a real trainer, on the CPU), scored by
its held-out loss.

The sweep carves a validation split of the tiny dataset; each trial's run.yaml lists the
held-out part under ``validation``, Kura compiles it into KohakuMoss's ``VALIDATION``
(validated at the last step), KohakuMoss writes ``val_loss`` into ``metrics.jsonl``, and the
trial's recorded objective is that loss. Needs the KohakuMoss environment
(``KURA_KOHAKUMOSS_ENV``; under CI=true its absence fails).
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from kura.backends.registry import get_backend
from kura.workspace import Workspace

pytestmark = pytest.mark.slow


def _last_val_loss(metrics: Path) -> tuple[int, float]:
    rows = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
    scored = [r for r in rows if "val_loss" in r]
    assert scored, f"{metrics} has no val_loss row"
    return int(scored[-1]["step"]), float(scored[-1]["val_loss"])


def test_a_kohakumoss_sweep_scores_real_trials_by_their_held_out_loss(
    moss_sweep_run: tuple[Workspace, str], tmp_path: Path
) -> None:
    from kura.plainyaml import read_yaml
    from kura.sweep.envelope import approve_sweep, plan_sweep
    from kura.sweep.new import new_sweep
    from kura.sweep.worker import run_worker

    workspace, run_id = moss_sweep_run
    keys = get_backend("kohakumoss").search_keys("moss_image")
    assert keys.heldout_loss and not any(k.startswith("backend.") for k in keys.keys)
    axis = "training.learning_rate"
    assert axis in keys.keys
    space = tmp_path / "space.yaml"
    space.write_text(
        f"axes:\n  {axis}: {{low: 1.0e-5, high: 1.0e-3, log: true}}\n"
        "objective: {metric: heldout_loss, validation_fraction: 0.25}\n"
        "early_stop: {enabled: false}\n"
    )
    sweep = new_sweep(workspace, base_run=run_id, space=space, trials=2)
    plan = plan_sweep(workspace, sweep["sweep"], gpu="h100-pcie")
    # Issue 29: the trials' time and cost are estimated (a band), never "0.0 s per trial".
    assert plan.estimate.per_trial_seconds is not None and plan.estimate.total_hours
    low, high = plan.estimate.per_trial_seconds
    assert 0 < low <= high and plan.estimate.total_hours[0] > 0
    approve_sweep(workspace, sweep["sweep"])
    result = run_worker(workspace, sweep["sweep"], gpu="h100-pcie", seed=1)
    assert [t["status"] for t in result["trials"]] == ["complete", "complete"], result
    for trial in result["trials"]:
        run_dir = workspace.run_dir(trial["run"])
        spec = read_yaml(run_dir / "run.yaml")
        (held,) = spec["validation"]
        (trained,) = spec["datasets"]
        assert held["name"].endswith("-val") and trained["name"].endswith("-train")
        train = {
            n.targets[0].id: ast.literal_eval(n.value)
            for n in ast.parse((run_dir / "compiled/kohakumoss/train.py").read_text()).body
            if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name)
        }
        steps = train["STEPS"]
        assert steps % train["VALIDATE_EVERY"] == 0
        val_paths = [d["path"] for d in train["VALIDATION"]["datasets"]]
        assert val_paths and not set(val_paths) & {d["path"] for d in train["DATASETS"]}
        step, val_loss = _last_val_loss(run_dir / "output" / trial["run"] / "metrics.jsonl")
        assert step == steps  # the objective is the end-of-run held-out loss
        assert trial["objective"] == pytest.approx(val_loss, rel=0, abs=0)
        progress = get_backend("kohakumoss").progress(run_dir / "logs" / "train.log")
        assert progress.validation_loss == val_loss
