"""The dataset registry: dataset.yaml written, intent kept, facts refreshed, nothing lost."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from kura.dataset.registry import add_dataset, load_dataset, set_dataset_values, validate_dataset
from kura.errors import InvalidInput, NotFound, SpecError, UsageError
from kura.initialize import init_workspace
from kura.workspace import Workspace


def _image(
    path: Path, size: tuple[int, int] = (640, 640), color: tuple[int, int, int] = (200, 30, 30)
) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, color).save(path)


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    workspace, _ = init_workspace(tmp_path / "ws")
    return workspace


@pytest.fixture
def source(tmp_path: Path) -> Path:
    folder = tmp_path / "incoming"
    for index in range(4):
        _image(folder / f"img {index}.png", color=(40 * index, 90, 200 - 30 * index))
        (folder / f"img {index}.txt").write_text(f"myaku, picture number {index}\n")
    return folder


def test_add_copies_inspects_and_writes_the_spec(ws: Workspace, source: Path) -> None:
    added = add_dataset(ws, "myaku", source)
    assert added.copied_files == 8
    assert (ws.dataset_dir("myaku") / "media" / "img 0.png").is_file()
    spec, _ = load_dataset(ws, "myaku")
    assert spec.media == "media" and not spec.linked
    assert spec.facts is not None
    assert spec.facts.counts["images"] == 4
    assert spec.facts.digest.startswith("sha256:")
    assert (ws.dataset_dir("myaku") / "inspection.json").is_file()


def test_link_records_a_pointer_and_copies_nothing(ws: Workspace, source: Path) -> None:
    added = add_dataset(ws, "linked", source, link=True)
    assert added.copied_files == 0
    spec, _ = load_dataset(ws, "linked")
    assert spec.linked and Path(spec.media) == source.resolve()
    assert not (ws.dataset_dir("linked") / "media").exists()


def test_add_refuses_an_existing_name_and_keeps_it(ws: Workspace, source: Path) -> None:
    add_dataset(ws, "myaku", source)
    before = (ws.dataset_dir("myaku") / "dataset.yaml").read_text()
    with pytest.raises(UsageError, match="already exists"):
        add_dataset(ws, "myaku", source)
    assert (ws.dataset_dir("myaku") / "dataset.yaml").read_text() == before


@pytest.mark.parametrize("name", ["../escape", "-rf", "a b"])
def test_add_refuses_hostile_names(ws: Workspace, source: Path, name: str) -> None:
    with pytest.raises(UsageError):
        add_dataset(ws, name, source)
    assert sorted(p.name for p in ws.datasets_dir.iterdir()) == []


def test_missing_source_is_not_found(ws: Workspace, tmp_path: Path) -> None:
    with pytest.raises(NotFound, match="does not exist"):
        add_dataset(ws, "x", tmp_path / "nowhere")


def test_symlink_loop_in_source_does_not_recurse(ws: Workspace, source: Path) -> None:
    (source / "loop").symlink_to(source, target_is_directory=True)
    added = add_dataset(ws, "looped", source)
    assert added.copied_files == 8


def test_set_records_intent_and_keeps_comments(ws: Workspace, source: Path) -> None:
    add_dataset(ws, "myaku", source)
    path = ws.dataset_dir("myaku") / "dataset.yaml"
    path.write_text(path.read_text().replace("caption_ext: .txt", "caption_ext: .txt  # my note"))
    set_dataset_values(ws, "myaku", ["intent.task=style", "intent.trigger=myaku"])
    spec, _ = load_dataset(ws, "myaku")
    assert spec.intent.task == "style" and spec.intent.trigger == "myaku"
    assert "# my note" in path.read_text()


def test_set_refuses_bad_values_and_writes_nothing(ws: Workspace, source: Path) -> None:
    add_dataset(ws, "myaku", source)
    path = ws.dataset_dir("myaku") / "dataset.yaml"
    before = path.read_text()
    with pytest.raises(SpecError, match=r"`intent\.task`"):
        set_dataset_values(ws, "myaku", ["intent.task=portrait"])
    with pytest.raises(UsageError, match="cannot be set"):
        set_dataset_values(ws, "myaku", ["facts.digest=sha256:0"])
    assert path.read_text() == before


def test_a_bad_value_given_on_the_command_line_is_named_not_the_file(
    ws: Workspace, source: Path
) -> None:
    add_dataset(ws, "myaku", source)
    path = ws.dataset_dir("myaku") / "dataset.yaml"
    before = path.read_text()
    with pytest.raises(SpecError) as raised:
        set_dataset_values(ws, "myaku", ["intent.trigger=myaku", "intent.task=portrait"])
    error = raised.value
    assert error.message.startswith("`intent.task=portrait` (given on the command line)")
    assert "intent.trigger=myaku" not in error.message
    assert "dataset.yaml" not in error.message and "dataset.yaml" not in (error.hint or "")
    assert "nothing was saved" in (error.hint or "")
    assert path.read_text() == before


def test_a_bad_value_already_in_the_file_still_names_the_file(ws: Workspace, source: Path) -> None:
    add_dataset(ws, "myaku", source)
    path = ws.dataset_dir("myaku") / "dataset.yaml"
    path.write_text(path.read_text().replace("caption_ext: .txt", "caption_ext: txt"))
    with pytest.raises(SpecError, match=r"dataset\.yaml does not match .*`caption_ext`"):
        set_dataset_values(ws, "myaku", ["intent.task=style"])


def test_inspection_keeps_intent_and_drops_answered_questions(ws: Workspace, source: Path) -> None:
    from kura.dataset.registry import inspect_target

    add_dataset(ws, "myaku", source)
    set_dataset_values(ws, "myaku", ["intent.task=character"])
    inspected = inspect_target(lambda: ws, "myaku", resolution=None)
    assert inspected.intent is not None and inspected.intent.task == "character"
    assert inspected.questions is not None
    assert "intent.task" not in {q["key"] for q in inspected.questions}
    assert "intent.task" in {q["key"] for q in inspected.inspection.questions}


def test_validate_blocks_on_broken_media_and_passes_once_fixed(ws: Workspace, source: Path) -> None:
    (source / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 20)
    (source / "broken.txt").write_text("myaku, broken\n")
    add_dataset(ws, "myaku", source)
    checked = validate_dataset(ws, "myaku")
    assert not checked.ok
    assert [p["code"] for p in checked.blocking] == ["broken-media"]
    (ws.dataset_dir("myaku") / "media" / "broken.png").unlink()
    (ws.dataset_dir("myaku") / "media" / "broken.txt").unlink()
    assert validate_dataset(ws, "myaku").ok


def test_hand_edited_spec_with_unknown_key_is_named(ws: Workspace, source: Path) -> None:
    add_dataset(ws, "myaku", source)
    path = ws.dataset_dir("myaku") / "dataset.yaml"
    path.write_text(path.read_text() + "colour: red\n")
    with pytest.raises(SpecError, match="unknown key `colour`"):
        load_dataset(ws, "myaku")


def test_spec_naming_another_dataset_is_refused(ws: Workspace, source: Path) -> None:
    add_dataset(ws, "myaku", source)
    path = ws.dataset_dir("myaku") / "dataset.yaml"
    path.write_text(path.read_text().replace("name: myaku", "name: other"))
    with pytest.raises(InvalidInput, match="lives in the folder"):
        load_dataset(ws, "myaku")


def test_validate_writes_a_damaged_inspection_report_again(ws: Workspace, source: Path) -> None:
    """inspection.json is Kura's own file: bytes that are not its report (not even UTF-8)
    are replaced by the report of the files as they are, not an error."""
    add_dataset(ws, "chars", source)
    report = ws.dataset_dir("chars") / "inspection.json"
    good = report.read_bytes()
    report.write_bytes(b"\xff\xfe not a report")
    assert validate_dataset(ws, "chars").ok
    assert report.read_bytes() == good
    before = report.stat().st_ino
    validate_dataset(ws, "chars")  # unchanged now: not written again
    assert report.stat().st_ino == before
