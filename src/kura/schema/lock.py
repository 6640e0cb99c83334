"""The schema of ``runs/<id>/compiled/run.lock``: exactly which files a run reads.

Written by ``kura run compile`` (:mod:`kura.runs.compile`), read by the launch gate. The
models part is the model lock of :mod:`kura.models.lockdoc`; each dataset entry names the
folder the trainer will read (resolved, so a ``media:`` pointed at a copy after approval is
seen) with the digest of its content; ``inputs`` are the other files it opens (a sample
prompt's image), each with its size and digest.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from kura.schema.base import StrictModel

__all__ = [
    "LOCK_VERSION",
    "LockedDataset",
    "LockedInput",
    "LockedModels",
    "LockedRole",
    "LockedShard",
    "RunLock",
]

LOCK_VERSION: Literal[2] = 2


class LockedShard(StrictModel):
    path: str
    size: int
    sha256: str


class LockedSource(StrictModel):
    repo: str
    filename: str | None
    revision: str | None


class LockedRole(StrictModel):
    role: str
    source: LockedSource
    expected_sha256: str | None
    path: str | None
    size: int | None
    sha256: str | None = Field(description="`pending` until downloaded; None for a repo folder.")
    sha256_source: str | None
    header_digest: str | None
    component: str | None
    shards: list[LockedShard] = []


class LockedModels(StrictModel):
    kind: Literal["model-lock"] = "model-lock"
    version: int
    bundle: str
    architecture: str
    backend: str
    trainer: dict[str, Any]
    roles: dict[str, LockedRole]


class LockedDataset(StrictModel):
    name: str
    digest: str
    media: str = Field(description="The media folder the trainer reads, resolved on this host.")
    control: str | None = None


class LockedInput(StrictModel):
    """A file the trainer opens that is neither a model nor a dataset (a sample prompt's
    start image): the backend names it as a mount with its host side."""

    path: str = Field(description="The file on this host, as the run names it.")
    purpose: str
    size: int
    sha256: str


class LockedTrainer(StrictModel):
    name: str
    release: str


class RunLock(StrictModel):
    version: Literal[2] = LOCK_VERSION
    run: str
    trainer: LockedTrainer
    models: LockedModels
    datasets: list[LockedDataset]
    inputs: list[LockedInput] = Field(
        [], description="Other files the trainer opens; re-hashed by the launch gate."
    )
