from __future__ import annotations

from pathlib import Path

import pytest

from kura.architectures import ARCHITECTURE_IDS
from kura.backends.registry import backends_serving, get_backend
from kura.errors import InvalidInput
from kura.initialize import init_workspace
from kura.knowledge.baselines import card_path, show_card, sync_baselines
from kura.knowledge.cards import parse_card

BUILT_IN = ("musubi-tuner", "ai-toolkit", "kohakumoss")


def test_every_trainer_has_a_card_for_every_architecture_it_trains(tmp_path: Path) -> None:
    workspace, created = init_workspace(tmp_path)
    for name in BUILT_IN:
        served = [a for a in ARCHITECTURE_IDS if get_backend(name).serves(a)]
        assert served, name
        for architecture in served:
            path = card_path(workspace, name, architecture)
            assert path.is_file() and f"knowledge/{name}/{architecture}.md" in created
    # moss_image is KohakuMoss's alone: Musubi has no card of it, KohakuMoss no card of flux2
    assert not (workspace.knowledge_dir / "musubi-tuner" / "moss_image.md").exists()
    assert not (workspace.knowledge_dir / "kohakumoss" / "flux2.md").exists()


def test_each_card_holds_its_own_trainers_values_with_their_sources(tmp_path: Path) -> None:
    workspace, _ = init_workspace(tmp_path)
    musubi, _ = parse_card(card_path(workspace, "musubi-tuner", "flux2").read_text())
    aitk, _ = parse_card(card_path(workspace, "ai-toolkit", "flux2").read_text())
    sampling = {e.key: (e.value, e.source) for e in musubi if e.section == "all"}
    assert sampling["training.timestep_sampling"] == (
        "flux2_shift",
        "upstream (musubi-tuner 0.3.4 docs/flux_2.md:169-173 (the LoRA training example))",
    )
    # AI-Toolkit's FLUX.2 card holds AI-Toolkit's own timestep type, never Musubi's
    (line,) = [e for e in aitk if e.key == "training.timestep_sampling"]
    assert line.value == "weighted" and "ui/src/app/jobs/new/options.tsx:639" in line.source
    assert not [e for e in aitk if e.key == "training.discrete_flow_shift"]
    assert all(e.source.startswith("upstream (ai-toolkit 27a03a9 ") for e in aitk)
    moss, problems = parse_card(card_path(workspace, "kohakumoss", "moss_image").read_text())
    assert problems == []
    assert {e.key: e.value for e in moss}["training.scheduler"] == "cosine"


def test_sync_writes_upstream_lines_once_and_never_touches_owner_lines(tmp_path: Path) -> None:
    workspace, _ = init_workspace(tmp_path)
    path = card_path(workspace, "musubi-tuner", "flux2")
    path.unlink()
    first = {(r.backend, r.architecture): r for r in sync_baselines(workspace)}
    assert first[("musubi-tuner", "flux2")].created and first[("musubi-tuner", "flux2")].added > 0
    assert not first[("ai-toolkit", "flux2")].created
    again = sync_baselines(workspace)
    assert all(not r.created and r.added == 0 and r.updated == 0 for r in again)
    text = path.read_text()
    baseline = next(line for line in text.splitlines() if "training.learning_rate" in line)
    path.write_text(
        text.replace(
            baseline,
            baseline.replace("0.0001", "0.0003") + "\n- training.learning_rate: 5.0e-5 — "
            "source: owner (2026-11-01)",
        )
    )
    synced = {r.backend: r.updated for r in sync_baselines(workspace, ["flux2"])}
    assert synced == {"ai-toolkit": 0, "musubi-tuner": 1}  # only the changed upstream line
    entries, _ = parse_card(path.read_text())
    lr = sorted((e.kind, e.value) for e in entries if e.key == "training.learning_rate")
    assert lr == [("owner", 5e-5), ("upstream", 1e-4)]


def test_an_old_layout_card_is_refused_naming_the_move(tmp_path: Path) -> None:
    workspace, _ = init_workspace(tmp_path)
    old = workspace.knowledge_dir / "flux2.md"
    old.write_text("# flux2\n\n## character\n- training.network.rank: 24 — source: run r1\n")
    with pytest.raises(InvalidInput, match=r"flux2\.md: knowledge cards of the old") as hit:
        sync_baselines(workspace)
    assert "mv knowledge/flux2.md knowledge/musubi-tuner/flux2.md" in (hit.value.hint or "")
    assert "flux2.md has 1 line(s) of your own" in (hit.value.hint or "")
    with pytest.raises(InvalidInput, match="old layout"):
        card_path(workspace, "musubi-tuner", "flux2")
    # the preferences and regrets files are not cards
    old.unlink()
    (workspace.knowledge_dir / "user-preferences.md").write_text("## all\n")
    assert sync_baselines(workspace)


def test_show_names_the_trainer_when_several_have_a_card(tmp_path: Path) -> None:
    from kura.errors import UsageError

    workspace, _ = init_workspace(tmp_path)
    assert set(backends_serving("flux2")) >= {"musubi-tuner", "ai-toolkit"}
    with pytest.raises(UsageError, match="ai-toolkit, musubi-tuner have cards"):
        show_card(workspace, "flux2")
    card = show_card(workspace, "flux2", "ai-toolkit")
    assert card.backend == "ai-toolkit" and card.to_dict()["backend"] == "ai-toolkit"
    assert show_card(workspace, "moss_image").backend == "kohakumoss"


def test_the_committed_knowledge_doc_is_the_data() -> None:
    from kura.knowledge.doc import render_markdown

    doc = Path(__file__).resolve().parents[2] / "docs" / "knowledge.md"
    assert (doc.read_text(encoding="utf-8") if doc.exists() else "") == render_markdown(), (
        "docs/knowledge.md is stale: run `python -m kura.knowledge.doc > docs/knowledge.md`"
    )
