"""`kura run status` / `run watch` / `sweep status` as a person reads them: no ``None``,
rounded durations, a diagnosis's remedy in words, and the ``next`` steps the JSON has."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pytest
from tests.builders import character_workspace
from tests.conftest import CliResult
from tests.runs.fake_checkout import set_mode, use_fake_checkout

from kura.backends.base import StepProgress
from kura.cli.human import counts_text, duration, progress_line, remedy_text
from kura.runs.approval import approve_run
from kura.runs.launching import launch_run
from kura.runs.new import create_run
from kura.runs.plan import plan_run
from kura.workspace import Workspace

BUNDLE = "flux2-klein-base-4b"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(None, "unknown"), (0.4, "0 s"), (45, "45 s"), (72.4, "1 m 12 s"), (7500, "2 h 05 m")],
)
def test_durations_are_rounded_to_what_a_person_reads(seconds: float | None, text: str) -> None:
    assert duration(seconds) == text


def test_what_the_trainer_has_not_shown_yet_reads_unknown() -> None:
    line = progress_line(StepProgress(step=3), live=True)
    assert line == "step 3, epoch unknown, loss unknown (EMA), unknown s/step, ETA unknown"
    assert "None" not in progress_line(StepProgress(), live=False)


def test_a_remedy_reads_as_words_not_a_dict() -> None:
    remedy = {"action": "increase", "key": "blocks_to_swap", "from": 8, "to": 16}
    assert remedy_text(remedy) == "increase blocks_to_swap from 8 to 16"
    assert remedy_text({"action": "read_log", "step": "train"}) == "read_log (step train)"
    assert remedy_text({"action": "enable", "key": "fp8_base", "why": None}) == "enable fp8_base"


def test_counts_read_as_a_sentence() -> None:
    assert counts_text({"complete": 3, "pruned": 1, "failed": 0}) == "3 complete · 1 pruned"
    assert counts_text({}) == "none yet"


@pytest.fixture
def runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Workspace, Path]:
    workspace = character_workspace(tmp_path)
    return workspace, use_fake_checkout(workspace, tmp_path, BUNDLE, monkeypatch)


def _launched(workspace: Workspace, checkout: Path, mode: str, minute: int) -> str:
    set_mode(checkout, mode)
    run_id = create_run(
        workspace,
        datasets=["myaku"],
        base=BUNDLE,
        sets=["execution.executor=host", "training.epochs=2"],
        now=datetime(2026, 12, 2, 8, minute),
    ).run_id
    plan_run(workspace, run_id, gpu="rtx-4090")
    approve_run(workspace, run_id)
    launch_run(workspace, run_id, detach=False)
    return run_id


def _next_commands(kura: Callable[..., CliResult], root: Path, run_id: str) -> list[str]:
    document = json.loads(kura("--json", "-w", root, "run", "status", run_id).stdout)
    return [step["command"] for step in document["next"]]


def test_a_finished_runs_status_has_no_none_and_shows_its_next_steps(
    runs: tuple[Workspace, Path], kura: Callable[..., CliResult]
) -> None:
    workspace, checkout = runs
    run_id = _launched(workspace, checkout, "ok", 0)
    shown = kura("-w", workspace.root, "run", "status", run_id)
    assert shown.exit_code == 0, shown.stderr
    assert "None" not in shown.stdout
    assert f"Run {run_id}: succeeded" in shown.stdout
    for command in _next_commands(kura, workspace.root, run_id):
        assert f"next: `{command}`" in shown.stdout


def test_a_failed_runs_diagnosis_reads_as_a_remedy_and_next_commands(
    runs: tuple[Workspace, Path], kura: Callable[..., CliResult]
) -> None:
    workspace, checkout = runs
    run_id = _launched(workspace, checkout, "oom", 1)
    shown = kura("-w", workspace.root, "run", "status", run_id)
    assert "cuda_oom:" in shown.stdout
    assert "remedy: " in shown.stdout
    assert "{" not in shown.stdout and "None" not in shown.stdout
    commands = _next_commands(kura, workspace.root, run_id)
    assert commands
    for command in commands:
        assert f"next: `{command}`" in shown.stdout


def test_watch_of_an_ended_run_prints_its_status_and_next_steps(
    runs: tuple[Workspace, Path], kura: Callable[..., CliResult]
) -> None:
    workspace, checkout = runs
    run_id = _launched(workspace, checkout, "ok", 2)
    shown = kura("-w", workspace.root, "run", "watch", run_id, "--interval", "0.1")
    assert f"Run {run_id}: succeeded" in shown.stdout
    assert "None" not in shown.stdout
    assert "next: `" in shown.stdout


def test_a_never_launched_run_shows_the_step_its_files_say_comes_next(
    runs: tuple[Workspace, Path], kura: Callable[..., CliResult]
) -> None:
    workspace, _ = runs
    run_id = create_run(
        workspace, datasets=["myaku"], base=BUNDLE, sets=["execution.executor=host"]
    ).run_id
    shown = kura("-w", workspace.root, "run", "status", run_id)
    assert f"next: `kura run plan {run_id}` — drafted: plan it, then approve it" in shown.stdout


def test_sweep_status_counts_read_as_a_sentence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kura: Callable[..., CliResult]
) -> None:
    from tests.web.sweep_builder import build_sweep_workspace

    swept = build_sweep_workspace(tmp_path, monkeypatch)
    shown = kura("-w", swept.workspace.root, "sweep", "status", swept.sweep)
    assert shown.exit_code == 0, shown.stderr
    headline = shown.stdout.splitlines()[0]
    assert "{" not in headline and " complete" in headline, headline
    assert "next: `" in shown.stdout


def test_run_ids_are_never_cut_short_in_a_narrow_terminal(
    runs: tuple[Workspace, Path], kura: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace, _ = runs
    run_id = create_run(
        workspace, datasets=["myaku"], base=BUNDLE, sets=["execution.executor=host"]
    ).run_id
    monkeypatch.setenv("COLUMNS", "40")
    shown = kura("-w", workspace.root, "run", "list")
    assert run_id in shown.stdout, shown.stdout
