"""Load task YAML with SkyPilot's own code, in SkyPilot's own environment.

``KURA_SKYPILOT_ENV`` names a virtual environment with ``skypilot==SKYPILOT_VERSION``
installed (``.ci/run`` makes it); without it the tests that need it skip, and under
``CI=true`` fail (:mod:`tests.backends.trainer_required`). SkyPilot runs offline here: its
HOME is a test folder and its usage reporting is off.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from tests.backends.trainer_required import missing

SKYPILOT_VERSION = "0.14.1"
LOADER = Path(__file__).with_name("sky_task_loader.py")


def skypilot_python() -> Path:
    env = os.environ.get("KURA_SKYPILOT_ENV")
    if not env:
        missing("KURA_SKYPILOT_ENV is not set (a venv with `pip install skypilot==0.14.1`)")
    python = Path(env) / "bin" / "python"
    if not python.is_file():
        missing(f"KURA_SKYPILOT_ENV={env} has no bin/python")
    return python


def load_with_skypilot(paths: list[Path], home: Path) -> list[dict[str, Any]]:
    """What ``sky.Task.from_yaml`` makes of each file (or its ``error``)."""
    home.mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "SKYPILOT_DISABLE_USAGE_COLLECTION": "1",
    }
    result = subprocess.run(
        [str(skypilot_python()), str(LOADER), *map(str, paths)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == len(paths), result.stdout + result.stderr[-4000:]
    versions = {line.get("sky_version") for line in lines if "error" not in line}
    assert versions <= {SKYPILOT_VERSION}, f"KURA_SKYPILOT_ENV holds skypilot {versions}"
    return lines


def parse_with_skypilot(
    argv: list[str], home: Path, environment: dict[str, str] | None = None
) -> dict[str, Any]:
    """The parameters SkyPilot's own ``sky jobs …`` command reads from ``argv`` (``sky``,
    ``jobs``, then the command and its arguments) in ``environment`` (where ``--secret
    NAME`` reads NAME's value), or its ``error``."""
    assert argv[:2] == ["sky", "jobs"], argv
    home.mkdir(parents=True, exist_ok=True)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "SKYPILOT_DISABLE_USAGE_COLLECTION": "1"}
    env.update(environment or {})
    result = subprocess.run(
        [str(skypilot_python()), str(Path(__file__).with_name("sky_cli_parse.py")), *argv[2:]],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    found: dict[str, Any] = json.loads(result.stdout.splitlines()[-1])
    return found
