"""Every page renders from a real workspace, and reading never writes."""

from __future__ import annotations

import errno
import shutil

import pytest

from kura.runs.evidence import evaluate_run
from tests.readonly import refused_writes
from tests.web.helpers import client, csrf_of, snapshot
from tests.web.workspace_builder import PROMPTS, WebWorkspace


def test_run_list_shows_every_run_with_its_settings(web: WebWorkspace) -> None:
    page = client(web.workspace).get("/")
    assert page.status_code == 200
    assert f'href="/runs/{web.finished}"' in page.text
    assert f'href="/runs/{web.drafted}"' in page.text
    assert "succeeded" in page.text
    assert "0.0002" in page.text  # the drafted run's learning rate
    assert "flux2-klein-base-4b" in page.text


def test_run_page_shows_progress_charts_log_and_plan(web: WebWorkspace) -> None:
    page = client(web.workspace).get(f"/runs/{web.finished}")
    assert page.status_code == 200
    text = page.text
    assert 'data-field="step">6 / 6<' in text
    assert 'data-field="epoch">2 / 2<' in text
    assert text.count('<svg class="chart"') == 2
    assert "loss/current" in text and "lr/unet" in text
    assert "saving checkpoint" in text  # the log tail
    assert '<article class="markdown">' in text  # plan.md rendered
    assert 'name="csrf"' in text


def test_a_run_never_launched_shows_no_progress_and_no_log(web: WebWorkspace) -> None:
    page = client(web.workspace).get(f"/runs/{web.drafted}")
    assert page.status_code == 200
    assert "not launched" in page.text
    assert "No log yet." in page.text
    assert "No loss logged yet." in page.text


def test_status_json_carries_progress_display_and_charts(web: WebWorkspace) -> None:
    doc = client(web.workspace).get(f"/api/runs/{web.finished}/status").json()
    assert doc["kind"] == "run-status"
    assert doc["state"]["status"] == "succeeded"
    assert doc["progress"]["step"] == doc["progress"]["total"] == 6
    assert doc["display"]["step"] == "6 / 6"
    assert doc["display"]["terminal"] is True
    assert doc["charts"]["loss"].startswith("<svg")
    assert "saving checkpoint" in doc["log"]


def test_unknown_runs_are_404_and_bad_names_400(web: WebWorkspace) -> None:
    site = client(web.workspace)
    assert site.get("/runs/no-such-run").status_code == 404
    assert site.get("/api/runs/no-such-run/status").json()["error"]["type"] == "not-found"
    assert site.get("/runs/.hidden").status_code == 400
    assert site.get("/runs/a%20b").status_code == 400


def test_gallery_is_a_prompt_by_epoch_grid(web: WebWorkspace) -> None:
    page = client(web.workspace).get(f"/runs/{web.finished}/samples")
    assert page.status_code == 200
    text = page.text
    assert text.index(">epoch 1</th>") < text.index(">epoch 2</th>")
    assert "myaku smiling, portrait" in text and "--w 512" not in text
    assert text.count("<img ") == 4
    assert "seed 42" in text and "seed 7" in text
    first = text.index("myaku smiling")
    assert text.index("_e000001_00_", first) < text.index("_e000002_00_", first)


def test_compare_puts_two_epochs_side_by_side_at_each_prompt(web: WebWorkspace) -> None:
    page = client(web.workspace).get(
        "/compare", params={"a": f"{web.finished}:1", "b": f"{web.finished}:e2"}
    )
    assert page.status_code == 200
    rows = page.text.split("<tr>")[2:]
    assert len(rows) == len(PROMPTS)
    assert "_e000001_00_" in rows[0] and "_e000002_00_" in rows[0]
    assert rows[0].index("_e000001_") < rows[0].index("_e000002_")
    assert "_e000001_01_" in rows[1] and "_e000002_01_" in rows[1]


def test_compare_defaults_to_the_last_epoch_and_names_missing_ones(web: WebWorkspace) -> None:
    site = client(web.workspace)
    page = site.get("/compare", params={"a": web.finished, "b": f"{web.finished}:1"})
    assert "_e000002_00_" in page.text
    missing = site.get("/compare", params={"a": f"{web.finished}:9", "b": web.finished})
    assert missing.status_code == 404
    assert "epoch 9" in missing.text
    assert site.get("/compare", params={"a": f"{web.finished}:x", "b": "y"}).status_code == 400
    assert site.get("/compare", params={"a": "../etc", "b": "y"}).status_code == 400


