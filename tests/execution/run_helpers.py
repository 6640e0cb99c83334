"""Helpers shared by the execution tests: specs that run the fake, and polling waits."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from kura.execution.launch_spec import ContainerSpec, LaunchSpec, Step

FAKE = Path(__file__).resolve().parent / "fake_musubi.py"
WAIT_SECONDS = 60.0


def fake_step(name: str, run_dir: Path, mode: str = "ok", *extra: str) -> Step:
    argv = [sys.executable, str(FAKE), "--fake_mode", mode]
    if name == "train":
        argv += ["--output_dir", str(run_dir / "output"), "--output_name", "lora"]
        argv += ["--logging_dir", str(run_dir / "tb")]
    else:
        argv += ["--max_train_epochs", "1", "--steps_per_epoch", "1"]
    return Step(name=name, argv=argv + list(extra), env={"KURA_TEST_STEP": name}, cwd=str(run_dir))


def make_spec(
    root: Path,
    mode: str = "ok",
    *extra: str,
    run_id: str = "run1",
    steps: tuple[str, ...] = ("train",),
    executor: str = "host",
    pass_env: tuple[str, ...] = (),
    skip_steps: tuple[str, ...] = (),
    container: ContainerSpec | None = None,
) -> LaunchSpec:
    run_dir = root / "runs" / run_id
    return LaunchSpec(
        run_id=run_id,
        run_dir=run_dir,
        steps=[fake_step(name, run_dir, mode, *extra) for name in steps],
        executor=executor,  # type: ignore[arg-type]
        container=container,
        gpus=1,
        pass_env=list(pass_env),
        skip_steps=list(skip_steps),
    )


def wait_until(predicate: Callable[[], bool], timeout: float = WAIT_SECONDS) -> None:
    """Poll ``predicate`` until true; fail only after a generous timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"condition not met within {timeout} s")


def pid_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rfind(")") + 2 :].startswith("Z")
