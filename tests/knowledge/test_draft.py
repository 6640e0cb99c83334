from __future__ import annotations

from pathlib import Path

import pytest

from kura.initialize import init_workspace
from kura.knowledge.baselines import card_path, sync_baselines
from kura.knowledge.draft import draft_values, preferences_path, provenance_line
from kura.workspace import Workspace

KEYS = ["training.learning_rate", "training.network.rank", "training.seed", "training.epochs"]


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    workspace, _ = init_workspace(tmp_path)
    sync_baselines(workspace, ["flux2"])
    return workspace


def _draft(ws: Workspace, explicit: dict | None = None, task: str = "character"):
    return draft_values(
        ws, "flux2", task, keys=KEYS, explicit=explicit or {}, defaults={"training.seed": 42}
    )


def test_baseline_then_default(ws: Workspace) -> None:
    decisions = _draft(ws)
    assert decisions["training.learning_rate"].value == 1e-4
    assert decisions["training.learning_rate"].origin == "upstream"
    assert decisions["training.seed"].origin == "default"


def test_precedence_explicit_preference_run_baseline(ws: Workspace) -> None:
    card = card_path(ws, "flux2")
    card.write_text(
        card.read_text()
        + "\n## character\n- training.network.rank: 24 — source: run 20261101-0900\n"
    )
    preferences_path(ws).write_text("## flux2\n- training.learning_rate: 2.0e-4\n")
    decisions = _draft(ws, explicit={"training.epochs": 8})
    assert decisions["training.epochs"].origin == "explicit"
    assert decisions["training.learning_rate"].value == 2e-4
    assert decisions["training.learning_rate"].origin == "preference"
    assert decisions["training.network.rank"].value == 24
    assert decisions["training.network.rank"].source == "run 20261101-0900"
    line = provenance_line(decisions, "flux2")
    assert "learning_rate: your preference" in line
    assert "network.rank: card, from run (run 20261101-0900)" in line
    assert "epochs: your instruction" in line


def test_task_section_only_applies_to_its_task(ws: Workspace) -> None:
    card = card_path(ws, "flux2")
    card.write_text(
        card.read_text() + "\n## style\n- training.network.rank: 8 — source: owner (2026-11-01)\n"
    )
    assert _draft(ws, task="style")["training.network.rank"].value == 8
    assert _draft(ws, task="character")["training.network.rank"].value == 32


def test_contradictions_at_the_same_rank_are_reported(ws: Workspace) -> None:
    card = card_path(ws, "flux2")
    card.write_text(
        card.read_text()
        + "\n## character\n- training.epochs: 10 — source: run 20261101-0900\n"
        + "- training.epochs: 20 — source: run 20261102-0900\n"
    )
    decision = _draft(ws)["training.epochs"]
    assert decision.value == 10
    assert decision.contradictions == [
        {"value": 20, "source": "run 20261102-0900", "section": "character"}
    ]
