from __future__ import annotations

from pathlib import Path

from kura.architectures import ARCHITECTURE_IDS
from kura.initialize import init_workspace
from kura.knowledge.baselines import baseline_architectures, card_path, sync_baselines
from kura.knowledge.cards import parse_card

ARCHITECTURES = set(ARCHITECTURE_IDS)


def test_every_architecture_has_a_baseline() -> None:
    # MOSS-Image has no card yet: its defaults are KohakuMoss's own preset layers.
    assert set(baseline_architectures()) == set(ARCHITECTURES) - {"moss_image"}


def test_init_ships_cards_and_sync_writes_upstream_lines_once(tmp_path: Path) -> None:
    workspace, _ = init_workspace(tmp_path)
    assert card_path(workspace, "flux2").is_file()
    card_path(workspace, "flux2").unlink()
    first = {r.architecture: r for r in sync_baselines(workspace)}
    assert first["flux2"].created and first["flux2"].added > 0
    assert not first["wan"].created
    again = sync_baselines(workspace)
    assert all(not r.created and r.added == 0 and r.updated == 0 for r in again)
    entries, problems = parse_card(card_path(workspace, "qwen_image").read_text())
    assert problems == []
    lr = [e for e in entries if e.key == "training.learning_rate"]
    assert [(e.value, e.kind) for e in lr] == [(5e-5, "upstream")]


def test_sync_never_touches_owner_lines_and_keeps_contradictions(tmp_path: Path) -> None:
    workspace, _ = init_workspace(tmp_path)
    sync_baselines(workspace, ["flux2"])
    path = card_path(workspace, "flux2")
    text = path.read_text().replace(
        "- training.learning_rate: 0.0001 — source: upstream (musubi docs/flux_2.md)",
        "- training.learning_rate: 3.0e-4 — source: upstream (musubi docs/flux_2.md)\n"
        "- training.learning_rate: 5.0e-5 — source: owner (2026-11-01)",
    )
    assert "3.0e-4" in text
    path.write_text(text)
    (result,) = sync_baselines(workspace, ["flux2"])
    assert result.updated == 1
    entries, _ = parse_card(path.read_text())
    lr = sorted((e.kind, e.value) for e in entries if e.key == "training.learning_rate")
    assert lr == [("owner", 5e-5), ("upstream", 1e-4)]
