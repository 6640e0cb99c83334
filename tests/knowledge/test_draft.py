from __future__ import annotations

from pathlib import Path

import pytest

from kura.backends.base import KnownValue
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


DEFAULTS = {key: KnownValue(None, "a trainer default") for key in KEYS} | {
    "training.seed": KnownValue(42, "musubi-tuner 0.3.4 docs/flux_2.md:173")
}


def _draft(
    ws: Workspace, explicit: dict | None = None, task: str = "character", backend="musubi-tuner"
):
    return draft_values(
        ws, backend, "flux2", task, keys=KEYS, explicit=explicit or {}, defaults=DEFAULTS
    )


def test_baseline_then_default(ws: Workspace) -> None:
    decisions = _draft(ws)
    assert decisions["training.learning_rate"].value == 1e-4
    assert decisions["training.learning_rate"].origin == "upstream"
    assert decisions["training.seed"].origin == "default"
    assert decisions["training.seed"].source == "musubi-tuner 0.3.4 docs/flux_2.md:173"
    assert decisions["training.seed"].label("flux2") == "musubi-tuner default"


def test_precedence_explicit_preference_run_baseline(ws: Workspace) -> None:
    card = card_path(ws, "musubi-tuner", "flux2")
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
    assert "seed: musubi-tuner default" in line
    assert "epochs: your instruction" in line


def test_task_section_only_applies_to_its_task(ws: Workspace) -> None:
    card = card_path(ws, "musubi-tuner", "flux2")
    card.write_text(
        card.read_text() + "\n## style\n- training.network.rank: 8 — source: owner (2026-11-01)\n"
    )
    assert _draft(ws, task="style")["training.network.rank"].value == 8
    assert _draft(ws, task="character")["training.network.rank"].value == 32


def test_contradictions_at_the_same_rank_are_reported(ws: Workspace) -> None:
    card = card_path(ws, "musubi-tuner", "flux2")
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


def test_a_run_drafts_only_from_its_own_trainers_card(ws: Workspace) -> None:
    """A line in Musubi's card never reaches an AI-Toolkit draft (and the other way)."""
    card = card_path(ws, "musubi-tuner", "flux2")
    card.write_text(card.read_text() + "\n## character\n- training.epochs: 9 — source: run r1\n")
    aitk = _draft(ws, backend="ai-toolkit")
    assert aitk["training.learning_rate"].origin == "default"
    assert aitk["training.epochs"].origin == "default"
    assert _draft(ws)["training.epochs"].value == 9
    assert aitk["training.learning_rate"].label("flux2") == "ai-toolkit default"


def test_a_preference_may_name_the_trainer(ws: Workspace) -> None:
    preferences_path(ws).write_text(
        "## ai-toolkit × flux2\n- training.learning_rate: 3.0e-4\n"
        "## flux2\n- training.learning_rate: 2.0e-4\n"
    )
    assert _draft(ws, backend="ai-toolkit")["training.learning_rate"].value == 3e-4
    assert _draft(ws)["training.learning_rate"].value == 2e-4


def test_every_drafted_value_has_a_source_for_every_trainer_architecture_and_task(
    tmp_path: Path,
) -> None:
    from kura.backends.base import TASKS
    from kura.backends.registry import get_backend
    from kura.knowledge.baselines import baseline_values, card_pairs
    from kura.runs.new import recipe_keys

    workspace, _ = init_workspace(tmp_path)
    keys = list(recipe_keys())
    pairs = card_pairs()
    assert {b for b, _ in pairs} >= {"musubi-tuner", "ai-toolkit", "kohakumoss"}
    for backend, architecture in pairs:
        knowledge = get_backend(backend).knowledge(architecture)
        assert set(knowledge.defaults) == set(keys), backend
        sections = baseline_values(backend, architecture)
        for task in TASKS:
            decisions = draft_values(
                workspace,
                backend,
                architecture,
                task,
                keys=keys,
                explicit={},
                defaults=knowledge.defaults,
            )
            assert set(decisions) == set(keys)
            for key, decision in decisions.items():
                where = f"{backend} {architecture} × {task}: {key}"
                cited = ("musubi-tuner 0.3.4 ", "ai-toolkit 27a03a9 ", "kohakumoss 0.1.0 ")
                assert decision.source.startswith((*cited, "upstream (")), where
                # Every baseline value is drafted with its own source (task beats all).
                baseline = {**sections.get("all", {}), **sections.get(task, {})}
                if key in baseline:
                    value, source = baseline[key]
                    assert decision.origin == "upstream", where
                    assert (decision.value, decision.source) == (value, f"upstream ({source})")