def test_sample_images_are_served_as_png(web: WebWorkspace) -> None:
    site = client(web.workspace)
    name = next((web.workspace.run_dir(web.finished) / "output" / "sample").iterdir()).name
    image = site.get(f"/files/runs/{web.finished}/output/sample/{name}")
    assert image.status_code == 200
    assert image.headers["content-type"] == "image/png"
    assert image.content.startswith(b"\x89PNG")


def test_knowledge_shows_cards_with_sources_and_the_regrets(web: WebWorkspace) -> None:
    page = client(web.workspace).get("/knowledge")
    assert page.status_code == 200
    assert "<h3>flux2 <small>on musubi-tuner</small></h3>" in page.text
    assert "<h3>flux2 <small>on ai-toolkit</small></h3>" in page.text
    assert "training.learning_rate" in page.text
    assert "source-upstream" in page.text
    assert "check skin texture at epoch 4" in page.text


def test_knowledge_names_an_old_layout_card_and_its_move(web: WebWorkspace) -> None:
    (web.workspace.knowledge_dir / "wan.md").write_text("# wan\n")
    try:
        page = client(web.workspace).get("/knowledge")
    finally:
        (web.workspace.knowledge_dir / "wan.md").unlink()
    assert page.status_code == 200
    assert "knowledge cards of the old layout" in page.text
    assert "knowledge/musubi-tuner/wan.md" in page.text


def test_no_get_writes_anything(web: WebWorkspace) -> None:
    site = client(web.workspace)
    before = snapshot(web.workspace.root)
    for url in (
        "/",
        f"/runs/{web.finished}",
        f"/runs/{web.drafted}",
        f"/api/runs/{web.finished}/status",
        f"/runs/{web.finished}/samples",
        f"/compare?a={web.finished}:1&b={web.finished}:2",
        "/knowledge",
        f"/runs/{web.finished}/evaluate",
    ):
        site.get(url)
    assert snapshot(web.workspace.root) == before


def test_a_rating_posted_lands_in_notes_md_as_evaluate_writes_it(web: WebWorkspace) -> None:
    site = client(web.workspace)
    token = csrf_of(site.get(f"/runs/{web.finished}").text)
    sent = site.post(
        f"/runs/{web.finished}/evaluate",
        data={"rating": "4", "notes": "sharp eyes\r\nhair a bit soft", "csrf": token},
        follow_redirects=False,
    )
    assert sent.status_code == 303
    assert sent.headers["location"] == f"/runs/{web.finished}#notes"
    notes = (web.workspace.run_dir(web.finished) / "notes.md").read_text()
    assert "- rating: 4/5" in notes
    assert "  > sharp eyes\n  > hair a bit soft\n" in notes
    assert "- settings: learning_rate=0.0001" in notes
    shown = site.get(f"/runs/{web.finished}").text
    assert "rating: 4/5" in shown


def test_the_form_writes_the_same_lines_as_the_library(web: WebWorkspace) -> None:
    path = web.workspace.run_dir(web.finished) / "notes.md"
    path.unlink(missing_ok=True)
    evaluate_run(web.workspace, web.finished, rating=2, notes="too warm")
    by_library = path.read_text()
    path.unlink()
    site = client(web.workspace)
    token = csrf_of(site.get(f"/runs/{web.finished}").text)
    site.post(
        f"/runs/{web.finished}/evaluate",
        data={"rating": "2", "notes": "too warm", "csrf": token},
    )
    by_form = path.read_text()
    path.unlink()

    def without_stamp(text: str) -> list[str]:
        return [line for line in text.splitlines() if not line.startswith("## ")]

    assert without_stamp(by_form) == without_stamp(by_library)


def test_an_empty_or_out_of_range_rating_is_refused_and_writes_nothing(
    web: WebWorkspace,
) -> None:
    site = client(web.workspace)
    token = csrf_of(site.get(f"/runs/{web.drafted}").text)
    path = web.workspace.run_dir(web.drafted) / "notes.md"
    for data in ({"rating": "", "notes": "  "}, {"rating": "9"}, {"rating": "four"}):
        answer = site.post(f"/runs/{web.drafted}/evaluate", data={**data, "csrf": token})
        assert answer.status_code == 400, data
        assert not path.exists()


def test_notes_are_escaped_not_rendered_as_html(web: WebWorkspace) -> None:
    site = client(web.workspace)
    token = csrf_of(site.get(f"/runs/{web.finished}").text)
    site.post(
        f"/runs/{web.finished}/evaluate",
        data={"notes": "<script>alert(1)</script> [x](javascript:alert(1))", "csrf": token},
    )
    page = site.get(f"/runs/{web.finished}").text
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert 'href="javascript:' not in page
    (web.workspace.run_dir(web.finished) / "notes.md").unlink()


