"""A workspace with a real sweep for the sweep pages: the toy trainer behind the seam, a
journal-file study, and trials run by the sweep worker (complete, infeasible and pruned
ones), exactly as `kura sweep new|plan|approve|worker` leave them. A second workspace holds
an ``objective.mode: pareto`` sweep (loss down, judge score up) with unscored trials."""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from kura.dataset.registry import add_dataset, set_dataset_values
from kura.initialize import init_workspace
from kura.sweep.envelope import approve_sweep, plan_sweep
from kura.sweep.new import new_sweep
from kura.sweep.worker import run_worker
from kura.workspace import Workspace
from tests.sweep.conftest import BUNDLE, REPO, TOY, TOY_DIR, base_run, write_folder, write_space

SPACE = """\
axes:
  training.learning_rate: {low: 1.0e-5, high: 1.0e-2, log: true}
  training.network.rank: {choices: [16, 256]}
  training.optimizer: {choices: [adamw, sgd]}
objective: {metric: heldout_loss, validation_fraction: 0.2, judge: 'tests.web.sweep_builder:judge',
            judge_weight: 0.25}
early_stop: {enabled: false}
"""
TRIALS = 6
JUDGED_SAMPLES = 3


def judge(run_dir: Path, samples: tuple[Path, ...]) -> list[float]:
    """A scorer of the user's own (``objective.judge: module:function``): one 0–1 score per
    sample prompt, fixed by the trial's run id, so the best trial's interval is a bootstrap
    over prompts."""
    digest = hashlib.sha256(run_dir.name.encode()).digest()
    return [digest[i] / 255 for i in range(JUDGED_SAMPLES)]


PARETO_SPACE = """\
axes:
  training.learning_rate: {choices: [0.0001, 0.0003, 0.001, 0.003]}
  training.network.rank: {choices: [16, 32]}
objective: {mode: pareto, metric: heldout_loss, judge: 'tests.web.sweep_builder:bold_judge'}
"""
PARETO_TRIALS = 8
SILENT_LR = 0.003
"""The learning rate ``bold_judge`` has nothing to say about: its trials are unscored (the
base run uses it, so trial 0 always is)."""


def bold_judge(run_dir: Path, samples: tuple[Path, ...]) -> list[float]:
    """Likes bold learning rates (1e-5 → 0, 1e-2 → 1) while the toy's loss is lowest at 3e-4,
    so the two objectives disagree; no score at all for :data:`SILENT_LR`."""
    lr = json.loads((run_dir / "compiled" / "toy.json").read_text())["learning_rate"]
    if lr == SILENT_LR:
        return []
    return [min(1.0, max(0.0, (math.log10(lr) + 5) / 3))]


@dataclass
class SweepWorkspace:
    workspace: Workspace
    sweep: str
    base_run: str
    empty: str
    """A later sweep over the same run with no trial yet (newest in the list)."""


def toy_environment(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The toy backend registered and its model in a private hub cache (for this module)."""
    from kura.models.bundles import get_bundle
    from kura.models.standins import install_bundle_in_hub_cache

    monkeypatch.setenv("KURA_BACKEND_MODULES", TOY)
    monkeypatch.setenv("PYTHONPATH", f"{REPO}{os.pathsep}{REPO / 'src'}")
    cache = root / "hf-cache"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    install_bundle_in_hub_cache(get_bundle(BUNDLE), cache)
    (TOY_DIR / "mode").unlink(missing_ok=True)


def build_sweep_workspace(root: Path, monkeypatch: pytest.MonkeyPatch) -> SweepWorkspace:
    toy_environment(root, monkeypatch)
    workspace, _ = init_workspace(root / "ws")
    add_dataset(workspace, "myaku", write_folder(root / "incoming", 5), resolution=(1024, 1024))
    set_dataset_values(workspace, "myaku", ["intent.task=character"])
    run = base_run(workspace)
    created = new_sweep(workspace, base_run=run, space=write_space(root, SPACE), trials=TRIALS)
    sweep_id = str(created["sweep"])
    plan_sweep(workspace, sweep_id, gpu="h100-pcie")
    approve_sweep(workspace, sweep_id)
    run_worker(workspace, sweep_id, gpu="h100-pcie", seed=3)
    empty = new_sweep(workspace, base_run=run, space=write_space(root, SPACE), trials=2)
    return SweepWorkspace(workspace, sweep_id, run, str(empty["sweep"]))


@dataclass
class ParetoWorkspace:
    workspace: Workspace
    sweep: str
    base_run: str


def build_pareto_workspace(root: Path, monkeypatch: pytest.MonkeyPatch) -> ParetoWorkspace:
    toy_environment(root, monkeypatch)
    workspace, _ = init_workspace(root / "ws")
    add_dataset(workspace, "myaku", write_folder(root / "incoming", 5), resolution=(1024, 1024))
    set_dataset_values(workspace, "myaku", ["intent.task=character"])
    run = base_run(workspace, f"training.learning_rate={SILENT_LR}")
    created = new_sweep(
        workspace, base_run=run, space=write_space(root, PARETO_SPACE), trials=PARETO_TRIALS
    )
    sweep_id = str(created["sweep"])
    plan_sweep(workspace, sweep_id, gpu="h100-pcie")
    approve_sweep(workspace, sweep_id)
    run_worker(workspace, sweep_id, gpu="h100-pcie", seed=5)
    return ParetoWorkspace(workspace, sweep_id, run)
