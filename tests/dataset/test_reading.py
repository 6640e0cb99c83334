"""Hostile files in a dataset folder: devices, pipes and oversized files are findings, never
reads that hang or grow; hashes are streamed."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from dataset_builders import Builder

from kura.dataset import images, reading
from kura.dataset.captions import read_caption_facts
from kura.dataset.images import read_image_facts, read_pixel_facts
from kura.dataset.inspect import inspect_dataset
from kura.dataset.reading import MAX_IMAGE_BYTES, NotReadable, open_regular, stream_digest
from kura.dataset.videos import read_video_facts

READERS = {"image": read_image_facts, "video": read_video_facts, "caption": read_caption_facts}


def _in_time(function, *args, seconds: float = 10):  # type: ignore[no-untyped-def]
    """Run ``function`` on a daemon thread; fail (instead of hanging) past ``seconds``."""
    result: list[object] = []
    worker = threading.Thread(target=lambda: result.append(function(*args)), daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"{function.__name__} did not return"
    return result[0]


@pytest.mark.parametrize("kind", READERS)
@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_link_to_a_device_is_not_read(tmp_path: Path, kind: str, device: str) -> None:
    link = tmp_path / {"image": "a.png", "video": "a.mp4", "caption": "a.txt"}[kind]
    link.symlink_to(device)
    facts = _in_time(READERS[kind], link)
    assert facts["error"] == "cannot read: not a regular file (a device)"
    assert facts["sha256"] is None


@pytest.mark.parametrize("kind", READERS)
def test_a_fifo_is_not_opened_for_reading(tmp_path: Path, kind: str) -> None:
    fifo = tmp_path / "clip.mp4"
    os.mkfifo(fifo)
    facts = _in_time(READERS[kind], fifo)
    assert facts["error"] == "cannot read: not a regular file (a named pipe)"


def test_an_oversized_image_is_refused_naming_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    big = tmp_path / "big.png"
    with big.open("wb") as handle:
        handle.truncate(MAX_IMAGE_BYTES + 1)  # sparse: costs no disk
    facts = read_image_facts(big)
    assert "over the 256.0 MiB limit for image files" in facts["error"]
    assert read_pixel_facts(big)["error"] == facts["error"]


def test_an_oversized_file_is_reported_in_the_inspection(tmp_path: Path) -> None:
    folder = Builder(tmp_path / "d")
    with (folder.root / "big.png").open("wb") as handle:
        handle.truncate(MAX_IMAGE_BYTES + 1)
    folder.caption("big", "a caption")
    report = inspect_dataset(folder.root).to_dict()
    [problem] = [p for p in report["problems"] if p["path"] == "big.png"]
    assert problem["code"] == "broken-media"
    assert "256.0 MiB limit" in problem["message"]


def test_hashes_are_streamed_in_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(b"x" * 10)
    monkeypatch.setattr(reading, "CHUNK", 3)
    with open_regular(path, limit=100, what="test") as (handle, size):
        reads: list[int] = []
        original = handle.read
        handle.read = lambda n=-1: (reads.append(n), original(n))[1]  # type: ignore[method-assign]
        assert stream_digest(handle, 100)[0] == size == 10
    assert set(reads) == {3}
    with open_regular(path, limit=100, what="test") as (handle, _), pytest.raises(NotReadable):
        stream_digest(handle, 5)


def test_the_image_reader_never_reads_the_whole_file_into_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = Builder(tmp_path).image("a.png", caption=None)
    monkeypatch.setattr(Path, "read_bytes", lambda self: pytest.fail("read whole"))
    facts = images.read_image_facts(path)
    assert facts["width"] == 64 and "error" not in facts
