"""``MusubiBackend.setup``: how Musubi Tuner gets onto this machine, and the install.

Two ways, never one taken for the other: the Docker image (``kura image build musubi-tuner``,
the docker executor's default) and Musubi's own virtual environment for the host executor,
which ``kura backend install musubi`` makes from a checkout (:mod:`kura.backends.musubi.env`).
``kura backend list`` calls this with no source: then the checkout kura.toml names is the
source when it is one, and without one no install command is offered (``how`` says what to
pass). A ``--source`` that is not a Musubi checkout at the pinned release is refused here.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from kura.backends.base import TrainerSetup
from kura.backends.musubi.adapters import MUSUBI_RELEASE
from kura.backends.musubi.env import (
    BACKEND_NAME,
    INSTALL_SIZE,
    check_source,
    default_source,
    env_record,
    install_commands,
    musubi_env,
)
from kura.backends.trainer_env import EnvLocation, read_env_record
from kura.errors import KuraError

if TYPE_CHECKING:
    from kura.workspace import Workspace

__all__ = ["musubi_setup"]

_IMAGE = "the Docker image `kura image build musubi-tuner --run` for the docker executor"


def musubi_setup(
    workspace: Workspace | None, *, python: str | None, source: Path | None
) -> TrainerSetup:
    location = musubi_env(workspace)
    checkout, problem = _source(workspace, source)
    base = TrainerSetup(
        backend=BACKEND_NAME,
        how=_how(checkout, problem),
        present=_installed(location),
        path=location.path,
        source=location.source,
        python=str(location.python),
        size=INSTALL_SIZE,
        checkout=checkout,
    )
    if checkout is None:
        return replace(base, needs_source=True)
    return replace(
        base, install=install_commands(location, checkout, python), record=env_record(checkout)
    )


def _source(workspace: Workspace | None, source: Path | None) -> tuple[Path | None, str]:
    """The checkout to install from, or why there is none. An explicit ``--source`` that
    fails its check raises (the person named it); kura.toml's is only reported, so that
    ``kura backend list`` still lists every backend."""
    if source is not None:
        return check_source(source), ""
    configured = default_source(workspace)
    if configured is None:
        return None, "no checkout named (--source, or executor.musubi_checkout in kura.toml)"
    try:
        return check_source(configured), ""
    except KuraError as err:
        return None, f"kura.toml's executor.musubi_checkout: {err.message}"


def _how(checkout: Path | None, problem: str) -> str:
    own = (
        f"its own virtual environment for the host executor, made from a Musubi Tuner "
        f"{MUSUBI_RELEASE} checkout by `kura backend install musubi --source DIR`"
    )
    if checkout is not None:
        return f"{own} (from {checkout}); or {_IMAGE}"
    return f"{own} ({problem}); or {_IMAGE}"


def _installed(location: EnvLocation) -> bool:
    """Whether the environment is there and its install finished (its record is Musubi's
    at the pinned release); a damaged record raises InvalidInput naming the file."""
    if not location.present:
        return False
    record = read_env_record(location)
    return (
        record is not None and record.backend == BACKEND_NAME and record.release == MUSUBI_RELEASE
    )
