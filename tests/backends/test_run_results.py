"""The run verbs return typed values, and ``--json`` writes exactly their ``to_dict()``.

Driven on the toy backend (the seam's test double): launch, relaunch, status, logs, cancel,
list and export each return one frozen value whose fields are the seam's types; the CLI's
JSON document is that value's ``to_dict()`` and holds the keys the agent contract has
always had; people's output escapes markup in the typed value as it did in documents.
"""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import pytest
from tests.backends.test_seam import TOY_DIR, _new, toy_ws  # noqa: F401  (the fixture)

from kura.backends.base import Diagnosis, LoraExport, StepProgress
from kura.cli._output import Output, contracted, escape_value, finite_json
from kura.cli.main import main
from kura.errors import InvalidInput
from kura.execution.state import RunState, read_state, write_state
from kura.nextsteps import NextStep
from kura.runs.approval import approve_run
from kura.runs.following import cancel, list_runs, run_status, tail_logs
from kura.runs.launching import launch_run, relaunch_run
from kura.runs.plan import plan_run
from kura.runs.results import (
    CancelResult,
    LaunchResult,
    LogTail,
    RunList,
    RunListEntry,
    RunSettings,
    RunStatus,
)
from kura.workspace import Workspace

STATE_KEYS = {f.name for f in dataclasses.fields(RunState)} - {"run_id"} | {"run"}
"""A document names the run ``run`` (state.json keeps its ``run_id``)."""
PROGRESS_KEYS = {f.name for f in dataclasses.fields(StepProgress)} | {"fraction"}


def _cli(ws: Workspace, *args: str) -> dict[str, object]:
    out = io.StringIO()
    assert main(["--json", "-w", str(ws.root), *args], stdout=out) == 0, out.getvalue()
    document: dict[str, object] = json.loads(out.getvalue())
    return document


def _same_json(value: LaunchResult | RunStatus | RunList | LogTail | CancelResult) -> object:
    return json.loads(json.dumps(finite_json(contracted(value.to_dict())), allow_nan=False))


@pytest.fixture
def ran(toy_ws: Workspace) -> tuple[Workspace, str, LaunchResult, LaunchResult]:  # noqa: F811
    """A toy run that ran out of memory, then succeeded on its approved contingency."""
    run_id = _new(toy_ws)
    plan_run(toy_ws, run_id, gpu="h100-pcie")
    approve_run(toy_ws, run_id)
    (TOY_DIR / "mode").write_text("oom")
    failed = launch_run(toy_ws, run_id, detach=False)
    again = relaunch_run(toy_ws, run_id, detach=False)
    return toy_ws, run_id, failed, again


def test_launch_and_relaunch_return_typed_results(ran) -> None:  # type: ignore[no-untyped-def]
    _, run_id, failed, again = ran
    assert isinstance(failed, LaunchResult) and isinstance(failed.state, RunState)
    assert (failed.run, failed.detached, failed.state.status) == (run_id, False, "failed")
    outcome = NextStep(f"kura run status {run_id}", "the outcome and what to do next")
    assert failed.next == (outcome,)
    diagnosis = failed.diagnosis
    assert isinstance(diagnosis, Diagnosis)
    assert (diagnosis.code, diagnosis.step, diagnosis.phase) == ("cuda_oom", "train", "training")
    assert diagnosis.next == {"action": "enable", "key": "shrink_activations"}
    assert again.state.attempt == 2 and again.diagnosis is None
    document = again.to_dict()
    assert list(document) == ["kind", "run", "detached", "state", "next"]
    assert document["kind"] == "run-launch"
    assert set(document["state"]) == STATE_KEYS  # type: ignore[arg-type]
    assert document["next"] == [{"command": f"kura run status {run_id}", "why": again.next[0].why}]


