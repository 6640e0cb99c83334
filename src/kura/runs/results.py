"""What the verbs that start, follow and stop a run return: one frozen value per document.

``kura run launch|relaunch|resume`` give a :class:`LaunchResult`, ``status``/``watch`` a
:class:`RunStatus`, ``logs`` a :class:`LogTail`, ``cancel`` a :class:`CancelResult` and
``list`` a :class:`RunList`. The CLI renders these values for people and writes
``to_dict()`` under ``--json``: that method alone spells each JSON document (its ``kind``
and keys), so the library, the CLI and the web page share one shape. Nested values are the
seam's own types: the run's :class:`~kura.schema.state.RunState`, the step's
:class:`~kura.backends.base.StepProgress`, :class:`~kura.nextsteps.NextStep`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, ClassVar

from kura.errors import InvalidInput
from kura.nextsteps import NextStep, next_list

if TYPE_CHECKING:
    from kura.backends.base import Diagnosis, LossLabels, StepProgress
    from kura.runs.cloudfollow import CloudStatus
    from kura.schema.state import RunState

__all__ = [
    "CancelResult",
    "LaunchResult",
    "LogTail",
    "RunList",
    "RunListEntry",
    "RunSettings",
    "RunStatus",
    "diagnosis_of",
    "state_document",
]


def state_document(state: RunState) -> dict[str, object]:
    """The run's state as documents spell it: the run is ``run`` there as in every other
    document (state.json on disk keeps its own ``run_id``)."""
    document = asdict(state)
    return {"run": document.pop("run_id"), **document}


def diagnosis_of(state: RunState | None) -> Diagnosis | None:
    """The diagnosis of a failed attempt as its typed value (state.json stores its fields);
    None while the attempt has none."""
    from kura.backends.base import Diagnosis

    if state is None or state.diagnosis is None:
        return None
    try:
        return Diagnosis.from_dict(state.diagnosis)
    except ValueError as exc:
        raise InvalidInput(
            f"runs/{state.run_id}/state.json holds a damaged diagnosis: {exc}",
            hint="Kura alone writes this file; relaunch the run with `kura run relaunch` to "
            "start a new attempt",
        ) from None


@dataclass(frozen=True)
class LaunchResult:
    """An attempt handed to the executor: its state when the command returned (the final
    one with ``--foreground``) and what to run next."""

    run: str
    detached: bool
    state: RunState
    next: tuple[NextStep, ...] = ()

    kind: ClassVar[str] = "run-launch"

    @property
    def diagnosis(self) -> Diagnosis | None:
        return diagnosis_of(self.state)

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "run": self.run,
            "detached": self.detached,
            "state": state_document(self.state),
            "next": next_list(*self.next),
        }


@dataclass(frozen=True)
class CancelResult:
    """The run's state after ``kura run cancel`` (a finished run's, unchanged), and what to
    run next."""

    run: str
    state: RunState
    next: tuple[NextStep, ...] = ()

    kind: ClassVar[str] = "run-cancel"

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "run": self.run,
            "state": state_document(self.state),
            "next": next_list(*self.next),
        }


@dataclass(frozen=True)
class RunStatus:
    """Where a run stands: its refreshed state (None before its first launch), the current
    step's progress (None before it logs any), the last ``(step, value)`` of each
    scalar the trainer logged, what to run next, and what the numbers are in the trainer's
    own terms (``labels``: its ``Backend.loss_labels``)."""

    run: str
    state: RunState | None
    progress: StepProgress | None
    scalars: Mapping[str, tuple[int, float]] | None
    next: tuple[NextStep, ...] = ()
    labels: LossLabels | None = None
    cloud: CloudStatus | None = None
    """A cloud run's job: SkyPilot's state, recoveries, when its outputs were collected."""

    kind: ClassVar[str] = "run-status"

    @property
    def diagnosis(self) -> Diagnosis | None:
        return diagnosis_of(self.state)

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "run": self.run,
            "state": None if self.state is None else state_document(self.state),
            "progress": None if self.progress is None else self.progress.to_dict(),
            "scalars": None if self.scalars is None else dict(self.scalars),
            "labels": None if self.labels is None else self.labels.to_dict(),
            "cloud": None if self.cloud is None else self.cloud.to_dict(),
            "next": next_list(*self.next),
        }


@dataclass(frozen=True)
class LogTail:
    """The last lines of one step's log file (empty before the step writes any)."""

    run: str
    path: str
    text: str

    kind: ClassVar[str] = "run-logs"

    def to_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "run": self.run, "path": self.path, "text": self.text}


@dataclass(frozen=True)
class RunSettings:
    """The recipe values ``kura run list`` shows for a run."""

    rank: int
    learning_rate: float
    optimizer: str
    effective_batch: int
    epochs: int | None


@dataclass(frozen=True)
class RunListEntry:
    """One run of ``kura run list``: what it trains, where it stands, when it ran.
    ``status`` is the state's, or ``approved``/``planned``/``draft`` before a launch."""

    id: str
    base: str
    architecture: str
    task: str | None
    status: str
    datasets: tuple[str, ...]
    settings: RunSettings
    started_at: str | None
    finished_at: str | None

    def to_dict(self) -> dict[str, object]:
        return {
            "run": self.id,
            "bundle": self.base,
            "architecture": self.architecture,
            "task": self.task,
            "status": self.status,
            "datasets": list(self.datasets),
            "settings": asdict(self.settings),
            "started_at": self.started_at,
            "finished_at": self.finished_at,
        }


@dataclass(frozen=True)
class DamagedRun:
    """A run whose files cannot be read (a bad run.yaml or state.json): listed with the file
    and the error, so one damaged run never hides the others."""

    id: str
    file: str | None
    error: str
    hint: str

    def to_dict(self) -> dict[str, object]:
        return {"run": self.id, "file": self.file, "error": self.error, "hint": self.hint}


@dataclass(frozen=True)
class RunList:
    """Every run of the workspace, in id (creation) order; ``damaged`` those that cannot be
    read, each with its file and error."""

    runs: tuple[RunListEntry, ...]
    damaged: tuple[DamagedRun, ...] = ()

    kind: ClassVar[str] = "run-list"

    def entry(self, run_id: str) -> RunListEntry | None:
        return next((run for run in self.runs if run.id == run_id), None)

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "runs": [run.to_dict() for run in self.runs],
            "damaged": [run.to_dict() for run in self.damaged],
        }
