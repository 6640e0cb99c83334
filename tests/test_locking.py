from __future__ import annotations

import multiprocessing
import multiprocessing.synchronize
import time
from pathlib import Path

import pytest

from kura.errors import LockBusy
from kura.locking import hold_lock


def _hold(lock_path: str, ready: multiprocessing.synchronize.Event, seconds: float) -> None:
    with hold_lock(Path(lock_path)):
        ready.set()
        time.sleep(seconds)


def test_second_process_fails_clearly_naming_the_holder(tmp_path: Path) -> None:
    lock_path = tmp_path / ".kura" / "lock"
    ready = multiprocessing.Event()
    holder = multiprocessing.Process(target=_hold, args=(str(lock_path), ready, 3.0))
    holder.start()
    try:
        assert ready.wait(10)
        with pytest.raises(LockBusy, match=f"pid {holder.pid}"), hold_lock(lock_path, timeout=0.2):
            pass
    finally:
        holder.join()


def test_waiting_process_gets_the_lock_when_released(tmp_path: Path) -> None:
    lock_path = tmp_path / "lock"
    ready = multiprocessing.Event()
    holder = multiprocessing.Process(target=_hold, args=(str(lock_path), ready, 0.3))
    holder.start()
    assert ready.wait(10)
    with hold_lock(lock_path, timeout=10):
        acquired = True
    holder.join()
    assert acquired
    assert holder.exitcode == 0


def test_lock_of_a_killed_holder_is_free(tmp_path: Path) -> None:
    lock_path = tmp_path / "lock"
    ready = multiprocessing.Event()
    holder = multiprocessing.Process(target=_hold, args=(str(lock_path), ready, 60))
    holder.start()
    assert ready.wait(10)
    holder.kill()
    holder.join()
    with hold_lock(lock_path, timeout=1):
        pass
