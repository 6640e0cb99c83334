"""A trial that reached its last step is scored, never pruned (issue 24): stopping it there
saves nothing and would throw away the validation loss and the LoRA it is writing."""

from __future__ import annotations

from pathlib import Path

from kura.sweep.envelope import approve_sweep, plan_sweep
from kura.sweep.new import new_sweep
from kura.sweep.records import load_trials
from kura.sweep.worker import run_worker
from kura.workspace import Workspace
from tests.sweep.conftest import base_run, write_space

# The first rung is the last step (min_resource = max_steps = 2): the only moment the
# pruner is asked about the weak second trial is while it writes its results.
SPACE = (
    "axes:\n  training.learning_rate: {choices: [0.0003, 0.00001]}\n"
    "objective: {metric: heldout_loss}\nearly_stop: {min_resource: 2, reduction_factor: 2}\n"
)


def _card(ws: Workspace) -> None:
    path = ws.knowledge_dir / "toy-trainer" / "zimage.md"
    line = '- sweep.curated.slow: {"training.learning_rate": 0.00001} — source: agent (test)'
    path.write_text(path.read_text() + f"\n## character\n{line}\n")


def test_a_weak_trial_at_its_last_step_is_scored_not_pruned(ws: Workspace, tmp_path: Path) -> None:
    _card(ws)
    # the toy sleeps step_sleep after printing each step, the last one too: the follower
    # sees step 2/2 while the run is still writing its validation loss and LoRA
    run = base_run(
        ws, "training.max_steps=2", "backend.config.step_sleep=0.6", "training.learning_rate=0.0003"
    )
    sweep = new_sweep(ws, base_run=run, space=write_space(tmp_path, SPACE), trials=2)
    plan_sweep(ws, sweep["sweep"], gpu="h100-pcie")
    approve_sweep(ws, sweep["sweep"])
    run_worker(ws, sweep["sweep"], gpu="h100-pcie", seed=1)
    records = load_trials(ws, sweep["sweep"])
    assert [r.params["training.learning_rate"] for r in records] == [0.0003, 0.00001]
    assert [r.status for r in records] == ["complete", "complete"], [r.stopped for r in records]
    weak = records[1]
    assert weak.stopped is None
    assert weak.objective is not None and weak.objective.value is not None
    assert (ws.run_dir(weak.run_id) / "output" / "toy-lora.safetensors").is_file()
