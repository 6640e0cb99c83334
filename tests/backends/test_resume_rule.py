"""Each backend's :class:`ResumeRule` (what a recovered SkyPilot job's script applies with
no Kura there) resumes exactly as its ``resume_arguments`` (what ``kura run resume`` gives
the train step): the same saved state found, the same arguments, and none without one."""

from __future__ import annotations

import glob
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from kura.backends.base import ResumeRule
from kura.backends.registry import get_backend
from kura.errors import CheckFailed

RUN = "20261202-0100"


def _musubi_states(output: Path) -> None:
    """Epoch, step and last states (musubi_tuner/utils/train_utils.py:18-22), the newest
    by time an epoch one: no name order would find it."""
    for offset, name in enumerate(
        (f"{RUN}-state", f"{RUN}-step00000020-state", f"{RUN}-000002-state")
    ):
        (output / name).mkdir()
        os.utime(output / name, (1_000_000 + offset, 1_000_000 + offset))


def _aitk_saves(output: Path) -> None:
    for step in (10, 20):
        (output / f"{RUN}_{step:09d}.safetensors").write_bytes(b"lora")


def _moss_checkpoints(output: Path) -> None:
    for step in (10, 20):
        folder = output / RUN / "checkpoints" / f"step_{step:08d}"
        folder.mkdir(parents=True)
        (folder / "state.json").write_text("{}")
    (output / RUN / "checkpoints" / "step_00000030").mkdir()  # no state.json: not a checkpoint


def _applied(rule: ResumeRule, run_dir: Path) -> tuple[str, ...] | None:
    """The rule as the job's script applies it (``ls -1dt`` or sorted names, newest first)."""
    found = glob.glob(rule.under(str(run_dir)).pattern)
    if not found:
        return None
    key: Callable[[str], object] = os.path.getmtime if rule.newest == "mtime" else str
    newest = max(found, key=key)
    return tuple(newest if part == "{state}" else part for part in rule.argv)


@pytest.mark.parametrize(
    ("backend", "save"),
    [
        ("musubi-tuner", _musubi_states),
        ("ai-toolkit", _aitk_saves),
        ("kohakumoss", _moss_checkpoints),
    ],
)
def test_the_resume_rule_resumes_as_resume_arguments(
    backend: str, save: Callable[[Path], None], tmp_path: Path
) -> None:
    run_dir = tmp_path / RUN
    (run_dir / "output").mkdir(parents=True)
    found = get_backend(backend)
    rule = found.resume_rule(RUN)
    with pytest.raises(CheckFailed):
        found.resume_arguments(run_dir, trainer_run_dir=str(run_dir))
    assert _applied(rule, run_dir) is None  # nothing saved: the job starts over
    save(run_dir / "output")
    assert _applied(rule, run_dir) == found.resume_arguments(run_dir, trainer_run_dir=str(run_dir))
