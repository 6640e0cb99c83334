"""`dataset add` from a hostile folder refuses before writing anything; a crash at any write
leaves a usable workspace; two adds of one name cannot both win."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from PIL import Image

from kura.dataset.registry import add_dataset, list_datasets, set_dataset_values
from kura.errors import InvalidInput, KuraError, UsageError
from kura.initialize import init_workspace
from kura.workspace import Workspace


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    workspace, _ = init_workspace(tmp_path / "ws")
    return workspace


@pytest.fixture
def source(tmp_path: Path) -> Path:
    folder = tmp_path / "incoming"
    folder.mkdir()
    for index in range(2):
        Image.new("RGB", (64, 64), (60 * index, 90, 20)).save(folder / f"img{index}.png")
        (folder / f"img{index}.txt").write_text(f"myaku, picture {index}\n")
    return folder


def _untouched(ws: Workspace) -> None:
    assert list(ws.datasets_dir.iterdir()) == []
    staging = ws.state_dir / "staging"
    assert not staging.exists() or list(staging.iterdir()) == []


@pytest.mark.parametrize("target", ["/proc/self/environ", "/etc/passwd"])
@pytest.mark.parametrize("link", [False, True])
def test_a_link_out_of_the_folder_is_refused_before_anything_is_written(
    ws: Workspace, source: Path, target: str, link: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_secret_token_value")
    (source / "img0.txt").unlink()
    (source / "img0.txt").symlink_to(target)
    with pytest.raises(InvalidInput, match=r"symlinks that point outside it: img0\.txt") as info:
        add_dataset(ws, "leak", source, link=link)
    assert "--follow-links" in info.value.hint
    _untouched(ws)


def test_with_follow_links_the_link_is_copied_and_reported(
    ws: Workspace, source: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("myaku, from elsewhere\n")
    (source / "img0.txt").unlink()
    (source / "img0.txt").symlink_to(outside)
    (source / "inside.txt").symlink_to(source / "img1.txt")  # inside: no report needed
    added = add_dataset(ws, "followed", source, follow_links=True)
    assert added.followed_links == ["img0.txt"]
    assert added.to_dict()["followed_links"] == ["img0.txt"]
    copied = ws.dataset_dir("followed") / "media" / "img0.txt"
    assert not copied.is_symlink() and copied.read_text() == "myaku, from elsewhere\n"


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom", "fifo"])
def test_devices_and_pipes_are_refused_before_anything_is_written(
    ws: Workspace, source: Path, device: str
) -> None:
    name = source / "clip.mp4"
    if device == "fifo":
        os.mkfifo(name)
    else:
        (source / "img0.png").unlink()
        name = source / "img0.png"
        name.symlink_to(device)
    with pytest.raises(InvalidInput, match="not regular files"):
        add_dataset(ws, "special", source, follow_links=True)
    _untouched(ws)


def test_a_name_that_is_not_utf8_is_refused_before_anything_is_written(
    ws: Workspace, source: Path
) -> None:
    bad = os.fsdecode(b"caf\xe9.png")
    Image.new("RGB", (64, 64)).save(source / bad, format="PNG")
    with pytest.raises(InvalidInput, match=r"not UTF-8: caf\\xe9\.png") as info:
        add_dataset(ws, "latin", source)
    assert "convmv" in info.value.hint
    _untouched(ws)
    with pytest.raises(InvalidInput, match="not UTF-8"):
        add_dataset(ws, "latin", source, link=True)
    _untouched(ws)


def test_inspecting_a_folder_with_a_non_utf8_name_is_a_clean_error(source: Path) -> None:
    from kura.dataset.inspect import inspect_dataset

    (source / os.fsdecode(b"x\xff.txt")).write_text("caption")
    with pytest.raises(InvalidInput, match=r"x\\xff\.txt"):
        inspect_dataset(source)


@pytest.mark.parametrize(
    "assignment",
    ['intent.trigger="\\ud800"', "intent.trigger=\udcff", "intent.\udcff=x"],
    ids=["escaped surrogate", "raw surrogate", "surrogate in the key"],
)
def test_set_refuses_text_that_is_not_unicode_and_saves_nothing(
    ws: Workspace, source: Path, assignment: str
) -> None:
    add_dataset(ws, "myaku", source)
    before = (ws.dataset_dir("myaku") / "dataset.yaml").read_bytes()
    with pytest.raises(KuraError, match="not valid Unicode"):
        set_dataset_values(ws, "myaku", [assignment])
    assert (ws.dataset_dir("myaku") / "dataset.yaml").read_bytes() == before
    assert list_datasets(ws).datasets[0].name == "myaku"


def test_a_saved_surrogate_is_a_clean_error_naming_the_file(ws: Workspace, source: Path) -> None:
    add_dataset(ws, "myaku", source)
    path = ws.dataset_dir("myaku") / "dataset.yaml"
    path.write_text(path.read_text() + 'extra: "\\ud800"\n')
    with pytest.raises(InvalidInput, match=r"dataset\.yaml holds a string that is not valid"):
        list_datasets(ws)


def test_staging_is_invisible_and_the_result_appears_whole(
    ws: Workspace, source: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kura.dataset import registry

    seen: list[tuple[object, ...]] = []
    real_rename = os.rename

    def rename(old: str | Path, new: str | Path) -> None:
        seen.append(list_datasets(ws).datasets)
        staged = sorted(p.name for p in Path(old).iterdir())
        assert staged == ["dataset.yaml", "inspection.json", "media"]
        real_rename(old, new)

    monkeypatch.setattr(registry.os, "rename", rename)
    added = add_dataset(ws, "myaku", source)
    assert seen == [()]
    assert added.inspection["root"] == str(ws.dataset_dir("myaku") / "media")
    assert (ws.dataset_dir("myaku") / "inspection.json").is_file()


def test_the_stat_cache_follows_the_rename(ws: Workspace, source: Path) -> None:
    from kura.dataset.registry import validate_dataset
    from kura.dataset.statcache import StatCache

    add_dataset(ws, "myaku", source)
    media = ws.dataset_dir("myaku") / "media"
    with StatCache.open() as cache:
        from kura.dataset.statcache import FileKey

        keys = [FileKey.of(p) for p in sorted(media.iterdir())]
        assert len(cache.get_many(keys)) == len(keys) == 4
    assert validate_dataset(ws, "myaku").ok


def test_two_adds_of_one_name_at_once_give_one_dataset_and_one_usage_error(
    ws: Workspace, source: Path
) -> None:
    outcomes: list[object] = []
    barrier = threading.Barrier(2)

    def add() -> None:
        barrier.wait()
        try:
            outcomes.append(add_dataset(ws, "twin", source))
        except Exception as error:  # anything but KuraError fails the assertion below
            outcomes.append(error)

    threads = [threading.Thread(target=add) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    errors = [o for o in outcomes if isinstance(o, Exception)]
    assert len(outcomes) == 2 and len(errors) == 1, outcomes
    assert isinstance(errors[0], UsageError) and "already exists" in errors[0].message
    assert [d.name for d in list_datasets(ws).datasets] == ["twin"]
    assert list((ws.state_dir / "staging").iterdir()) == []


CRASH_AT = """
import os, shutil, sys
from pathlib import Path
import kura.fsutil
from kura.dataset.registry import add_dataset
from kura.workspace import Workspace

