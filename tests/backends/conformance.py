"""The conformance matrix's cells and the workspace they are drafted in.

A cell is one bundle × one backend that accepts it × one task that backend trains on it
(``Backend.tasks``). Its default draft is ``kura run new`` with no ``--set`` (KohakuMoss's
cells add only what its tiny stand-in model forces: where the model is, and no skip-layer
guidance on a model without the released blocks). Each cell is planned on a 24 GB and an
80 GB class (which compiles it), and its compiled files are kept for the trainers' own
checks, run in one harness process per trainer.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from tests.backends.trainer_required import missing

from kura.backends.registry import get_backend
from kura.models.bundle_list import bundle_list
from kura.runs.new import create_run
from kura.runs.plan import plan_run
from kura.workspace import Workspace

GPUS = ("rtx-4090", "a100-80gb")
"""A 24 GB and an 80 GB class."""
DATASETS = {
    "character": "images",
    "style": "images",
    "concept": "images",
    "paired-edit": "pairs",
    "video": "clips",
}
"""The dataset each task is drafted from."""
NEEDS_ENV = ("kohakumoss",)
"""Backends that plan only through their own environment (KohakuMoss's estimator)."""
MOSS_STANDIN = ("backend.config.SAMPLE_SKIP_LAYERS=[]",)
"""What KohakuMoss's tiny stand-in forces (with model.root): it lacks the released DiT's
block 22 that the default skip-layer guidance names."""


@dataclass(frozen=True)
class Cell:
    bundle: str
    backend: str
    task: str

    @property
    def id(self) -> str:
        return f"{self.bundle}-{self.backend}-{self.task}"


@dataclass
class Planned:
    """What planning one cell gave: its run, each GPU's error (None when it planned), and
    the compiled folder the trainer's check reads."""

    cell: Cell
    run_id: str | None = None
    errors: dict[str, str | None] = field(default_factory=dict)
    compiled: Path | None = None
    differences: list[str] = field(default_factory=list)
    recipe: dict[str, object] = field(default_factory=dict)
    """The last plan's recipe (plan.json ``recipe``: what the compiled files hold)."""


def moss_standin(weights: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, ...]:
    """KohakuMoss's environment (``KURA_KOHAKUMOSS_ENV`` set to it for the test; skipped
    without it, failed under CI) and its tiny random model built at ``weights``: the
    ``--set`` values a run drafted on it needs."""
    from kura.backends.kohakumoss.env import locate_env
    from kura.backends.kohakumoss.queries import build_tiny

    env = locate_env()
    if not env.present:
        missing(
            f"the kohakumoss environment is not at {env.path}: run `kura backend install "
            "kohakumoss` or set KURA_KOHAKUMOSS_ENV"
        )
    monkeypatch.setenv("KURA_KOHAKUMOSS_ENV", str(env.path))
    return (f"model.root={build_tiny(env, weights)}", *MOSS_STANDIN)


def cells() -> list[Cell]:
    """Every bundle × each backend that accepts it × each task it trains on the bundle."""
    found = []
    for entry in bundle_list().bundles:
        for name in entry.backends:
            for task in get_backend(name).tasks(entry.bundle):
                found.append(Cell(entry.bundle.id, name, task))
    return found


def build_datasets(workspace: Workspace, root: Path) -> None:
    """``images`` (captioned pictures), ``pairs`` (targets with a control image each) and
    ``clips`` (captioned 61-frame videos at 16 fps), each inspected by ``dataset add``."""
    from tests.dataset.dataset_builders import Builder

    from kura.dataset.registry import add_dataset

    images = Builder(root / "images")
    for i in range(4):
        images.image(f"{i}.png", (96, 96), seed=i, caption=f"myaku, picture {i}")
    targets, controls = Builder(root / "pairs"), Builder(root / "pairs-control")
    for i in range(3):
        targets.image(f"{i}.png", (96, 96), seed=10 + i, caption=f"make it red {i}")
        controls.image(f"{i}.png", (96, 96), seed=20 + i, caption=None)
    clips = Builder(root / "clips")
    for i in range(2):
        clips.video(f"{i}.mp4", 61, fps=16, caption=f"myaku walking {i}")
    add_dataset(workspace, "images", root / "images", resolution=(1024, 1024))
    add_dataset(
        workspace, "pairs", root / "pairs", control=root / "pairs-control", resolution=(1024, 1024)
    )
    add_dataset(workspace, "clips", root / "clips", resolution=(1024, 1024))


def plan_cell(
    workspace: Workspace, cell: Cell, keep: Path, index: int, sets: tuple[str, ...] = ()
) -> Planned:
    """Draft the cell's run (no ``--set`` but ``sets``), plan it on both GPU classes, and
    keep a copy of what the last plan compiled under ``keep/<cell id>``."""
    planned = Planned(cell)
    try:
        created = create_run(
            workspace,
            datasets=[DATASETS[cell.task]],
            base=cell.bundle,
            backend=cell.backend,
            task=cell.task,
            sets=list(sets),
            now=datetime(2026, 12, 1) + timedelta(minutes=index),
        )
    except Exception as error:  # the refusal is the cell's result
        planned.errors = {"run new": f"{type(error).__name__}: {error}"}
        return planned
    planned.run_id = created.run_id
    for gpu in GPUS:
        try:
            report = plan_run(workspace, created.run_id, gpu=gpu)
            planned.errors[gpu] = None
            planned.recipe = dict(report.recipe or {})
            planned.differences = [str(d) for d in planned.recipe.get("differences", [])]
        except Exception as error:
            planned.errors[gpu] = f"{type(error).__name__}: {error}"
    if not any(planned.errors.values()):
        target = keep / cell.id
        shutil.copytree(workspace.run_dir(created.run_id) / "compiled", target)
        planned.compiled = target
    return planned
