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


def test_a_nested_hold_in_the_same_thread_does_not_wait_on_itself(tmp_path: Path) -> None:
    lock_path = tmp_path / "lock"
    started = time.monotonic()
    with hold_lock(lock_path, timeout=0.5), hold_lock(lock_path, timeout=0.5):
        pass
    assert time.monotonic() - started < 0.4


def test_the_lock_stays_held_until_the_outer_hold_ends(tmp_path: Path) -> None:
    lock_path = tmp_path / "lock"
    ready = multiprocessing.Event()
    with hold_lock(lock_path):
        with hold_lock(lock_path):
            pass
        holder = multiprocessing.Process(target=_hold, args=(str(lock_path), ready, 0.0))
        holder.start()
        assert not ready.wait(0.5)  # the inner hold's end did not release the lock
    assert ready.wait(10)
    holder.join()


def test_another_thread_still_waits_for_the_holder(tmp_path: Path) -> None:
    import threading

    lock_path = tmp_path / "lock"
    outcome: list[str] = []

    def other() -> None:
        try:
            with hold_lock(lock_path, timeout=0.2):
                outcome.append("acquired")
        except LockBusy:
            outcome.append("busy")

    with hold_lock(lock_path):
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
    assert outcome == ["busy"]
