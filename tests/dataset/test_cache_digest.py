"""Digest stability and the stat cache."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kura.dataset import facts as facts_module
from kura.dataset import inspect_dataset
from kura.dataset.statcache import StatCache
from kura.errors import FileSystemError, InvalidInput


def make(build) -> None:
    for i in range(4):
        build.image(f"i{i}.png", (64, 64), seed=i, caption=f"caption {i}")


def test_digest_stable_and_content_sensitive(build) -> None:
    make(build)
    first = inspect_dataset(build.root).digest
    assert first.startswith("sha256:")
    assert inspect_dataset(build.root).digest == first
    (build.root / "i2.txt").write_text("caption changed")
    changed = inspect_dataset(build.root).digest
    assert changed != first
    (build.root / "i2.txt").write_text("caption 2")
    assert inspect_dataset(build.root).digest == first


def test_digest_does_not_depend_on_location(build, tmp_path: Path) -> None:
    make(build)
    moved = tmp_path / "moved"
    os.rename(build.root, moved)
    before = inspect_dataset(moved).digest
    os.rename(moved, build.root)
    assert inspect_dataset(build.root).digest == before


def test_cache_hit_reads_no_file_and_touched_file_is_reread(
    build, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make(build)
    real_reader = facts_module.read_image_facts
    reads: list[str] = []

    def spy(path: Path) -> dict:
        reads.append(Path(path).name)
        return real_reader(path)

    monkeypatch.setattr(facts_module, "read_image_facts", spy)
    with StatCache.open(tmp_path / "stats.sqlite3") as cache:
        cold = inspect_dataset(build.root, cache=cache)
        assert sorted(reads) == ["i0.png", "i1.png", "i2.png", "i3.png"]
        reads.clear()
        warm = inspect_dataset(build.root, cache=cache)
        assert reads == []
        assert warm.to_dict() == cold.to_dict()
        target = build.root / "i1.png"
        info = target.stat()
        os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000_000))
        inspect_dataset(build.root, cache=cache)
        assert reads == ["i1.png"]


def test_cache_default_location_and_progress(build, tmp_path: Path) -> None:
    make(build)
    calls: list[tuple[int, int]] = []
    with StatCache.open() as cache:
        assert cache.path.parent == Path(os.environ["KURA_CACHE_DIR"])
        inspect_dataset(build.root, cache=cache, progress=lambda d, t: calls.append((d, t)))
    # one bar over both passes: the 8 files read, then the pictures compared
    total = calls[-1][1]
    assert total > 8 and {bar for _, bar in calls} == {total}
    assert calls[0][0] == 0 and calls[-1][0] == total
    assert 8 in [done for done, _ in calls]


def test_png_pixels_decoded_only_for_resize_candidates(
    build, monkeypatch: pytest.MonkeyPatch
) -> None:
    build.image("wide.png", (120, 40), seed=1)
    build.image("tall.png", (40, 120), seed=2)
    build.image("pair_a.png", (90, 60), seed=3)
    build.image("pair_b.png", (45, 30), seed=4)
    real_reader = facts_module.read_pixel_facts
    decoded: list[str] = []

    def spy(path: Path) -> dict:
        decoded.append(Path(path).name)
        return real_reader(path)

    monkeypatch.setattr(facts_module, "read_pixel_facts", spy)
    result = inspect_dataset(build.root)
    assert sorted(decoded) == ["pair_a.png", "pair_b.png"]
    assert result.to_dict()["near_duplicates"] == []


def test_stat_cache_row_is_stale_after_change(tmp_path: Path) -> None:
    from kura.dataset.statcache import FileKey

    target = tmp_path / "f.txt"
    target.write_text("one")
    with StatCache.open(tmp_path / "c.sqlite3") as cache:
        key = FileKey.of(target)
        cache.put_many({key: {"kind": "caption", "text": "one"}})
        assert cache.get_many([key]) == {key: {"kind": "caption", "text": "one"}}
        target.write_text("two!")
        assert cache.get_many([FileKey.of(target)]) == {}


def test_a_cache_opened_while_another_connection_writes_waits_instead_of_failing(
    tmp_path: Path,
) -> None:
    """SQLite refuses a switch to WAL at once (no busy timeout) while another connection of a
    rollback-journal file holds a write lock: two first inspections at the same moment hit
    exactly this, and one failed with "database is locked" (CI, two parallel dataset adds)."""
    import sqlite3
    import threading

    path = tmp_path / "facts.sqlite3"
    writer = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    writer.execute("CREATE TABLE other (a)")
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO other VALUES (1)")
    release = threading.Timer(0.3, lambda: writer.execute("COMMIT"))
    release.start()
    try:
        with StatCache.open(path) as cache:
            assert cache.get_many([]) == {}
    finally:
        release.join()
        writer.close()
    with sqlite3.connect(path) as check:
        assert check.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_a_cache_on_a_read_only_or_full_disk_is_not_called_damaged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite refusing to write (read-only, full) is the disk's fault: the error says so and
    never tells the person to delete a cache that is intact."""
    import sqlite3

    from kura.dataset import statcache

    def readonly(*args: object, **kwargs: object) -> sqlite3.Connection:
        raise sqlite3.OperationalError("attempt to write a readonly database")

    monkeypatch.setattr(statcache.sqlite3, "connect", readonly)
    with pytest.raises(FileSystemError, match="readonly database") as info:
        StatCache.open(tmp_path / "facts.sqlite3")
    assert "not damaged" in info.value.hint and "delete" not in info.value.hint


def test_a_damaged_cache_file_is_named_with_the_delete_fix(tmp_path: Path) -> None:
    path = tmp_path / "facts.sqlite3"
    path.write_bytes(b"this is not a database file at all, only text" * 100)
    with pytest.raises(InvalidInput, match="is damaged") as info:
        StatCache.open(path)
    assert info.value.hint.startswith("delete that file")


@pytest.mark.parametrize(
    "text", ['{"kind":"caption","text":"é"}', ' {"a": [1, 2]} ', '{"a":1}\n', "[1]", "null"]
)
def test_a_cached_row_parses_as_json_loads_parses_it(text: str) -> None:
    import json

    from kura.dataset.statcache import _parse

    assert _parse(text) == json.loads(text)


@pytest.mark.parametrize("text", ['{"a":1}{"b":2}', '{"a":', "", "{} x"])
def test_a_damaged_cached_row_fails_as_json_loads_fails(text: str) -> None:
    import json

    from kura.dataset.statcache import _parse

    with pytest.raises(json.JSONDecodeError):
        _parse(text)


def test_rows_of_another_facts_schema_are_never_returned(tmp_path: Path) -> None:
    from kura.dataset import statcache
    from kura.dataset.statcache import FileKey

    target = tmp_path / "f.txt"
    target.write_text("one")
    with StatCache.open(tmp_path / "c.sqlite3") as cache:
        key = FileKey.of(target)
        cache.put_many({key: {"kind": "caption", "text": "one"}})
        with cache._db:
            cache._db.execute(f"UPDATE {statcache.TABLE} SET schema = schema - 1")
        assert cache.get_many([key]) == {}
