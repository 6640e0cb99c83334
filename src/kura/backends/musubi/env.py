"""Musubi Tuner's own virtual environment: where it lives, what it is made from, how.

Musubi Tuner is not on the package registries: its environment is made from a source folder
(a checkout at the pinned release, or the snapshot CI uses) that
``kura backend install musubi --source DIR`` checks (:func:`check_source`) and installs
non-editable, so nothing is written into the folder. The host executor then runs the
scripts of that folder (its ``src/musubi_tuner/<script>.py``, the path Kura's argv names)
with the environment's ``python`` and ``accelerate``; ``kura-env.json`` records which folder
that is (:func:`host_trainer`).

The environment's folder is, first found: ``KURA_MUSUBI_ENV``, kura.toml's
``executor.musubi_env`` (relative to the workspace), ``<user data dir>/kura/envs/
musubi-tuner-0.3.4`` (:func:`kura.backends.trainer_env.locate_env`).
"""

from __future__ import annotations

import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kura.backends.musubi.adapters import MUSUBI_RELEASE
from kura.backends.trainer_env import EnvLocation, EnvRecord, locate_env, read_env_record
from kura.errors import InvalidInput, NotFound, SpecError

if TYPE_CHECKING:
    from kura.workspace import Workspace

__all__ = [
    "BACKEND_NAME",
    "CHECKOUT_MARKER",
    "DEFAULT_ENV_NAME",
    "ENV_VARIABLE",
    "INSTALL_SIZE",
    "PINS",
    "REMOVED",
    "HostTrainer",
    "Pin",
    "check_source",
    "env_record",
    "host_trainer",
    "install_commands",
    "musubi_env",
]

BACKEND_NAME = "musubi-tuner"
ENV_VARIABLE = "KURA_MUSUBI_ENV"
DEFAULT_ENV_NAME = f"musubi-tuner-{MUSUBI_RELEASE}"
CHECKOUT_MARKER = Path("src") / "musubi_tuner"
"""The package folder every Musubi checkout has (its scripts live under it)."""
INSTALL_SIZE = "about 5.3 GB (torch's CUDA wheels), 3–4 minutes from a local package mirror"


@dataclass(frozen=True)
class Pin:
    """One requirement the install asks for, and why it is pinned so."""

    requirement: str
    reason: str


TORCH_PINS = (
    Pin(
        "torch==2.14.1",
        "the CUDA build: it trains on a GPU and runs on a CPU-only machine too (CI); the "
        "registry's torchvision wheels need this exact torch",
    ),
    Pin(
        "torchvision==0.29.1",
        "torchvision's release for torch 2.14.1 (with the CPU-only torch wheel `import "
        "torchvision` fails on a missing torchvision::nms); every Musubi training script "
        "imports it (training/trainer_base.py imports hv_generate_video.py)",
    ),
)
TRAINER_PINS = (
    Pin(
        "tensorboard==2.21.0",
        "Kura passes --logging_dir and reads loss/current back from Musubi's TensorBoard "
        "files; Musubi lists it only in its dev group",
    ),
)
PINS = (*TORCH_PINS, *TRAINER_PINS)
"""What the environment gets besides Musubi itself, whose own pyproject pins the rest
(accelerate 1.6.0, diffusers 0.32.1, transformers 4.57.6, safetensors 0.4.5 …)."""
REMOVED = Pin(
    "triton",
    "torch's CUDA wheel pulls it in (0.9 GB); Kura compiles with --dynamo_backend no and "
    "Musubi's training needs no Triton kernel (a CPU run with it installed trains the same)",
)


def musubi_env(workspace: Workspace | None) -> EnvLocation:
    """The environment ``KURA_MUSUBI_ENV`` / kura.toml / the default names."""
    toml_value = workspace.config().executor.musubi_env if workspace is not None else None
    return locate_env(
        variable=ENV_VARIABLE,
        toml_value=toml_value,
        workspace_root=workspace.root if workspace is not None else None,
        default_name=DEFAULT_ENV_NAME,
    )


