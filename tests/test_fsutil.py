from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kura import fsutil
from kura.errors import FileSystemError
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
        raise OSError(errno.ENOSPC, "No space left on device", dst)

    monkeypatch.setattr(fsutil.os, "replace", failing_replace)
    with pytest.raises(FileSystemError, match="no space left on the disk that holds") as info:
        atomic_write_bytes(target, b"new")
    assert info.value.path == str(target) and "free space" in info.value.hint
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


_KILLED_WRITER = """
import os, sys, time
from pathlib import Path
from kura import fsutil
from kura.errors import FileSystemError

def stall(fd):  # the writer stops between writing its temporary file and renaming it
    Path(sys.argv[2]).write_text("ready")
    time.sleep(600)

fsutil.os.fsync = stall
fsutil.atomic_write_text(Path(sys.argv[1]), "never renamed")
"""


def test_a_writer_killed_mid_write_leaves_a_temporary_the_next_write_removes(
    tmp_path: Path,
) -> None:
    """kill -9 between the temporary file and the rename: the temporary names its writer,
    so the next write of the same file finds it and removes it (the old file is intact)."""
    target = tmp_path / "notes.md"
    atomic_write_text(target, "before")
    ready = tmp_path / "ready"
    writer = subprocess.Popen([sys.executable, "-c", _KILLED_WRITER, str(target), str(ready)])
    try:
        deadline = time.monotonic() + 60
        while not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ready.exists(), "the writer never reached its rename"
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait()
    left = [p.name for p in tmp_path.glob(".notes.md.*.tmp")]
    assert len(left) == 1 and f".{writer.pid}." in left[0]
    assert target.read_text() == "before"
    atomic_write_text(target, "after")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.md", "ready"]
    assert target.read_text() == "after"


def test_temporaries_of_live_writers_and_other_hosts_are_kept(tmp_path: Path) -> None:
    target = tmp_path / "approval.json"
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        mine = tmp_path / f".approval.json.{fsutil._HOST}.{live.pid}.abcd1234.tmp"
        other_host = tmp_path / f".approval.json.elsewhere-{fsutil._HOST}.1.abcd1234.tmp"
        fresh_legacy = tmp_path / ".approval.json.k2j4h5g6.tmp"
        old_legacy = tmp_path / ".approval.json.zz99yy88.tmp"
        for path in (mine, other_host, fresh_legacy, old_legacy):
            path.write_text("{")
        an_hour_ago = time.time() - 3700
        os.utime(old_legacy, (an_hour_ago, an_hour_ago))
        atomic_write_text(target, "{}")
        assert not old_legacy.exists()
        assert mine.exists() and other_host.exists() and fresh_legacy.exists()
    finally:
        live.kill()
        live.wait()
    assert fsutil.sweep_stale_temporaries(target) == [mine]