def test_video_samples_show_as_video_and_unnamed_prompts_by_number(web: WebWorkspace) -> None:
    folder = web.workspace.run_dir(web.drafted) / "output" / "sample"
    folder.mkdir(parents=True)
    video = folder / f"{web.drafted}_000250_00_20261130090000_5.mp4"
    video.write_bytes(b"\x00\x00\x00\x18ftypmp42")
    try:
        site = client(web.workspace)
        page = site.get(f"/runs/{web.drafted}/samples").text
        assert f'<video src="/files/runs/{web.drafted}/output/sample/{video.name}"' in page
        assert ">step 250</th>" in page and "prompt 0" in page and "seed 5" in page
        served = site.get(f"/files/runs/{web.drafted}/output/sample/{video.name}")
        assert served.headers["content-type"] == "video/mp4"
    finally:
        video.unlink()
        folder.rmdir()
        folder.parent.rmdir()


def test_the_run_page_names_the_loss_as_its_trainer_does(web: WebWorkspace, tmp_path) -> None:
    """Musubi's page says its average loss and TensorBoard series; an AI-Toolkit run's page
    names loss_log.db and its last raw loss, never TensorBoard."""
    from kura.runs.following import run_status
    from kura.runs.new import create_run
    from tests.builders import character_workspace

    musubi = client(web.workspace).get(f"/runs/{web.finished}").text
    assert "Average loss (Musubi&#39;s avr_loss" in musubi
    assert "TensorBoard loss/current" in musubi
    ws = character_workspace(tmp_path)
    run_id = create_run(ws, datasets=["myaku"], base="aitk-zimage-base").run_id
    page = client(ws).get(f"/runs/{run_id}").text
    assert "Last loss (AI-Toolkit&#39;s progress line" in page
    assert "loss_log.db loss/loss" in page and "loss_log.db learning_rate" in page
    assert "TensorBoard" not in page and "Average loss" not in page
    assert run_status(ws, run_id).to_dict()["labels"] == {
        "loss": "Last loss (AI-Toolkit's progress line: the step's raw loss)",
        "raw": "loss_log.db loss/loss (each step's raw loss)",
        "learning_rate": "loss_log.db learning_rate",
    }


def test_a_notes_md_that_is_not_utf8_is_a_clean_error_naming_it(web: WebWorkspace) -> None:
    """A person edits notes.md: Latin-1 bytes answer 422 naming the file and the fix, not a
    500; fixed, the page renders again."""
    notes = web.workspace.run_dir(web.drafted) / "notes.md"
    notes.write_bytes("# Notes\n\nr\xe9sultat tr\xe8s bon\n".encode("latin-1"))
    try:
        answer = client(web.workspace).get(f"/runs/{web.drafted}")
        assert answer.status_code == 422
        assert "notes.md is not UTF-8 text" in answer.text and "save it as UTF-8" in answer.text
    finally:
        notes.unlink()
    assert client(web.workspace).get(f"/runs/{web.drafted}").status_code == 200


def test_a_damaged_run_is_marked_and_the_others_still_listed(web: WebWorkspace) -> None:
    """A bad state.json in one run: the run list answers 200 with every other run, and
    names the damaged run's file and error; a healthy run's page still renders."""
    damaged = web.workspace.runs_dir / "20261130-0001"
    shutil.copytree(web.workspace.run_dir(web.drafted), damaged)
    run_yaml = damaged / "run.yaml"
    run_yaml.write_text(run_yaml.read_text().replace(web.drafted, damaged.name))
    (damaged / "state.json").write_text('{"status": ')
    try:
        page = client(web.workspace).get("/")
        assert page.status_code == 200
        assert f'href="/runs/{web.finished}"' in page.text
        assert f'href="/runs/{web.drafted}"' in page.text
        assert "Damaged runs" in page.text and "runs/20261130-0001/state.json" in page.text
        assert client(web.workspace).get(f"/runs/{web.finished}").status_code == 200
    finally:
        shutil.rmtree(damaged)


def test_a_rating_on_a_read_only_workspace_says_why_and_writes_nothing(
    web: WebWorkspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = client(web.workspace)
    token = csrf_of(site.get(f"/runs/{web.finished}").text)
    notes = web.workspace.run_dir(web.finished) / "notes.md"
    before = notes.read_text() if notes.exists() else None
    with refused_writes(web.workspace.root, monkeypatch, errno.EROFS):
        answer = site.post(f"/runs/{web.finished}/evaluate", data={"rating": "4", "csrf": token})
    assert answer.status_code == 507
    assert "notes.md" in answer.text
    assert (notes.read_text() if notes.exists() else None) == before
