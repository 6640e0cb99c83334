"""Cold reads in worker processes give the same inspection as reads in Kura's own process."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from dataset_builders import Builder, encode, picture
from PIL import Image

from kura.dataset import facts as facts_module
from kura.dataset import inspect_dataset
from kura.dataset.inspection import Inspection
from kura.dataset.statcache import StatCache


def varied_dataset(build: Builder) -> None:
    """JPEGs and PNGs of a few shapes (so PNGs are decoded for likeness), a resized copy,
    a transparent PNG, a truncated PNG, a JPEG with garbage bytes and an empty file."""
    for index in range(6):
        build.image(f"j{index}.jpg", (96 + 8 * index, 80), seed=index, quality=90)
        build.image(f"p{index}.png", (80, 80), seed=10 + index)
    build.image("copy.png", (120, 120), image=picture(80, 80, seed=10).resize((120, 120)))
    build.image("alpha.png", (64, 64), image=picture(64, 64, seed=3).convert("RGBA"))
    whole = encode(picture(128, 128, seed=4), "PNG")
    build.raw("truncated.png", whole[: len(whole) // 2])
    build.raw("garbage.jpg", encode(picture(64, 64, seed=5), "JPEG")[:200] + b"\x00" * 300)
    build.raw("empty.png", b"")


def inspect_with_threshold(
    root: Path, cache_path: Path, threshold: int, monkeypatch: pytest.MonkeyPatch
) -> Inspection:
    monkeypatch.setattr(facts_module, "POOL_THRESHOLD", threshold)
    with StatCache.open(cache_path) as cache:
        return inspect_dataset(root, cache=cache)


def pool_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the jobs of each call to the process pool."""
    calls: list[int] = []
    real = facts_module.read_in_processes

    def counting(jobs, reader_for, on_batch):  # type: ignore[no-untyped-def]
        calls.append(len(jobs))
        return real(jobs, reader_for, on_batch)

    monkeypatch.setattr(facts_module, "read_in_processes", counting)
    return calls


def test_worker_processes_give_the_in_process_report(
    build: Builder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    varied_dataset(build)
    calls = pool_calls(monkeypatch)
    serial = inspect_with_threshold(build.root, tmp_path / "a.sqlite3", sys.maxsize, monkeypatch)
    assert calls == []
    pooled = inspect_with_threshold(build.root, tmp_path / "b.sqlite3", 0, monkeypatch)
    assert calls[0] == 34  # 17 images and their 17 captions
    assert len(calls) == 2  # then the PNGs decoded for likeness
    assert pooled.to_dict() == serial.to_dict()
    assert pooled.files == serial.files
    broken = {p.path: (p.code, p.message) for p in pooled.problems if "png" in p.path}
    assert {"truncated.png", "empty.png"} <= set(broken)
    assert broken == {p.path: (p.code, p.message) for p in serial.problems if "png" in p.path}
    assert pooled.likenesses and pooled.likenesses == serial.likenesses


def test_workers_take_on_pillows_pixel_limit(
    build: Builder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    varied_dataset(build)
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 90 * 90)
    serial = inspect_with_threshold(build.root, tmp_path / "a.sqlite3", sys.maxsize, monkeypatch)
    pooled = inspect_with_threshold(build.root, tmp_path / "b.sqlite3", 0, monkeypatch)
    over = [p for p in serial.problems if "decompression-bomb" in p.message]
    assert over  # j1.jpg and wider are over 90x90
    assert pooled.to_dict() == serial.to_dict()


def test_pooled_progress_reaches_every_file(
    build: Builder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    varied_dataset(build)
    monkeypatch.setattr(facts_module, "POOL_THRESHOLD", 0)
    seen: list[tuple[int, int]] = []
    inspect_dataset(build.root, progress=lambda done, total: seen.append((done, total)))
    # one bar over both passes: reading the 34 files, then comparing the pictures
    total = seen[-1][1]
    assert total > 34
    assert {bar for _, bar in seen} == {total}
    assert seen[0][0] == 0
    assert seen[-1][0] == total
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)
    assert 34 in [done for done, _ in seen]  # the reading pass ends at its own count


def test_few_files_are_read_without_worker_processes(
    build: Builder, monkeypatch: pytest.MonkeyPatch
) -> None:
    for index in range(3):
        build.image(f"p{index}.png", (64, 64), seed=index)
    calls = pool_calls(monkeypatch)
    assert facts_module.POOL_THRESHOLD > 6
    inspect_dataset(build.root)
    assert calls == []


def test_a_program_read_from_stdin_reads_in_its_own_process(
    build: Builder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Workers import the main module from its file; ``python - <<EOF`` has none."""
    varied_dataset(build)
    calls = pool_calls(monkeypatch)
    serial = inspect_with_threshold(build.root, tmp_path / "a.sqlite3", sys.maxsize, monkeypatch)
    monkeypatch.setattr(sys.modules["__main__"], "__file__", "<stdin>", raising=False)
    from_stdin = inspect_with_threshold(build.root, tmp_path / "b.sqlite3", 0, monkeypatch)
    assert calls == []
    assert from_stdin.to_dict() == serial.to_dict()
