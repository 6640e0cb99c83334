from __future__ import annotations

import os
from pathlib import Path

import pytest

from kura import fsutil
from kura.fsutil import atomic_write_bytes, atomic_write_text


def test_writes_and_replaces(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "file.txt"
    atomic_write_text(target, "one")
    atomic_write_text(target, "two")
    assert target.read_text() == "two"
    assert [p.name for p in target.parent.iterdir()] == ["file.txt"]


def test_failed_write_keeps_the_old_file_and_leaves_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "file.txt"
    atomic_write_text(target, "precious")

    def failing_replace(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(fsutil.os, "replace", failing_replace)
    with pytest.raises(OSError, match="disk full"):
        atomic_write_bytes(target, b"new")
    assert target.read_text() == "precious"
    assert os.listdir(tmp_path) == ["file.txt"]


def test_write_if_changed_keeps_an_identical_file_untouched(tmp_path: Path) -> None:
    from kura.fsutil import write_text_if_changed

    target = tmp_path / "lock.json"
    assert write_text_if_changed(target, "{}\n") is True
    before = target.stat().st_mtime_ns
    assert write_text_if_changed(target, "{}\n") is False
    assert target.stat().st_mtime_ns == before
    assert write_text_if_changed(target, "{ }\n") is True