def test_status_is_typed_and_the_cli_writes_its_document(ran) -> None:  # type: ignore[no-untyped-def]
    ws, run_id, _, _ = ran
    status = run_status(ws, run_id)
    assert isinstance(status, RunStatus)
    assert status.state is not None and status.state.status == "succeeded"
    assert isinstance(status.progress, StepProgress)
    assert (status.progress.step, status.progress.total, status.progress.fraction) == (5, 5, 1.0)
    # the loss series comes from the toy's loss_history (its own log lines)
    assert status.scalars == {"loss": (5, status.progress.loss)}
    assert [step.command for step in status.next] == [
        f'kura run evaluate {run_id} --rating N --notes "…"',
        f"kura export {run_id}",
    ]
    document = _cli(ws, "run", "status", run_id)
    assert document == _same_json(status)
    assert list(document) == [
        "kind", "contract", "run", "state", "progress", "scalars", "labels", "cloud", "next"
    ]  # fmt: skip
    assert document["labels"] == {
        "loss": "Last loss (toy step line)",
        "raw": "toy step lines",
        "learning_rate": "none (the toy logs none)",
    }
    assert set(document["progress"]) == PROGRESS_KEYS  # type: ignore[arg-type]


def test_a_failed_status_names_the_relaunch_from_its_typed_diagnosis(
    toy_ws: Workspace,  # noqa: F811
) -> None:
    run_id = _new(toy_ws)
    plan_run(toy_ws, run_id, gpu="h100-pcie")
    approve_run(toy_ws, run_id)
    (TOY_DIR / "mode").write_text("oom")
    launch_run(toy_ws, run_id, detach=False)
    status = run_status(toy_ws, run_id)
    assert status.diagnosis is not None and status.diagnosis.code == "cuda_oom"
    assert [step.command for step in status.next] == [
        f"kura run relaunch {run_id}",
        f"kura run logs {run_id}",
        f"kura run new --from {run_id}",
    ]
    assert status.next[1].why == "the toy ran out of memory"


def test_a_status_before_launch_has_no_state(toy_ws: Workspace) -> None:  # noqa: F811
    run_id = _new(toy_ws)
    status = run_status(toy_ws, run_id)
    assert (status.state, status.progress, status.scalars, status.diagnosis) == (
        None,
        None,
        None,
        None,
    )
    assert _cli(toy_ws, "run", "status", run_id) == {
        "kind": "run-status",
        "contract": 2,
        "run": run_id,
        "state": None,
        "progress": None,
        "scalars": None,
        "labels": {
            "loss": "Last loss (toy step line)",
            "raw": "toy step lines",
            "learning_rate": "none (the toy logs none)",
        },
        "cloud": None,
        "next": [
            {"command": f"kura run plan {run_id}", "why": "drafted: plan it, then approve it"}
        ],
    }
    # planned: approve it; approved: launch it (a launch before approval is refused)
    plan_run(toy_ws, run_id, gpu="h100-pcie")
    assert [s.command for s in run_status(toy_ws, run_id).next] == [f"kura run approve {run_id}"]
    approve_run(toy_ws, run_id)
    assert [s.command for s in run_status(toy_ws, run_id).next] == [f"kura run launch {run_id}"]


def test_list_logs_and_cancel_are_typed(ran) -> None:  # type: ignore[no-untyped-def]
    ws, run_id, _, _ = ran
    listing = list_runs(ws)
    assert isinstance(listing, RunList) and listing.entry(run_id) is not None
    (entry,) = listing.runs
    assert isinstance(entry, RunListEntry) and isinstance(entry.settings, RunSettings)
    assert (entry.status, entry.datasets, entry.task) == ("succeeded", ("myaku",), "character")
    document = _cli(ws, "run", "list")
    assert document == _same_json(listing)
    (row,) = document["runs"]  # type: ignore[misc]
    assert list(row) == [
        "run",
        "bundle",
        "architecture",
        "task",
        "status",
        "datasets",
        "settings",
        "started_at",
        "finished_at",
    ]
    assert list(row["settings"]) == [
        "rank",
        "learning_rate",
        "optimizer",
        "effective_batch",
        "epochs",
    ]

    tail = tail_logs(ws, run_id, step=None, lines=2)
    assert isinstance(tail, LogTail) and tail.text.endswith("toy: done")
    logs = _cli(ws, "run", "logs", run_id, "-n", "2")
    assert logs == _same_json(tail) and list(logs) == ["kind", "contract", "run", "path", "text"]

    stopped = cancel(ws, run_id)  # a finished run is returned unchanged
    assert isinstance(stopped, CancelResult) and stopped.state.status == "succeeded"
    cancelled = _cli(ws, "run", "cancel", run_id)
    assert cancelled == _same_json(stopped) and list(cancelled) == [
        "kind",
        "contract",
        "run",
        "state",
        "next",
    ]
    assert set(cancelled["state"]) == STATE_KEYS  # type: ignore[arg-type]


