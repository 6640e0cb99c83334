"""What ``kura run list`` shows of each run's files, kept while those files are unchanged.

A sweep leaves hundreds of runs; parsing every run.yaml and validating every state.json for
each listing made the list cost grow with the workspace (and import the run and state
models, pydantic and the YAML parsers, before the first row). The list keeps, in one JSON
file per workspace under :func:`kura.constants.cache_dir` (``run-summaries/``; never in the
workspace, which a read-only command must not write):

- of each run.yaml the few values the list shows (:class:`RunSummary`),
- of each state.json its status and times, and the processes that tell a live run from a
  dead one (:class:`StateSummary`),

each with the stat of the file it came from: size, ``mtime_ns``, inode and ``ctime_ns`` (the
stamp no user call can set back, as the stat and digest caches key by). Any difference, a
file that fails validation, or a cache file written by another schema and the file is read
again through its own reader. A state that has not ended is answered from the cache only
while its supervisor or step still runs (what :func:`kura.execution.runs.refresh_state`
returns unchanged); one whose processes are gone is refreshed, which settles it.

Each bundle's architecture is kept too, with the stat of the bundle table it comes from
(:mod:`kura.models.bundle_table`): a Kura whose table changed looks each one up again.

The cache is derived data: a damaged or foreign cache file is discarded and rebuilt, and one
that cannot be written (a read-only or full cache folder) costs the next listing time, not
its answer.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kura.constants import cache_dir
from kura.execution.procutil import run_processes_alive
from kura.runs.results import RunSettings
from kura.runs.store import read_run, run_file
from kura.workspace import Workspace

if TYPE_CHECKING:
    from kura.schema.run import RunSpec
    from kura.schema.state import RunState

__all__ = ["SCHEMA", "RunSummary", "StateSummary", "SummaryCache", "summary_of"]

SCHEMA = 2
"""Bumped whenever :func:`summary_of` or :meth:`StateSummary.of` changes what it takes from
a file (2: state.json summaries and architectures joined the run.yaml summaries)."""

BUNDLE_TABLE = Path(__file__).resolve().parents[1] / "models" / "bundle_table.py"
"""The source of each bundle's architecture; its stat keys the cached architectures."""

StatKey = tuple[int, int, int, int]


@dataclass(frozen=True)
class RunSummary:
    """The values ``kura run list`` shows that come from run.yaml alone."""

    base: str
    task: str | None
    datasets: tuple[str, ...]
    settings: RunSettings

    def to_json(self) -> dict[str, object]:
        settings = self.settings
        return {
            "base": self.base,
            "task": self.task,
            "datasets": list(self.datasets),
            "settings": {
                "rank": settings.rank,
                "learning_rate": settings.learning_rate,
                "optimizer": settings.optimizer,
                "effective_batch": settings.effective_batch,
                "epochs": settings.epochs,
            },
        }

    @classmethod
    def from_json(cls, data: object) -> RunSummary:
        """The summary a cache entry holds; ``ValueError`` when it is not one."""
        if not isinstance(data, dict):
            raise ValueError("not a mapping")
        settings = data["settings"]
        datasets = data["datasets"]
        if not isinstance(settings, dict) or not isinstance(datasets, list):
            raise ValueError("malformed summary")
        summary = cls(
            base=str(data["base"]),
            task=None if data["task"] is None else str(data["task"]),
            datasets=tuple(str(name) for name in datasets),
            settings=RunSettings(
                rank=int(settings["rank"]),
                learning_rate=float(settings["learning_rate"]),
                optimizer=str(settings["optimizer"]),
                effective_batch=int(settings["effective_batch"]),
                epochs=None if settings["epochs"] is None else int(settings["epochs"]),
            ),
        )
        if summary.to_json() != data:
            raise ValueError("summary holds other values than it reads as")
        return summary


def summary_of(spec: RunSpec) -> RunSummary:
    training = spec.training
    return RunSummary(
        base=spec.model.base,
        task=spec.task,
        datasets=tuple(d.name for d in spec.datasets),
        settings=RunSettings(
            rank=training.network.rank,
            learning_rate=training.learning_rate,
            optimizer=training.optimizer,
            effective_batch=training.effective_batch,
            epochs=training.epochs,
        ),
    )


