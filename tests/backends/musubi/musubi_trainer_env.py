"""What the tests that run Musubi's own code need to find it (see ``conftest.py``)."""

from __future__ import annotations

from dataclasses import dataclass

from tests.backends.trainer_required import missing

from kura.backends.musubi.env import HostTrainer, host_trainer, musubi_env

__all__ = ["Harness", "installed_trainer", "missing"]


def installed_trainer() -> HostTrainer | None:
    """The installed environment and its checkout; None when there is none (a damaged or
    unfinished one raises: it would be a broken install)."""
    if not musubi_env(None).present:
        return None
    return host_trainer(None)


@dataclass(frozen=True)
class Harness:
    """How an opt-in harness runs: the interpreter, Musubi's ``src`` folder, the process
    environment."""

    python: str
    source: str
    env: dict[str, str]