def test_export_through_the_seam_is_a_lora_export(ran) -> None:  # type: ignore[no-untyped-def]
    ws, run_id, _, _ = ran
    document = _cli(ws, "export", run_id)
    assert list(document) == [
        "kind",
        "contract",
        "run",
        "epoch",
        "step",
        "format",
        "architecture",
        "source",
        "out",
        "copied",
        "mode",
        "why",
        "verified_against",
        "keys",
        "modules",
        "unmapped",
        "metadata",
        "next",
    ]
    assert document["kind"] == "lora-export" and document["copied"] is True
    assert Path(str(document["out"])).read_bytes() == Path(str(document["source"])).read_bytes()


def test_a_backends_own_check_adds_rank_and_fused_qkv() -> None:
    common = {
        "run": "r",
        "epoch": None,
        "step": 1000,
        "format": "lycoris",
        "architecture": "moss-image",
        "source": "/x/a.safetensors",
        "out": "/x/b.safetensors",
        "copied": True,
        "mode": "copy",
        "why": "loads as is",
        "verified_against": "the DiT header",
        "keys": 36,
        "modules": 12,
    }
    plain = LoraExport(**common)  # type: ignore[arg-type]
    assert "rank" not in plain.to_dict() and "fused_qkv" not in plain.to_dict()
    checked = LoraExport(**common, rank=None, fused_qkv=True).to_dict()  # type: ignore[arg-type]
    assert list(checked)[-4:] == ["rank", "fused_qkv", "unmapped", "metadata"]
    assert (checked["rank"], checked["fused_qkv"]) == (None, True)


def test_a_damaged_diagnosis_in_state_json_is_named(ran) -> None:  # type: ignore[no-untyped-def]
    ws, run_id, _, _ = ran
    run_dir = ws.run_dir(run_id)
    state = read_state(run_dir)
    state.diagnosis = {"code": 7, "step": "train"}
    write_state(run_dir, state)
    status = run_status(ws, run_id)
    with pytest.raises(InvalidInput, match=r"state\.json holds a damaged diagnosis.*code"):
        _ = status.diagnosis


def test_diagnosis_round_trips_and_refuses_unknown_fields() -> None:
    found = Diagnosis("cuda_oom", "train", "out of memory", "OOM line", {"key": "x"}, "training", 1)
    assert Diagnosis.from_dict(found.to_dict()) == found
    with pytest.raises(ValueError, match="unknown diagnosis field"):
        Diagnosis.from_dict({**found.to_dict(), "surprise": 1})
    with pytest.raises(ValueError, match="exit_code"):
        Diagnosis.from_dict({**found.to_dict(), "exit_code": True})


def test_people_see_typed_values_with_markup_escaped() -> None:
    hostile = "[/x] [bold red]LOUD"
    tail = LogTail("r", path="/logs/[b].log", text=hostile)
    escaped = escape_value(tail)
    assert isinstance(escaped, LogTail) and escaped.text != hostile
    nested = RunStatus("r", None, None, None, next=(NextStep(hostile, hostile),))
    assert isinstance(escape_value(nested).next, tuple)
    stdout = io.StringIO()
    out = Output(json_mode=False, stdout=stdout, stderr=io.StringIO())
    out.result(tail, lambda console, value: console.print(f"[bold]{value.text}[/] {value.path}"))
    assert stdout.getvalue().rstrip("\n") == f"{hostile} /logs/[b].log"