@dataclass(frozen=True)
class StateSummary:
    """What ``kura run list`` shows of a state.json (status and times), and the processes
    that tell whether a run that has not ended still runs."""

    status: str
    started_at: str | None
    finished_at: str | None
    terminal: bool
    supervisor_pid: int | None
    supervisor_start: int | None
    pgid: int | None

    @classmethod
    def of(cls, state: RunState) -> StateSummary:
        return cls(
            status=state.status,
            started_at=state.started_at,
            finished_at=state.finished_at,
            terminal=state.is_terminal,
            supervisor_pid=state.supervisor_pid,
            supervisor_start=state.supervisor_start,
            pgid=state.pgid,
        )

    def settled(self) -> bool:
        """True when the state stands as written: it has ended, or its supervisor or step
        still runs (a state whose processes are gone is refreshed, which settles it)."""
        return self.terminal or run_processes_alive(
            self.supervisor_pid, self.supervisor_start, self.pgid
        )

    def to_json(self) -> dict[str, object]:
        return {
            "status": self.status,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "terminal": self.terminal,
            "supervisor_pid": self.supervisor_pid,
            "supervisor_start": self.supervisor_start,
            "pgid": self.pgid,
        }

    @classmethod
    def from_json(cls, data: object) -> StateSummary:
        """The state summary a cache entry holds; ``ValueError`` when it is not one."""
        if not isinstance(data, dict):
            raise ValueError("not a mapping")
        summary = cls(
            status=str(data["status"]),
            started_at=_optional_str(data["started_at"]),
            finished_at=_optional_str(data["finished_at"]),
            terminal=bool(data["terminal"]),
            supervisor_pid=_optional_int(data["supervisor_pid"]),
            supervisor_start=_optional_int(data["supervisor_start"]),
            pgid=_optional_int(data["pgid"]),
        )
        if summary.to_json() != data:
            raise ValueError("state summary holds other values than it reads as")
        return summary


def _optional_str(value: object) -> str | None:
    return None if value is None else str(value)


def _optional_int(value: object) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError("not an integer")
    return value


def _stat_key(path: Path) -> StatKey | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_size, info.st_mtime_ns, info.st_ino, info.st_ctime_ns)


@dataclass
class _Entries:
    """What one cache file holds (see the module docstring)."""

    runs: dict[str, tuple[StatKey, RunSummary]]
    states: dict[str, tuple[StatKey, StateSummary]]
    architectures: dict[str, str]


