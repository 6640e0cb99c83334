"""A workspace the size a sweep leaves behind: N finished runs and one live one.

Builds the demo workspace (``kura demo``), then copies its planned and approved run N times
under new ids, each with a finished state.json; the last copy is "training" under a
supervisor that is really alive (a ``sleep`` this module starts), so pages and commands
take the path they take for a live run. Used by ``bench/web_pages.py`` and
``bench/run_list.py``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


@dataclass
class ManyRuns:
    workspace: Path
    finished: list[str]
    live: str | None
    supervisor: subprocess.Popen[bytes] | None

    def stop(self) -> None:
        if self.supervisor is not None:
            self.supervisor.kill()
            self.supervisor.wait()


def build_demo(folder: Path) -> Path:
    workspace = folder / "workspace"
    if not (workspace / "runs").is_dir():
        subprocess.run(
            [sys.executable, "-m", "kura", "demo", str(folder)],
            check=True,
            capture_output=True,
            env={**os.environ, "PYTHONPATH": str(SRC)},
        )
    return workspace


def build_many_runs(folder: Path, runs: int, *, live: bool) -> ManyRuns:
    """``runs`` runs in the demo workspace under ``folder`` (the demo's own run among
    them), the newest one live when ``live``."""
    sys.path.insert(0, str(SRC))
    from kura.execution.procutil import process_start_ticks
    from kura.execution.state import new_state, write_state

    workspace = build_demo(folder)
    runs_dir = workspace / "runs"
    template = sorted(p for p in runs_dir.iterdir() if p.is_dir())[0]
    text = (template / "run.yaml").read_text()
    template_id = template.name
    ids = [template_id]
    for index in range(2, runs + 1):
        run_id = f"{template_id}-{index}"
        target = runs_dir / run_id
        if not target.exists():
            shutil.copytree(template, target)
            (target / "run.yaml").write_text(text.replace(f"id: {template_id}", f"id: {run_id}"))
        ids.append(run_id)
    for run_id in ids:
        run_dir = runs_dir / run_id
        state = new_state(run_id, run_dir, "host", ["cache", "train"], [])
        state.move_to("training")
        state.move_to("succeeded")
        write_state(run_dir, state)
    supervisor = None
    live_id = None
    if live:
        live_id = ids[-1]
        supervisor = subprocess.Popen(["sleep", "3600"])
        run_dir = runs_dir / live_id
        state = new_state(live_id, run_dir, "host", ["cache", "train"], [])
        state.move_to("training")
        state.supervisor_pid = supervisor.pid
        state.supervisor_start = process_start_ticks(supervisor.pid)
        state.current_step = "train"
        write_state(run_dir, state)
    return ManyRuns(workspace, ids[:-1] if live else ids, live_id, supervisor)
