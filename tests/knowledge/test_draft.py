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


def test_every_kura_default_names_its_source() -> None:
    from kura.knowledge.draft import default_sources
    from kura.runs.new import recipe_keys

    sources = default_sources()
    assert set(sources) == set(recipe_keys()), "recipe_defaults.yaml must list every key"
    assert all(len(text) > 20 for text in sources.values())


def test_every_drafted_value_has_a_source_for_every_architecture_and_task(
    tmp_path: Path,
) -> None:
    from typing import get_args

    from kura.knowledge.baselines import baseline_architectures, baseline_values
    from kura.runs.new import recipe_keys
    from kura.spec.run import RunSpec

    workspace, _ = init_workspace(tmp_path)
    sync_baselines(workspace)
    literal, _none = get_args(RunSpec.model_fields["task"].annotation)
    tasks = list(get_args(literal))
    assert "character" in tasks
    defaults = recipe_keys()
    for architecture in baseline_architectures():
        doc, sections = baseline_values(architecture)
        for task in tasks:
            decisions = draft_values(
                workspace, architecture, task, keys=list(defaults), explicit={}, defaults=defaults
            )
            assert set(decisions) == set(defaults)
            for key, decision in decisions.items():
                where = f"{architecture} × {task}: {key}"
                assert decision.source.strip(), where
                if decision.origin == "default":
                    assert decision.source.startswith("kura: ") and len(decision.source) > 26, where
                # Every baseline value is drafted with its doc as the source.
                baseline = {**sections.get("all", {}), **sections.get(task, {})}
                if key in baseline:
                    assert decision.origin == "upstream", where
                    assert decision.value == baseline[key] and doc in decision.source, where
