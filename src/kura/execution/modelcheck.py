"""The model files of a run, checked again before every step the supervisor starts.

The launch gate verifies them once; a caching step can take an hour, and a file rewritten
during it (same size, mtime put back) would otherwise be trained on and reported as a
success. The supervisor reads the run's compiled lock (``compiled/run.lock``, which the
launch gate requires of every run Kura launches) and verifies the locked model files
through the digest cache: a file whose size, mtime, inode and ctime are unchanged since it
was hashed is not read again, so the check costs a few stats per step. A spec started
without a compiled lock (a library caller's own steps) names no model files to check.
"""

from __future__ import annotations

from pathlib import Path

from kura.errors import CheckFailed

__all__ = ["RUN_LOCK", "changed_model_file"]

RUN_LOCK = Path("compiled") / "run.lock"


def changed_model_file(run_dir: Path, run_id: str) -> CheckFailed | None:
    """The refusal naming the first locked model file that is not the approved one, or None
    when every one is (or the run has no compiled lock)."""
    from kura.models.lockcheck import verify_locked_models
    from kura.schema.lock import RunLock
    from kura.schema.records import read_record

    path = Path(run_dir) / RUN_LOCK
    if not path.is_file():
        return None
    lock = read_record(RunLock, path, fix=f"recompile with `kura run plan {run_id}`")
    try:
        verify_locked_models(lock.models, run_id=run_id)
    except CheckFailed as error:
        return error
    return None