def check_source(source: Path) -> Path:
    """``source`` resolved when it is a Musubi Tuner checkout at the pinned release (its
    ``src/musubi_tuner`` package and ``pyproject.toml`` version); a KuraError naming the
    folder otherwise."""
    folder = source.expanduser().resolve()
    if not folder.is_dir():
        raise NotFound(
            f"{folder} is not a folder",
            hint=f"pass --source a Musubi Tuner {MUSUBI_RELEASE} checkout",
            path=folder,
        )
    if not (folder / CHECKOUT_MARKER).is_dir():
        raise InvalidInput(
            f"{folder} has no {CHECKOUT_MARKER}: not a Musubi Tuner checkout",
            hint=f"pass --source the root of a Musubi Tuner {MUSUBI_RELEASE} checkout "
            f"(`git clone https://github.com/kohya-ss/musubi-tuner && git -C musubi-tuner "
            f"checkout v{MUSUBI_RELEASE}`)",
            path=folder,
        )
    version = _pyproject_version(folder / "pyproject.toml")
    if version != MUSUBI_RELEASE:
        raise InvalidInput(
            f"{folder} is Musubi Tuner {version}, but Kura compiles for {MUSUBI_RELEASE}",
            hint=f"check out v{MUSUBI_RELEASE} in {folder} (`git -C {folder} checkout "
            f"v{MUSUBI_RELEASE}`), or pass --source another checkout",
            path=folder,
        )
    return folder


def _pyproject_version(path: Path) -> str:
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidInput(
            f"{path.parent} has no pyproject.toml: not a Musubi Tuner checkout",
            hint="pass --source the root of the checkout",
            path=path.parent,
        ) from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise InvalidInput(f"cannot read {path}: {err}", path=path) from None
    project = document.get("project")
    name = project.get("name") if isinstance(project, dict) else None
    version = project.get("version") if isinstance(project, dict) else None
    if name != "musubi-tuner" or not isinstance(version, str):
        raise InvalidInput(
            f"{path} is not Musubi Tuner's (project {name!r})",
            hint="pass --source the root of a Musubi Tuner checkout",
            path=path,
        )
    return version


def install_commands(
    location: EnvLocation, source: Path, base_python: str | None = None
) -> tuple[tuple[str, ...], ...]:
    """The argv lists that make the environment from ``source``, in order: the venv, torch
    and torchvision on their own, Musubi (non-editable: pip builds a wheel from the folder
    and writes nothing into it) with its own pins plus tensorboard, then triton removed."""
    python = base_python or sys.executable
    pip = (str(location.python), "-m", "pip")
    install = (*pip, "install", "--disable-pip-version-check")
    return (
        (python, "-m", "venv", str(location.path)),
        (*install, *(pin.requirement for pin in TORCH_PINS)),
        (*install, str(source), *(pin.requirement for pin in TRAINER_PINS)),
        (*pip, "uninstall", "--disable-pip-version-check", "-y", REMOVED.requirement),
    )


def env_record(source: Path) -> EnvRecord:
    """What ``kura-env.json`` says once the install finished: the folder the host executor
    runs and every pin asked for (Musubi's own pins are its pyproject's)."""
    return EnvRecord(
        backend=BACKEND_NAME,
        release=MUSUBI_RELEASE,
        checkout=str(source),
        packages=[*(pin.requirement for pin in PINS), f"musubi-tuner @ {source}"],
    )


@dataclass(frozen=True)
class HostTrainer:
    """What the host executor runs: the environment's executables and the checkout."""

    location: EnvLocation
    record: EnvRecord
    checkout: Path

    @property
    def bin_dir(self) -> Path:
        return self.location.bin_dir


def host_trainer(workspace: Workspace | None) -> HostTrainer:
    """The installed environment and the checkout its record names; a SpecError saying how
    to make it when it is missing, unfinished or not Musubi's at the pinned release."""
    location = musubi_env(workspace)
    where = f"{location.path} (chosen by {location.source})"
    install = "run `kura backend install musubi --source DIR` with a Musubi Tuner "
    install += f"{MUSUBI_RELEASE} checkout, or use execution.executor: docker"
    if not location.present:
        raise SpecError(
            f"execution.executor is `host` but no Musubi Tuner environment is installed at {where}",
            hint=install,
            path=location.path,
        )
    record = read_env_record(location)
    if record is None:
        raise SpecError(
            f"the Musubi Tuner environment at {where} has no kura-env.json: its install did "
            "not finish, or Kura did not make it",
            hint=install.replace("--source DIR", "--source DIR --force"),
            path=location.path,
        )
    if record.backend != BACKEND_NAME or record.release != MUSUBI_RELEASE:
        raise SpecError(
            f"the environment at {where} holds {record.backend} {record.release}, not "
            f"Musubi Tuner {MUSUBI_RELEASE}",
            hint=install.replace("--source DIR", "--source DIR --force"),
            path=location.path,
        )
    checkout = Path(record.checkout or "")
    if not record.checkout or not (checkout / CHECKOUT_MARKER).is_dir():
        raise SpecError(
            f"the Musubi Tuner checkout {record.checkout!r} that {location.path} was installed "
            "from is gone",
            hint=install.replace("--source DIR", "--source DIR --force"),
            path=location.path,
        )
    return HostTrainer(location, record, checkout)
