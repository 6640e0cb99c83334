"""A finished inspection is kept while nothing it was made from changed: the folders'
listings, each file's stat, the settings and the inspection's code (issue 27: a warm plan
at 5,000 images spent most of its time making the same report again)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from dataset_builders import Builder, picture

from kura.dataset import inspect as inspect_module
from kura.dataset import inspect_dataset, reportcache
from kura.dataset.inspection import Inspection
from kura.dataset.reportcache import Slot, Stamp, decode, encode, stamp
from kura.dataset.scan import Scan, scan_dataset
from kura.dataset.statcache import FileKey, StatCache
from kura.errors import FileSystemError


@pytest.fixture
def cache(tmp_path: Path) -> StatCache:
    with StatCache.open(tmp_path / "facts.sqlite3") as opened:
        yield opened


def a_folder_with_every_kind_of_finding(build: Builder, controls: Builder) -> None:
    """Duplicates, a near-duplicate, a broken file, a missing and an orphan caption, an
    unsupported and a nested file, a clip, and paired controls with a stray."""
    base = picture(96, 64, seed=1)
    build.image("one.png", image=base, caption="myaku, one")
    build.image("copy.png", image=base, caption="myaku, copy")
    build.image("smaller.jpg", image=base.resize((72, 48)), caption="myaku, smaller")
    build.image("two.png", (64, 64), seed=2, caption="two without the trigger")
    build.image("uncaptioned.png", (80, 48), seed=3, caption=None)
    build.raw("broken.png", b"\x89PNG\r\n\x1a\n not really")
    build.caption("orphan", "a caption with no picture")
    build.raw("odd.Png", b"mixed case", caption=None)
    (build.root / "nested").mkdir()
    Builder(build.root / "nested").image("deep.png", (32, 32), seed=4)
    build.video("clip.mp4", frames=9)
    controls.image("one.png", (96, 64), seed=11, caption=None)
    controls.image("two.png", (64, 64), seed=12, caption=None)
    controls.image("stray.png", (64, 64), seed=13, caption=None)


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    build, controls = Builder(tmp_path / "data"), Builder(tmp_path / "control")
    a_folder_with_every_kind_of_finding(build, controls)
    return build.root, controls.root


def inspect(folders: tuple[Path, Path], cache: StatCache | None, **options) -> Inspection:
    data, control = folders
    return inspect_dataset(data, control_dir=control, cache=cache, trigger="myaku", **options)


def no_inspecting(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make reading facts or deriving a report fail, so only a kept report can answer."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the report was made again")

    monkeypatch.setattr(inspect_module, "gather_facts", refuse)
    monkeypatch.setattr(inspect_module, "_build", refuse)


def counted_inspections(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that grows by one each time an inspection reads the facts (no kept report)."""
    made: list[int] = []
    gather = inspect_module.gather_facts

    def counting(jobs: object, **options: object) -> object:
        made.append(1)
        return gather(jobs, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(inspect_module, "gather_facts", counting)
    return made


def test_an_unchanged_folder_is_answered_with_the_kept_report(
    folders: tuple[Path, Path], cache: StatCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = inspect(folders, cache)
    problems = {problem.code for problem in made.problems}
    assert {"duplicate", "near-duplicate", "broken-media", "missing-caption"} <= problems
    assert {"orphan-caption", "unsupported-format", "nested-media", "orphan-control"} <= problems
    assert made.videos and made.pairs is not None and made.likenesses
    no_inspecting(monkeypatch)
    assert inspect(folders, cache) == made


def test_the_kept_report_is_the_one_an_inspection_without_a_cache_makes(
    folders: tuple[Path, Path], cache: StatCache
) -> None:
    inspect(folders, cache)
    kept = inspect(folders, cache)
    assert kept == inspect(folders, None)
    assert decode(encode(kept)) == kept


def test_a_caption_rewritten_with_its_size_and_time_kept_is_read_again(
    folders: tuple[Path, Path], cache: StatCache
) -> None:
    data, _ = folders
    before = inspect(folders, cache)
    caption = data / "two.txt"
    info = caption.stat()
    caption.write_text(("myaku, two" + " " * info.st_size)[: info.st_size])
    os.utime(caption, ns=(info.st_atime_ns, info.st_mtime_ns))  # only ctime tells
    after = inspect(folders, cache)
    assert after != before
    assert after == inspect(folders, None)
    assert "two.txt" not in {p.path for p in after.problems if p.code == "missing-trigger"}


def test_a_file_added_or_removed_is_seen(
    folders: tuple[Path, Path], cache: StatCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, _ = folders
    before = inspect(folders, cache)
    made = counted_inspections(monkeypatch)
    Builder(data).image("three.png", (64, 64), seed=5, caption="myaku, three")
    added = inspect(folders, cache)
    assert added.counts["images"] == before.counts["images"] + 1
    (data / "three.png").unlink()
    (data / "three.txt").unlink()
    assert inspect(folders, cache) == before
    (data / "orphan.txt").unlink()
    assert "orphan-caption" not in {p.code for p in inspect(folders, cache).problems}
    assert len(made) == 3  # one report is kept per folder and settings: the latest


@pytest.mark.parametrize(
    "options",
    [{"resolution": (512, 512)}, {"bucket_step": 64}, {"trigger": "other"}, {"control": None}],
)
def test_other_settings_get_their_own_report(
    folders: tuple[Path, Path], cache: StatCache, options: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, control = folders
    settings = {"control_dir": control, "trigger": "myaku", **options}
    if "control" in settings:
        settings["control_dir"] = settings.pop("control")
    made = counted_inspections(monkeypatch)
    inspect(folders, cache)
    first = inspect_dataset(data, cache=cache, **settings)
    assert first == inspect_dataset(data, cache=None, **settings)
    assert len(made) == 3
    assert first != inspect(folders, cache)
    assert inspect_dataset(data, cache=cache, **settings) == first
    assert len(made) == 3  # each answered from its own kept report


def test_a_report_is_not_reused_by_other_inspection_code(
    folders: tuple[Path, Path], cache: StatCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = counted_inspections(monkeypatch)
    inspect(folders, cache)
    inspect(folders, cache)
    assert len(made) == 1
    monkeypatch.setattr(reportcache, "code_digest", lambda: b"another version of the code")
    inspect(folders, cache)
    assert len(made) == 2


def test_the_code_digest_covers_the_inspection_sources() -> None:
    digest = reportcache.code_digest()
    assert digest is not None and len(digest) == 32
    assert reportcache.code_digest() == digest  # hashed once per process


def test_a_damaged_kept_report_is_made_again(
    folders: tuple[Path, Path], cache: StatCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = inspect(folders, cache)
    stamps: list[reportcache.Stamp] = []
    real = inspect_module.stamp
    monkeypatch.setattr(inspect_module, "stamp", lambda *a: stamps.append(real(*a)) or stamps[-1])
    inspect(folders, cache)
    kept = stamps[-1]
    assert kept.kept() == made
    made_again = counted_inspections(monkeypatch)
    for damaged in ("not json", '{"root": 1}', "[]", '{"resolution": [1, 2, 3]}'):
        cache.put_report(kept.slot, kept.inputs, damaged)
        assert kept.kept() is None
        assert inspect(folders, cache) == made
        assert kept.kept() == made  # and kept again
    assert len(made_again) == 4


def a_look_at_the_images(
    data: Path,
) -> tuple[Scan, list[tuple[str, str]], dict[str, FileKey], Slot]:
    """The listing, image jobs, stats and a slot that :func:`stamp` takes for ``data``."""
    scan = scan_dataset(data, ".txt")
    jobs = [(entry.path, "image") for entry in scan.images]
    keys = {path: FileKey.of(path) for path, _ in jobs}
    return scan, jobs, keys, Slot(str(data), None, ".txt", (8, 8), 16, True, False, None)


def a_stamp_for_the_images(data: Path, cache: StatCache) -> tuple[Stamp, list[tuple[str, str]]]:
    scan, jobs, keys, slot = a_look_at_the_images(data)
    fresh = stamp(cache, slot, [scan], jobs, keys)
    assert fresh is not None
    return fresh, jobs


def test_a_report_with_a_file_that_failed_to_open_is_not_kept(
    folders: tuple[Path, Path], cache: StatCache
) -> None:
    report = inspect(folders, None)
    fresh, jobs = a_stamp_for_the_images(folders[0], cache)
    fresh.keep(report, {jobs[0][0]: {"error": "cannot read: Input/output error"}})
    assert fresh.kept() is None
    fresh.keep(report, {jobs[0][0]: {"error": "not an image"}})
    assert fresh.kept() == report


def test_nothing_is_kept_without_a_cache_or_without_every_stat(
    folders: tuple[Path, Path], cache: StatCache
) -> None:
    data, _ = folders
    scan, jobs, keys, slot = a_look_at_the_images(data)
    assert stamp(None, slot, [scan], jobs, keys) is None
    del keys[jobs[0][0]]  # a file that vanished between the listing and its stat
    assert stamp(cache, slot, [scan], jobs, keys) is None


def test_a_report_that_would_not_read_back_as_it_is_is_not_kept(
    folders: tuple[Path, Path], cache: StatCache
) -> None:
    report = inspect(folders, None)
    fresh, _ = a_stamp_for_the_images(folders[0], cache)
    for altered in (
        {**report.sizes, "ratio": (1, 2)},  # a tuple reads back as a list
        {**report.sizes, 3: "an integer key"},  # reads back as "3"
        {**report.sizes, "nan": float("nan")},  # JSON cannot hold it
    ):
        fresh.keep(Inspection(**{**vars_of(report), "sizes": altered}), {})
        assert fresh.kept() is None


def vars_of(report: Inspection) -> dict:
    from dataclasses import fields

    return {field.name: getattr(report, field.name) for field in fields(report)}


def test_a_report_of_a_folder_whose_path_is_not_utf8_is_kept_and_read_back(
    tmp_path: Path, cache: StatCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = Builder(Path(os.fsdecode(bytes(tmp_path) + b"/d\xe9j\xe0")))  # a lone surrogate
    folder.image("café.png", (64, 64), seed=1, caption=None)
    folder.image("plain.png", (64, 64), seed=2, caption="a caption")
    made = inspect_dataset(folder.root, cache=cache)
    assert "missing-caption" in {problem.code for problem in made.problems}
    no_inspecting(monkeypatch)
    assert inspect_dataset(folder.root, cache=cache) == made


def test_a_cache_that_refuses_the_report_still_gives_the_inspection_its_answer(
    folders: tuple[Path, Path], cache: StatCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    inspect(folders, cache)  # the facts are stored; the report would be the only write

    def refuse(*args: object) -> None:
        raise FileSystemError("the cache folder is read-only", hint="set KURA_CACHE_DIR")

    monkeypatch.setattr(cache, "put_report", refuse)
    monkeypatch.setattr(reportcache, "code_digest", lambda: b"a newer inspection")
    assert inspect(folders, cache) == inspect(folders, None)
