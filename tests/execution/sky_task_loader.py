"""Run in SkyPilot's own environment (never imported by Kura or its tests): load each task
YAML given on the command line with ``sky.Task.from_yaml`` and print, per file, one JSON
line of what SkyPilot made of it, or ``{"error": …}`` with SkyPilot's refusal.

``sky.Task.from_yaml`` validates the YAML against SkyPilot's task schema (an unknown or
misspelt key is an ``InvalidSkyPilotConfigError``, ``sky/utils/schemas.py``), builds
``sky.Resources`` from ``resources`` and a ``sky.data.Storage`` for each mapping under
``file_mounts`` (``sky/task.py``, ``Task.from_yaml_config``); none of it needs the cloud.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import sky


def describe(path: str) -> dict[str, Any]:
    task = sky.Task.from_yaml(path)
    [resources] = list(task.resources)
    storage = {
        target: {"source": store.source, "mode": store.mode.value}
        for target, store in task.storage_mounts.items()
    }
    return {
        "name": task.name,
        "accelerators": resources.accelerators,
        "cloud": None if resources.cloud is None else str(resources.cloud),
        "region": resources.region,
        "use_spot": resources.use_spot,
        "disk_size": resources.disk_size,
        "image_id": resources.image_id,
        "file_mounts": task.file_mounts or {},
        "storage_mounts": storage,
        "secret_refs": [ref.name for ref in task._managed_secret_refs],
        "envs": dict(task.envs),
        "has_run": bool(task.run),
        "sky_version": sky.__version__,
    }


def main(paths: list[str]) -> None:
    for path in paths:
        try:
            print(json.dumps(describe(path)))
        except Exception as exc:  # SkyPilot's refusal, reported to the test
            print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))


if __name__ == "__main__":
    main(sys.argv[1:])
