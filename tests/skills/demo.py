"""The demo workspace the skills' commands run in, and the values of their placeholders.

Built through Kura's library the way the other tests build theirs (no `kura demo`, no real
trainer): dataset ``myaku`` (five captioned pictures, intent recorded), header-only stand-in
files of ``zimage-base`` in a private Hugging Face cache, a drafted Musubi run, a finished
run of the toy trainer (``tests/backends/toy/``) and a finished two-trial toy sweep whose
space is the sweeps skill's own example.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import pytest

from kura.dataset.registry import add_dataset, set_dataset_values
from kura.initialize import init_workspace
from kura.skills import show_skill
from kura.workspace import Workspace
from tests.skills.documented import yaml_blocks
from tests.sweep.conftest import write_folder

__all__ = ["BUNDLE", "TOY", "DemoWorkspace", "build_demo", "skill_space", "toy_env"]

REPO = Path(__file__).resolve().parents[2]
BUNDLE = "zimage-base"
TOY = "toy-trainer=tests.backends.toy.backend"


def skill_space() -> str:
    """The space file the sweeps skill shows (its first YAML block with ``axes:``)."""
    blocks = [b for b in yaml_blocks(show_skill("sweeps").skill.text) if b.startswith("axes:")]
    assert blocks, "the sweeps skill shows no space file"
    return blocks[0]


def toy_env(monkeypatch: pytest.MonkeyPatch, cache: Path) -> None:
    """The toy trainer registered (for a detached supervisor too) and stand-in model files."""
    from kura.models.bundles import get_bundle
    from kura.models.standins import install_bundle_in_hub_cache

    monkeypatch.setenv("KURA_BACKEND_MODULES", TOY)
    monkeypatch.setenv("PYTHONPATH", f"{REPO}{os.pathsep}{REPO / 'src'}")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    if not cache.exists():
        install_bundle_in_hub_cache(get_bundle(BUNDLE), cache)


@dataclass
class DemoWorkspace:
    """The workspace, its objects, and the fixed placeholder values (RUN moves: see
    :meth:`values`)."""

    workspace: Workspace
    drafted: str
    finished: str
    sweep: str
    fixed: dict[str, str] = field(default_factory=dict)


def _toy_run(workspace: Workspace, *sets: str, minute: int) -> str:
    from kura.runs.new import create_run

    return create_run(
        workspace,
        datasets=["myaku"],
        base=BUNDLE,
        backend="toy-trainer",
        sets=["execution.executor=host", "training.epochs=", "training.max_steps=8", *sets],
        now=datetime(2026, 12, 1, 9, minute),
    ).run_id


def _finished_run(workspace: Workspace) -> str:
    from kura.runs.approval import approve_run
    from kura.runs.launching import launch_run
    from kura.runs.plan import plan_run

    run = _toy_run(workspace, minute=1)
    plan_run(workspace, run, gpu="rtx-4090")
    approve_run(workspace, run)
    state = launch_run(workspace, run, detach=False).state
    assert state.status == "succeeded", state
    return run


def _finished_sweep(workspace: Workspace, scratch: Path) -> str:
    from kura.sweep.envelope import approve_sweep, plan_sweep
    from kura.sweep.new import new_sweep
    from kura.sweep.worker import run_worker

    base = _toy_run(workspace, minute=2)
    space = scratch / "space.yaml"
    space.write_text(skill_space())
    created = new_sweep(workspace, base_run=base, space=space, trials=2)
    sweep = str(created["sweep"])
    plan_sweep(workspace, sweep, gpu="h100-pcie")
    approve_sweep(workspace, sweep)
    done = run_worker(workspace, sweep, gpu="h100-pcie", seed=5)
    assert len(done["trials"]) == 2, done
    return sweep


def _drafted_run(workspace: Workspace) -> str:
    from kura.runs.new import create_run

    return create_run(
        workspace, datasets=["myaku"], base=BUNDLE, now=datetime(2026, 12, 1, 9, 3)
    ).run_id


def build_demo(root: Path) -> DemoWorkspace:
    """The demo workspace under ``root`` (the toy environment must be set: :func:`toy_env`)."""
    from kura.demo_data import write_demo_data

    workspace, _ = init_workspace(root / "ws")
    add_dataset(workspace, "myaku", write_folder(root / "myaku", 5), resolution=(1024, 1024))
    set_dataset_values(workspace, "myaku", ["intent.task=character", "intent.trigger=myaku"])
    data = write_demo_data(root / "generated", count=1)
    other, _ = init_workspace(root / "other-ws")
    scratch = root / "scratch"
    scratch.mkdir()
    space = scratch / "space.yaml"
    space.write_text(skill_space())
    demo = DemoWorkspace(
        workspace=workspace,
        drafted=_drafted_run(workspace),
        finished=_finished_run(workspace),
        sweep=_finished_sweep(workspace, scratch),
    )
    demo.fixed = {
        "DATASET": "myaku",
        "FOLDER": str(write_folder(root / "folder", 5)),
        "TARGETS": str(data.edits),
        "CONTROLS": str(data.edit_controls),
        "BUNDLE": BUNDLE,
        "ARCH": "zimage",
        "TASK": "character",
        "BACKEND": "toy-trainer",
        "GPU": "rtx-4090",
        "SPACE": str(space),
        "SWEEP": demo.sweep,
        "OTHER_WORKSPACE": str(other.root),
        "DIR": str(scratch),
    }
    return demo
