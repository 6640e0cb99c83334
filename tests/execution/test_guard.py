"""A run's guard (`guard.json`): its verdict stops the run, its crash stops it too, and it
never outlives the supervisor (issue 24: a sweep trial's lease, seen by the supervisor)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from run_helpers import make_spec, pid_gone, wait_until

from kura.execution import launch, read_state
from kura.execution.guard import GUARD_FILE, Guard, write_guard
from kura.execution.launch_spec import Step


def _guard(run_dir: Path, code: str, grace: float = 10.0, start_after: float = 0.0) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    guard = Guard(
        argv=[sys.executable, "-c", code],
        owner="the test",
        stop_grace_seconds=grace,
        start_after_seconds=start_after,
    )
    write_guard(run_dir, guard)


def test_the_guards_verdict_stops_a_running_step_and_ends_the_run_cancelled(
    tmp_path: Path,
) -> None:
    spec = make_spec(tmp_path, "slow")
    _guard(spec.run_dir, "import time; time.sleep(1.0); print('the lease ran out')")
    started = time.monotonic()
    state = launch(spec, foreground=True)
    assert time.monotonic() - started < 120  # the slow step alone would train for 500 s
    assert state.status == "cancelled"
    assert state.message == "stopped by its guard: the lease ran out"
    assert state.step("train").status == "cancelled"
    assert not (spec.run_dir / GUARD_FILE).exists()


def test_a_guard_that_crashes_stops_the_run_rather_than_leave_it_unguarded(
    tmp_path: Path,
) -> None:
    spec = make_spec(tmp_path, "slow")
    _guard(spec.run_dir, "import sys, time; time.sleep(0.5); print('cannot parse'); sys.exit(2)")
    state = launch(spec, foreground=True)
    assert state.status == "cancelled"
    assert state.message is not None
    assert "guard (the test) exited 2: cannot parse" in state.message


def test_a_step_that_ignores_sigterm_is_killed_after_the_guards_grace(tmp_path: Path) -> None:
    spec = make_spec(tmp_path)
    stubborn = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print('training', flush=True); time.sleep(60)"
    )
    spec.steps[0] = Step(
        name="train", argv=(sys.executable, "-c", stubborn), env={}, cwd=str(spec.run_dir)
    )
    _guard(spec.run_dir, "import time; time.sleep(1.0); print('gone')", grace=1.0)
    started = time.monotonic()
    state = launch(spec, foreground=True)
    assert time.monotonic() - started < 45  # killed: the step alone would sleep for 60 s
    assert state.status == "cancelled"
    assert state.message == "stopped by its guard: gone"


def test_a_silent_guard_lets_the_run_succeed_and_ends_with_it(tmp_path: Path) -> None:
    spec = make_spec(tmp_path)
    pidfile = tmp_path / "guard.pid"
    # the step waits for the guard to be up, so the guard is surely running when it ends
    waits = (
        "import pathlib, time\n"
        f"while not pathlib.Path({str(pidfile)!r}).exists(): time.sleep(0.05)\n"
    )
    spec.steps[0] = Step(
        name="train", argv=(sys.executable, "-c", waits), env={}, cwd=str(spec.run_dir)
    )
    _guard(
        spec.run_dir,
        f"import os, time; open({str(pidfile)!r}, 'w').write(str(os.getpid())); time.sleep(60)",
    )
    state = launch(spec, foreground=True)
    assert state.status == "succeeded"
    guard_pid = int(pidfile.read_text())
    wait_until(lambda: pid_gone(guard_pid), timeout=10)
    assert read_state(spec.run_dir).status == "succeeded"


def test_a_delayed_guard_starts_while_the_step_runs_and_its_verdict_stops_it(
    tmp_path: Path,
) -> None:
    spec = make_spec(tmp_path, "slow")
    _guard(spec.run_dir, "print('the lease ran out')", start_after=1.0)
    state = launch(spec, foreground=True)
    assert state.status == "cancelled"
    assert state.message == "stopped by its guard: the lease ran out"
    assert state.step("train").status == "cancelled"


def test_a_run_that_ends_before_its_guards_delay_never_starts_the_guard(
    tmp_path: Path,
) -> None:
    spec = make_spec(tmp_path)
    started_file = tmp_path / "guard-started"
    _guard(spec.run_dir, f"open({str(started_file)!r}, 'w')", start_after=600.0)
    began = time.monotonic()
    state = launch(spec, foreground=True)
    assert time.monotonic() - began < 300  # the run ends without waiting out the delay
    assert state.status == "succeeded"
    assert not started_file.exists()