limit, calls = int(sys.argv[1]), [0]

def dying(real):
    def wrapper(*args, **kwargs):
        calls[0] += 1
        if calls[0] == limit:
            os._exit(9)
        return real(*args, **kwargs)
    return wrapper

os.rename = dying(os.rename)
os.replace = dying(os.replace)
shutil.copy2 = dying(shutil.copy2)
add_dataset(Workspace(Path(sys.argv[2])), "myaku", Path(sys.argv[3]))
"""


def test_a_kill_at_any_write_leaves_a_usable_workspace(tmp_path: Path, source: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    for point in range(1, 30):
        workspace, _ = init_workspace(tmp_path / f"ws{point}")
        done = subprocess.run(
            [sys.executable, "-c", CRASH_AT, str(point), str(workspace.root), str(source)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        listed = [d.name for d in list_datasets(workspace).datasets]
        if done.returncode == 0:
            assert listed == ["myaku"]
            assert point > 5, "every write point should have been reached"
            return
        assert done.returncode == 9, done.stderr
        assert listed == [], f"killed at write {point}: a dataset appeared incomplete"
        added = add_dataset(workspace, "myaku", source)  # re-running the add works
        assert added.copied_files == 4
        assert (workspace.dataset_dir("myaku") / "inspection.json").is_file()
        assert list((workspace.state_dir / "staging").iterdir()) == []
    pytest.fail("the add never completed")


def test_an_older_kuras_leftover_staging_folder_does_not_break_listing(
    ws: Workspace, source: Path
) -> None:
    leftover = ws.datasets_dir / ".myaku.k2j4x"
    leftover.mkdir()
    (leftover / "dataset.yaml").write_text("name: myaku\nmedia: media\n")
    assert list_datasets(ws).datasets == ()
    add_dataset(ws, "myaku", source)
    assert [d.name for d in list_datasets(ws).datasets] == ["myaku"]
