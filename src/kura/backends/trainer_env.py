"""A trainer's own virtual environment: where it lives and what Kura installed into it.

Each trainer Kura installs (``kura backend install NAME``) gets a virtual environment of its
own that Kura's process never imports. Its folder is, first found:

1. the backend's environment variable (``KURA_MUSUBI_ENV``, ``KURA_AITK_ENV``,
   ``KURA_KOHAKUMOSS_ENV``);
2. its key under ``[executor]`` in the workspace's ``kura.toml`` (relative to the workspace);
3. ``<user data dir>/kura/envs/<default name>`` (platformdirs).

After every install command succeeded, ``kura backend install`` writes ``kura-env.json``
into the environment (:class:`EnvRecord`): which trainer release it holds, the source folder
it was installed from (the checkout the host executor then runs), and the pins it installed.
That file has one writer (:func:`write_env_record`) and one reader (:func:`read_env_record`).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from kura.constants import data_dir, trainer_env_override
from kura.errors import InvalidInput, KuraError
from kura.fsutil import atomic_write_text
from kura.schema.base import StrictModel, describe_validation

__all__ = [
    "RECORD_NAME",
    "EnvLocation",
    "EnvRecord",
    "helper_answer",
    "locate_env",
    "read_env_record",
    "write_env_record",
]

RECORD_NAME = "kura-env.json"


@dataclass(frozen=True)
class EnvLocation:
    """A trainer environment's folder and where that choice came from (the variable's name,
    ``kura.toml`` or ``default``)."""

    path: Path
    source: str

    @property
    def python(self) -> Path:
        if os.name == "nt":
            return self.path / "Scripts" / "python.exe"
        return self.path / "bin" / "python"

    @property
    def bin_dir(self) -> Path:
        return self.python.parent

    @property
    def present(self) -> bool:
        return self.python.is_file()

    @property
    def record_path(self) -> Path:
        return self.path / RECORD_NAME

    def tool(self, name: str) -> Path:
        """A console script of the environment (``accelerate``, ``kogine``)."""
        return self.bin_dir / (name + (".exe" if os.name == "nt" else ""))


def locate_env(
    *,
    variable: str,
    toml_value: str | None,
    workspace_root: Path | None,
    default_name: str,
) -> EnvLocation:
    """The environment's location by the rules in the module docstring."""
    override = trainer_env_override(variable)
    if override is not None:
        return EnvLocation(override.resolve(), variable)
    if toml_value:
        path = Path(toml_value).expanduser()
        if not path.is_absolute() and workspace_root is not None:
            path = workspace_root / path
        return EnvLocation(path.resolve(), "kura.toml")
    return EnvLocation(data_dir() / "envs" / default_name, "default")


class EnvRecord(StrictModel):
    """``kura-env.json``: what ``kura backend install`` put into the environment."""

    backend: str
    release: str
    checkout: str | None = None
    """The trainer's source folder the environment runs (absolute); None for a trainer
    installed from the package registry."""
    packages: list[str] = []
    """The pinned requirements the install asked for, in order."""


def write_env_record(location: EnvLocation, record: EnvRecord) -> None:
    """Write ``kura-env.json`` atomically (the last step of an install)."""
    text = json.dumps(record.model_dump(), indent=2, sort_keys=True) + "\n"
    atomic_write_text(location.record_path, text)


def read_env_record(location: EnvLocation) -> EnvRecord | None:
    """The environment's record; None when the environment has none (not installed by
    Kura, or the install did not finish). A damaged record is an InvalidInput naming it."""
    from kura.bounded import load_json

    path = location.record_path
    if not path.is_file():
        return None
    try:
        return EnvRecord.model_validate(load_json(path))
    except ValidationError as err:
        raise InvalidInput(
            f"{path} is damaged: {describe_validation(err)}",
            hint="reinstall the trainer with `kura backend install NAME --force`",
            path=path,
        ) from None


Runner = Callable[..., "subprocess.CompletedProcess[str]"]


def helper_answer(
    location: EnvLocation,
    helper: Path,
    command: str,
    request: Mapping[str, object],
    *,
    trainer: str,
    doctor: str,
    extra_env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 600.0,
    runner: Runner = subprocess.run,
) -> dict[str, object]:
    """Run a backend's ``envhelper.py COMMAND`` with the environment's Python, the request
    as JSON on stdin, and return its last stdout line's JSON object (``ok`` and ``result``
    or ``error``). A helper that ran past ``timeout``, crashed or answered no object is a
    KuraError naming ``trainer`` and the ``doctor`` command to run. The caller checks that
    the environment is present and reads ``ok``."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "FORCE_COLOR")}
    env.update({"NO_COLOR": "1", "PYTHONDONTWRITEBYTECODE": "1", **(extra_env or {})})
    try:
        done = runner(
            [str(location.python), str(helper), command],
            input=json.dumps(dict(request)),
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=cwd,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired as err:
        raise KuraError(
            f"the {trainer} helper `{command}` ran past {timeout:.0f} s",
            hint=f"run `{doctor}` to check the environment",
        ) from err
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    answer: object = None
    if done.returncode == 0 and lines:
        try:
            answer = json.loads(lines[-1])
        except ValueError:
            answer = None
    if not isinstance(answer, dict):
        tail = "\n".join(done.stderr.strip().splitlines()[-12:])
        raise KuraError(
            f"the {trainer} helper `{command}` failed (exit {done.returncode}):\n{tail}",
            hint=f"run `{doctor}`; reinstall the environment with `kura backend install … --force`",
            path=location.path,
        )
    return answer
