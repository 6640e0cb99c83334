from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from kura import workspace as workspace_module
from kura.errors import InvalidInput, UsageError, WorkspaceNotFound
from kura.initialize import init_workspace
from kura.workspace import check_name, find_workspace, id_stamp, new_run_id
from tests.conftest import PINNED_NOW


def test_init_creates_layout_and_config(tmp_path: Path) -> None:
    workspace, created = init_workspace(tmp_path / "ws")
    layout = ["datasets/", "models/", "runs/", "knowledge/", "kura.toml"]
    assert created[:5] == layout
    assert "knowledge/musubi-tuner/flux2.md" in created[5:]
    assert "knowledge/ai-toolkit/flux2.md" in created[5:]
    assert all((workspace.root / item).exists() for item in created)
    assert (workspace.root / "kura.toml").read_text().startswith("# Kura workspace settings")
    assert workspace.config().executor.default == "docker"


def test_init_twice_changes_nothing(tmp_path: Path) -> None:
    init_workspace(tmp_path)
    (tmp_path / "kura.toml").write_text('version = 1\n[executor]\ndefault = "host"\n')
    _, created = init_workspace(tmp_path)
    assert created == []
    assert "host" in (tmp_path / "kura.toml").read_text()


def test_found_by_walking_up(tmp_path: Path) -> None:
    init_workspace(tmp_path)
    deep = tmp_path / "datasets" / "a" / "b"
    deep.mkdir(parents=True)
    assert find_workspace(deep).root == tmp_path.resolve()


def test_missing_workspace_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceNotFound) as info:
        find_workspace(tmp_path)
    assert "kura init" in info.value.hint


def test_explicit_folder_without_config_is_refused(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceNotFound):
        find_workspace(explicit=tmp_path)


def test_unknown_config_key_names_the_key(tmp_path: Path) -> None:
    workspace, _ = init_workspace(tmp_path)
    workspace.config_path.write_text("version = 1\ncolour = 'red'\n")
    with pytest.raises(InvalidInput, match="colour"):
        workspace.config()


def test_broken_toml_is_a_clear_error(tmp_path: Path) -> None:
    workspace, _ = init_workspace(tmp_path)
    workspace.config_path.write_text("version = = 1\n")
    with pytest.raises(InvalidInput, match=r"kura\.toml"):
        workspace.config()


@pytest.mark.parametrize("name", ["../x", "a/b", "-rf", "", ".hidden", "a b", "x\ny", "é"])
def test_hostile_names_are_refused(name: str) -> None:
    with pytest.raises(UsageError):
        check_name(name, "dataset")


def test_run_ids_sort_by_time_and_never_collide(tmp_path: Path) -> None:
    now = datetime(2026, 11, 30, 10, 42)
    first = new_run_id(tmp_path, now)
    assert first == "20261130-1042"
    (tmp_path / first).mkdir()
    second = new_run_id(tmp_path, now)
    assert second == "20261130-1042-2"
    assert new_run_id(tmp_path, datetime(2026, 11, 30, 10, 43)) > second


def test_ids_read_one_clock_that_the_suite_pins(tmp_path: Path) -> None:
    """No test depends on the wall clock: every id without an explicit ``now`` reads
    ``local_now``, which tests/conftest.py pins, so two walks never straddle a minute."""
    assert workspace_module.local_now() == PINNED_NOW
    assert new_run_id(tmp_path) == PINNED_NOW.strftime("%Y%m%d-%H%M") == id_stamp()
    later = PINNED_NOW.replace(minute=1)
    assert new_run_id(tmp_path, later) == "20261201-1201"


def test_kura_toml_is_read_again_only_when_it_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace, _ = init_workspace(tmp_path / "ws")
    reads: list[Path] = []
    load_toml = workspace_module.load_toml

    def counting(path: Path) -> dict[str, object]:
        reads.append(path)
        return load_toml(path)

    monkeypatch.setattr(workspace_module, "load_toml", counting)
    workspace.config()
    workspace.config()
    assert len(reads) <= 1
    workspace.config_path.write_text('version = 1\n[executor]\ndefault = "docker"\n')
    assert workspace.config().executor.default == "docker"
    assert len(reads) <= 2 and reads[-1] == workspace.config_path
