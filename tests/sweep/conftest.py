"""Fixtures for sweep tests: a workspace with the toy backend and a base run."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from kura.dataset.registry import add_dataset, set_dataset_values
from kura.initialize import init_workspace
from kura.workspace import Workspace
from tests.backends.kohakumoss.conftest import moss_env, tiny_root

__all__ = ["moss_env", "tiny_root"]  # the KohakuMoss fixtures, shared with the sweep tests

REPO = Path(__file__).resolve().parents[2]
TOY_DIR = REPO / "tests" / "backends" / "toy"
BUNDLE = "zimage-base"
TOY = "toy-trainer=tests.backends.toy.backend"


def write_folder(folder: Path, count: int) -> Path:
    folder.mkdir(parents=True)
    for index in range(count):
        Image.new("RGB", (768, 512), (20 * index, 80, 120)).save(folder / f"{index}.png")
        (folder / f"{index}.txt").write_text(f"myaku, picture {index}\n")
    return folder


@pytest.fixture
def toy_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    from kura.models.bundles import get_bundle
    from kura.models.standins import install_bundle_in_hub_cache

    monkeypatch.setenv("KURA_BACKEND_MODULES", TOY)
    monkeypatch.setenv("PYTHONPATH", f"{REPO}{os.pathsep}{REPO / 'src'}")
    cache = tmp_path / "hf-cache"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    install_bundle_in_hub_cache(get_bundle(BUNDLE), cache)
    (TOY_DIR / "mode").unlink(missing_ok=True)
    yield dict(os.environ)
    (TOY_DIR / "mode").unlink(missing_ok=True)


@pytest.fixture
def ws(tmp_path: Path, toy_env: dict[str, str]) -> Workspace:
    workspace, _ = init_workspace(tmp_path / "ws")
    add_dataset(workspace, "myaku", write_folder(tmp_path / "incoming", 5), resolution=(1024, 1024))
    set_dataset_values(workspace, "myaku", ["intent.task=character"])
    return workspace


def base_run(workspace: Workspace, *sets: str) -> str:
    from kura.runs.new import create_run

    return create_run(
        workspace,
        datasets=["myaku"],
        base=BUNDLE,
        backend="toy-trainer",
        sets=["execution.executor=host", "training.epochs=", "training.max_steps=8", *sets],
        now=datetime(2026, 12, 1, 9, 0),
    ).run_id


SPACE = """\
axes:
  training.learning_rate: {low: 1.0e-5, high: 1.0e-2, log: true}
  training.network.rank: {choices: [16, 32]}
objective: {metric: heldout_loss, validation_fraction: 0.2}
early_stop: {min_resource: 2, reduction_factor: 3}
"""


def write_space(folder: Path, text: str = SPACE) -> Path:
    path = folder / "space.yaml"
    path.write_text(text)
    return path


@pytest.fixture(scope="session")
def pg_server() -> Iterator[object]:
    from tests.postgres import postgres_server

    yield from postgres_server()


@pytest.fixture
def pg_url(pg_server: object) -> str:
    return pg_server.new_database()  # type: ignore[attr-defined]


@pytest.fixture
def moss_sweep_run(
    moss_env: Any, tiny_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Workspace, str]:
    """A base run on the tiny KohakuMoss model (a real trainer, CPU), for a real sweep."""
    from kura.runs.new import create_run
    from tests.backends.kohakumoss.tinyrun import CPU, images

    monkeypatch.setenv("KURA_KOHAKUMOSS_ENV", str(moss_env.path))
    workspace, _ = init_workspace(tmp_path / "moss-ws")
    add_dataset(workspace, "kura", images(tmp_path / "incoming"), resolution=(64, 64))
    set_dataset_values(workspace, "kura", ["intent.trigger=kura", "intent.task=character"])
    sets = [f"backend.config.{k}={v}" for k, v in CPU.items()] + [
        f"model.root={tiny_root}",
        "execution.executor=host",
        "training.max_steps=4",
        "training.network.rank=4",
        "training.network.alpha=4",
        "training.warmup_steps=0",
    ]
    run_id = create_run(
        workspace, datasets=["kura"], base="moss-image-base", backend="kohakumoss", sets=sets
    ).run_id
    return workspace, run_id