class SummaryCache:
    """One workspace's run and state summaries and the architectures of their bundles;
    :meth:`summary`, :meth:`state` and :meth:`architecture` answer from the cache while the
    file each comes from is unchanged, :meth:`save` writes back what changed."""

    def __init__(self, path: Path, runs_dir: str, entries: _Entries, table: StatKey | None) -> None:
        self.path = path
        self.runs_dir = runs_dir
        self._entries = entries
        self._table = table
        """The bundle table's stat; None (unknown) keeps no architecture."""
        self._changed = False

    @classmethod
    def for_workspace(cls, workspace: Workspace) -> SummaryCache:
        runs_dir = os.fspath(workspace.runs_dir.resolve())
        name = hashlib.sha256(runs_dir.encode("utf-8", "surrogateescape")).hexdigest()[:32]
        path = cache_dir() / "run-summaries" / f"{name}.json"
        table = _stat_key(BUNDLE_TABLE)
        return cls(path, runs_dir, _read_entries(path, runs_dir, table), table)

    def summary(self, workspace: Workspace, run_id: str) -> RunSummary:
        """The run's summary; run.yaml is read (read-only loader) only when it changed
        since it was cached. A run.yaml that cannot be read raises as :func:`read_run`."""
        path = run_file(workspace, run_id)
        key = _stat_key(path)
        held = self._entries.runs.get(run_id)
        if key is not None and held is not None and held[0] == key:
            return held[1]
        summary = summary_of(read_run(workspace, run_id))
        if key is not None and key == _stat_key(path):
            self._entries.runs[run_id] = (key, summary)
            self._changed = True
        return summary

    def state(self, run_dir: Path) -> StateSummary | None:
        """The state summary of the run in ``run_dir``, None before its first launch (no
        state.json).

        Answered from the cache while state.json is unchanged and the state stands as
        written (:meth:`StateSummary.settled`); otherwise the state is refreshed
        (:func:`kura.execution.runs.refresh_state`: read, validated, settled if its
        processes are gone), which raises as it does for a damaged file."""
        path = run_dir / "state.json"
        key = _stat_key(path)
        if key is None:
            return None
        run_id = run_dir.name
        held = self._entries.states.get(run_id)
        if held is not None and held[0] == key and held[1].settled():
            return held[1]
        from kura.execution.runs import refresh_state

        summary = StateSummary.of(refresh_state(run_dir))
        if key == _stat_key(path):  # not rewritten meanwhile (refresh_state may settle it)
            self._entries.states[run_id] = (key, summary)
            self._changed = True
        return summary

    def architecture(self, base: str) -> str:
        """The architecture of bundle ``base``; an unknown bundle raises ``NotFound`` as
        :func:`kura.models.bundles.get_bundle` does."""
        held = self._entries.architectures.get(base)
        if held is not None:
            return held
        from kura.models.bundles import get_bundle

        architecture = get_bundle(base).architecture
        if self._table is not None:
            self._entries.architectures[base] = architecture
            self._changed = True
        return architecture

    def keep_only(self, run_ids: set[str]) -> None:
        """Forget runs that are gone (a deleted run folder)."""
        for held in (self._entries.runs, self._entries.states):
            for run_id in [r for r in held if r not in run_ids]:
                del held[run_id]
                self._changed = True

    def save(self) -> None:
        """Write the cache back when it changed; a folder that refuses the write leaves the
        old file (or none): the next listing reads those files again."""
        if not self._changed:
            return
        from kura.fsutil import atomic_write_text

        entries = self._entries
        document = {
            "schema": SCHEMA,
            "runs_dir": self.runs_dir,
            "bundle_table": None if self._table is None else list(self._table),
            "architectures": dict(sorted(entries.architectures.items())),
            "runs": {
                run_id: {"stat": list(key), "summary": summary.to_json()}
                for run_id, (key, summary) in sorted(entries.runs.items())
            },
            "states": {
                run_id: {"stat": list(key), "state": summary.to_json()}
                for run_id, (key, summary) in sorted(entries.states.items())
            },
        }
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(self.path, json.dumps(document, separators=(",", ":")))
        except OSError:
            return
        self._changed = False


def _read_entries(path: Path, runs_dir: str, table: StatKey | None) -> _Entries:
    """The cached entries of ``runs_dir``; none when the file is absent, damaged, of
    another schema or of another workspace (a hash collision). The architectures only
    while the bundle table has the stat they were looked up under."""
    from kura.bounded import read_limited

    empty = _Entries({}, {}, {})
    try:
        document = json.loads(read_limited(path, what="run summary cache"))
    except Exception:  # absent, unreadable, oversized or damaged: derived data, rebuilt
        return empty
    if not isinstance(document, dict) or document.get("schema") != SCHEMA:
        return empty
    if document.get("runs_dir") != runs_dir:
        return empty
    try:
        return _Entries(
            runs={
                str(run_id): (_key(entry), RunSummary.from_json(_mapping(entry)["summary"]))
                for run_id, entry in _mapping(document["runs"]).items()
            },
            states={
                str(run_id): (_key(entry), StateSummary.from_json(_mapping(entry)["state"]))
                for run_id, entry in _mapping(document["states"]).items()
            },
            architectures=_architectures(document, table),
        )
    except (KeyError, TypeError, ValueError):
        return empty


def _architectures(document: dict[str, object], table: StatKey | None) -> dict[str, str]:
    held = _mapping(document["architectures"])
    if table is None or document["bundle_table"] != list(table):
        return {}
    if not all(isinstance(value, str) for value in held.values()):
        raise ValueError("malformed architecture")
    return {str(base): str(architecture) for base, architecture in held.items()}


def _mapping(value: object) -> dict[str, object]:
    if not isinstance(value, dict):
        raise ValueError("not a mapping")
    return value


def _key(entry: object) -> StatKey:
    """The stat an entry was cached under."""
    stat = _mapping(entry)["stat"]
    if not (isinstance(stat, list) and len(stat) == 4):
        raise ValueError("malformed stat")
    return (int(stat[0]), int(stat[1]), int(stat[2]), int(stat[3]))
