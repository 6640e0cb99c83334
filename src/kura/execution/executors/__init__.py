"""Executors: where a run's steps execute (this host, a Docker container, a SkyPilot job).

Each executor is one class that knows how a step becomes a process (``command``), how to
stop what outlives a killed client (``remote_stop``) and how to submit a run. Nothing else
branches on an executor's name: callers look the class up here by the name a run records.
"""

from __future__ import annotations

from typing import Any

from kura.errors import UsageError
from kura.execution.executors.base import Executor, Handle
from kura.execution.executors.docker import DockerExecutor
from kura.execution.executors.host import HostExecutor
from kura.execution.executors.skypilot import SkyPilotExecutor

__all__ = [
    "EXECUTORS",
    "DockerExecutor",
    "Executor",
    "Handle",
    "HostExecutor",
    "SkyPilotExecutor",
    "executor_class",
    "executor_for",
]

EXECUTORS: dict[str, type[HostExecutor]] = {
    "host": HostExecutor,
    "docker": DockerExecutor,
    "skypilot": SkyPilotExecutor,
}


def executor_class(name: str) -> type[HostExecutor]:
    """The executor class a run names (``execution.executor``)."""
    try:
        return EXECUTORS[name]
    except KeyError:
        raise UsageError(f"unknown executor {name!r}", hint=f"use {', '.join(EXECUTORS)}") from None


def executor_for(name: str, **options: Any) -> Executor:
    """The executor named by a spec's ``executor`` field, built with ``options``.

    docker takes ``user``; skypilot needs ``accelerator`` (the planned GPU class, e.g.
    ``"L40S"``) and takes ``output_bucket`` and ``setup``.
    """
    cls = executor_class(name)
    if cls is SkyPilotExecutor and "accelerator" not in options:
        raise UsageError(
            "a SkyPilot launch needs the planned GPU class",
            hint='pass accelerator=... (e.g. "L40S") from the run\'s plan',
        )
    executor: Executor = cls(**options)
    return executor
