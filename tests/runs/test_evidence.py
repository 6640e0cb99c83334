from __future__ import annotations

from datetime import datetime

import pytest

from kura.errors import InvalidInput, StateConflict, UsageError
from kura.knowledge.baselines import card_path
from kura.knowledge.cards import parse_card
from kura.runs.evidence import Checkpoint, evaluate_run, promote_run
from kura.runs.new import create_run
from kura.workspace import Workspace
from tests.builders import mark_trained


@pytest.fixture
def drafted(ws: Workspace) -> str:
    return create_run(
        ws,
        datasets=["myaku"],
        base="flux2-klein-base-9b",
        sets=["training.network.rank=24"],
        now=datetime(2026, 11, 30, 9, 0),
    ).run_id


@pytest.fixture
def run_id(ws: Workspace, drafted: str) -> str:
    mark_trained(ws, drafted)
    return drafted


def test_evaluate_and_promote_need_a_run_that_ran(ws: Workspace, drafted: str) -> None:
    with pytest.raises(StateConflict, match="never launched"):
        evaluate_run(ws, drafted, rating=4, notes="never trained")
    with pytest.raises(StateConflict, match="never launched"):
        promote_run(ws, drafted)
    assert not (ws.run_dir(drafted) / "notes.md").exists()
    mark_trained(ws, drafted)
    (lora,) = (ws.run_dir(drafted) / "output").glob("*.safetensors")
    lora.unlink()
    with pytest.raises(StateConflict, match="without saving a LoRA"):
        promote_run(ws, drafted)


def test_promote_writes_the_runs_own_architecture_and_refuses_another(
    ws: Workspace, run_id: str
) -> None:
    """A never-run FLUX.2 run once went into the Wan card (issue 26): the card is the run's."""
    with pytest.raises(UsageError, match="trained flux2, not wan"):
        promote_run(ws, run_id, architecture="wan", task="character")
    promoted = promote_run(ws, run_id)
    assert (promoted.architecture, promoted.task, promoted.backend) == (
        "flux2",
        "character",
        "musubi-tuner",
    )


def test_evaluate_appends_words_settings_and_hardware(ws: Workspace, run_id: str) -> None:
    evaluate_run(ws, run_id, rating=4, notes="likeness good\nhands still odd")
    evaluate_run(ws, run_id, rating=2, notes="epoch 12 overcooked")
    text = (ws.run_dir(run_id) / "notes.md").read_text()
    assert text.count("- rating:") == 2
    assert "  > hands still odd" in text
    assert "network.rank=24" in text
    assert "- hardware: unknown × 1; state succeeded" in text


def test_evaluate_refuses_out_of_range_ratings(ws: Workspace, run_id: str) -> None:
    with pytest.raises(UsageError, match="outside 1-5"):
        evaluate_run(ws, run_id, rating=9, notes=None)
    assert not (ws.run_dir(run_id) / "notes.md").exists()


def test_evaluate_on_a_notes_md_that_is_not_utf8_names_it_and_keeps_it(
    ws: Workspace, run_id: str
) -> None:
    notes = ws.run_dir(run_id) / "notes.md"
    notes.write_bytes("# Notes\n\nr\xe9sultat\n".encode("latin-1"))
    with pytest.raises(InvalidInput, match=r"notes\.md is not UTF-8 text") as info:
        evaluate_run(ws, run_id, rating=4, notes="fine")
    assert info.value.hint == "save it as UTF-8"
    assert notes.read_bytes() == "# Notes\n\nr\xe9sultat\n".encode("latin-1")


def test_promote_adds_run_lines_beside_owner_lines(ws: Workspace, run_id: str) -> None:
    path = card_path(ws, "musubi-tuner", "flux2")
    path.write_text(
        path.read_text()
        + "\n## character\n- training.network.rank: 16 — source: owner (2026-11-01)\n"
    )
    doc = promote_run(ws, run_id, architecture="flux2", task="character")
    assert doc.added["training.network.rank"] == 24
    entries, problems = parse_card(path.read_text())
    assert problems == []
    ranks = sorted(
        (e.source, e.value)
        for e in entries
        if e.key == "training.network.rank" and e.section == "character"
    )
    assert ranks == [("owner (2026-11-01)", 16), (f"run {run_id}", 24)]
    again = promote_run(ws, run_id, architecture="flux2", task="character")
    assert again.added == {}


def test_the_chosen_epoch_is_recorded_and_promoted(ws: Workspace, run_id: str) -> None:
    doc = evaluate_run(ws, run_id, rating=5, notes="epoch 10 was best", epoch=10)
    assert doc.chosen == Checkpoint("epoch", 10)
    assert doc.to_dict()["chosen"] == {"unit": "epoch", "value": 10}
    assert "- chosen: epoch 10" in (ws.run_dir(run_id) / "notes.md").read_text()
    promoted = promote_run(ws, run_id, architecture="flux2", task="character")
    assert promoted.added["training.epochs"] == 10
    entries, _ = parse_card(card_path(ws, "musubi-tuner", "flux2").read_text())
    epochs = [e.value for e in entries if e.key == "training.epochs" and e.section == "character"]
    assert 10 in epochs and 16 not in epochs


def test_promote_takes_a_step_instead_of_an_epoch(ws: Workspace, run_id: str) -> None:
    promoted = promote_run(ws, run_id, architecture="flux2", task="character", step=1200)
    assert promoted.added["training.max_steps"] == 1200
    assert "training.epochs" not in promoted.added
    with pytest.raises(UsageError, match="not both"):
        evaluate_run(ws, run_id, rating=3, notes=None, epoch=2, step=3)
