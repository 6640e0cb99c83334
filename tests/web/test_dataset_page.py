"""The dataset pages: files with captions, problems and controls, buckets, pages, links."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from kura.runs.new import create_run
from kura.web.datasets import PAGE_SIZE
from kura.workspace import Workspace
from tests.builders import character_workspace
from tests.runs.fake_checkout import use_fake_checkout
from tests.web.dataset_builder import EDIT_CAPTION, add_edit_dataset
from tests.web.helpers import client
from tests.web.workspace_builder import BUNDLE

EXTRA = PAGE_SIZE + 3  # fox, uncaptioned and the extras fill two pages and a bit


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    root = tmp_path_factory.mktemp("datasets")
    workspace = character_workspace(root)
    add_edit_dataset(workspace, root / "edits", extra=EXTRA)
    add_edit_dataset(workspace, root / "linked", name="linked", link=True)
    with pytest.MonkeyPatch.context() as monkeypatch:
        use_fake_checkout(workspace, root, BUNDLE, monkeypatch)
        yield workspace


def _drafted_run(workspace: Workspace, minute: int) -> str:
    return create_run(
        workspace,
        datasets=["myaku"],
        base=BUNDLE,
        sets=["execution.executor=host"],
        now=datetime(2026, 12, 2, 9, minute),
    ).run_id


def _row(html: str, rel: str) -> str:
    match = re.search(rf'<tr data-file="{re.escape(rel)}">(.*?)</tr>', html, re.S)
    assert match, f"no row for {rel}"
    return match.group(1)


def test_a_file_shows_its_caption_and_its_control_beside_it(workspace: Workspace) -> None:
    html = client(workspace).get("/datasets/edits").text
    row = _row(html, "fox.png")
    assert EDIT_CAPTION in row
    target = row.index('src="/files/datasets/edits/media/fox.png"')
    control = row.index('src="/files/datasets/edits/control/fox.png"')
    assert target < control


def test_the_inspections_problem_stands_next_to_its_file(workspace: Workspace) -> None:
    html = client(workspace).get("/datasets/edits").text
    row = _row(html, "uncaptioned.png")
    assert 'data-code="missing-caption"' in row
    assert "control/uncaptioned_0.png" in row  # paired the way Musubi pairs: <stem>_0
    assert 'data-code="missing-caption"' not in _row(html, "fox.png")
    other = html[html.index("Problems with files not listed above") :]
    assert "orphan.txt" in other and 'data-code="orphan-caption"' in other


def test_thumbnails_are_served_through_the_media_route(workspace: Workspace) -> None:
    web = client(workspace)
    html = web.get("/datasets/edits").text
    sources = re.findall(r'<img src="([^"]+)"', html)
    assert len(sources) == 2 * PAGE_SIZE
    for source in sources[:4]:
        answer = web.get(source)
        assert answer.status_code == 200, source
        assert answer.headers["content-type"] == "image/png"


def test_the_buckets_of_the_inspection_are_listed(workspace: Workspace) -> None:
    html = client(workspace).get("/datasets/edits").text
    table = html[html.index('data-table="buckets"') :]
    assert re.search(r"<td>\d+×\d+</td>", table)


def test_a_large_dataset_is_split_into_pages(workspace: Workspace) -> None:
    web = client(workspace)
    first = web.get("/datasets/edits").text
    assert first.count("<tr data-file=") == PAGE_SIZE
    assert f"{EXTRA + 2} files, page 1 of 2" in first
    second = web.get("/datasets/edits?page=2").text
    assert second.count("<tr data-file=") == EXTRA + 2 - PAGE_SIZE
    assert f'data-file="x_{EXTRA - 1:03d}.png"' in second  # sorted by name: the last ones
    assert web.get("/datasets/edits?page=3").status_code == 404


def test_only_files_with_problems_can_be_listed(workspace: Workspace) -> None:
    html = client(workspace).get("/datasets/edits?problems=1").text
    assert re.findall(r'<tr data-file="([^"]+)"', html) == ["uncaptioned.png"]


def test_a_linked_dataset_lists_its_files_without_serving_them(workspace: Workspace) -> None:
    html = client(workspace).get("/datasets/linked").text
    assert "files live outside the workspace" in html
    assert EDIT_CAPTION in _row(html, "fox.png")
    assert "<img" not in html


def test_the_index_lists_every_dataset_with_a_link(workspace: Workspace) -> None:
    html = client(workspace).get("/datasets").text
    for name in ("edits", "linked", "myaku"):
        assert f'<a href="/datasets/{name}">{name}</a>' in html
    assert '<a href="/datasets">Datasets</a>' in html  # in every page's navigation


def test_a_run_page_links_to_its_datasets_bucketed_by_its_trainer(workspace: Workspace) -> None:
    run_id = _drafted_run(workspace, 0)
    web = client(workspace)
    link = f'href="/datasets/myaku?run={run_id}"'
    assert link in web.get(f"/runs/{run_id}").text
    html = web.get(f"/datasets/myaku?run={run_id}").text
    assert 'data-table="trainer-buckets"' in html
    assert "batches per epoch" in html


def test_a_run_whose_trainer_is_missing_still_shows_the_dataset_with_the_reason(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    run_id = _drafted_run(workspace, 1)
    monkeypatch.setenv("KURA_MUSUBI_ENV", str(tmp_path / "no-env"))
    answer = client(workspace).get(f"/datasets/myaku?run={run_id}")
    assert answer.status_code == 200
    assert 'data-field="trainer-buckets-error"' in answer.text
    assert 'data-table="buckets"' in answer.text  # the inspection's own buckets instead
    assert "<tr data-file=" in answer.text


def test_an_unknown_dataset_is_not_found(workspace: Workspace) -> None:
    answer = client(workspace).get("/datasets/nothing")
    assert answer.status_code == 404
    assert "known datasets" in answer.text
