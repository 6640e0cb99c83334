"""Executors: where a run's steps execute (this host, a Docker container, a SkyPilot job)."""

from __future__ import annotations

from typing import Any

from kura.errors import UsageError
from kura.execution.executors.base import Executor, Handle
from kura.execution.executors.docker import DockerExecutor
from kura.execution.executors.host import HostExecutor
from kura.execution.executors.skypilot import SkyPilotExecutor

__all__ = [
    "DockerExecutor",
    "Executor",
    "Handle",
    "HostExecutor",
    "SkyPilotExecutor",
    "executor_for",
]


def executor_for(name: str, **options: Any) -> Executor:
    """The executor named by a spec's ``executor`` field, built with ``options``.

    docker takes ``user``; skypilot needs ``accelerator`` (the planned GPU class, e.g.
    ``"L40S"``) and takes ``output_bucket`` and ``setup``.
    """
    if name == "host":
        return HostExecutor(**options)
    if name == "docker":
        return DockerExecutor(**options)
    if name == "skypilot":
        if "accelerator" not in options:
            raise UsageError(
                "a SkyPilot launch needs the planned GPU class",
                hint='pass accelerator=... (e.g. "L40S") from the run\'s plan',
            )
        return SkyPilotExecutor(**options)
    raise UsageError(f"unknown executor {name!r}", hint="use host, docker or skypilot")
