"""Where the KohakuMoss environment lives, how it is made, and how Kura talks to it.

KohakuMoss (torch, diffusers, transformers, lycoris) lives in a virtual environment of its
own that Kura's process never imports. Its folder is, first found:

1. ``KURA_KOHAKUMOSS_ENV`` (environment variable);
2. ``executor.kohakumoss_env`` in the workspace's ``kura.toml`` (relative to the workspace);
3. ``<user data dir>/kura/envs/kohakumoss-<version>`` (platformdirs).

``install_commands`` are the exact argv lists ``kura backend install kohakumoss`` runs:
torch first (the platform's normal wheel: on a CPU host pip takes the CPU build), then
KohakuMoss with ``kohakuvault==0.9.0`` pinned (1.x removed the ``_inner.read_range`` API
KohakuMoss 0.1.0's catalog reader calls, so every data pass dies on it).

Kura calls the environment only through ``envhelper.py`` (run by path, JSON in and out).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from kura.backends.trainer_env import EnvLocation, Runner, helper_answer
from kura.backends.trainer_env import locate_env as _locate
from kura.errors import CheckFailed, NotFound

__all__ = [
    "HELPER",
    "INSTALL_SIZE",
    "KOHAKUMOSS_VERSION",
    "KOHAKUVAULT_PIN",
    "PINS",
    "TORCH_PIN",
    "EnvLocation",
    "HelperFailed",
    "call_helper",
    "install_commands",
    "locate_env",
    "require_env",
]

KOHAKUMOSS_VERSION = "0.1.0"
KOHAKUMOSS_ENV_VARIABLE = "KURA_KOHAKUMOSS_ENV"
KOHAKUVAULT_PIN = "0.9.0"
TORCH_PIN = "2.13.0"
INSTALL_SIZE = "about 1.3 GB, 2–3 minutes"
PINS = (
    f"torch=={TORCH_PIN}",
    f"kohakumoss=={KOHAKUMOSS_VERSION}",
    f"kohakuvault=={KOHAKUVAULT_PIN}",
)
"""What the environment gets, in install order (torch first, on its own)."""
HELPER = Path(__file__).with_name("envhelper.py")
"""The helper module Kura runs with the environment's Python (standard library only at
import)."""


def locate_env(toml_value: str | None = None, workspace_root: Path | None = None) -> EnvLocation:
    """The environment's location by the rules in the module docstring."""
    return _locate(
        variable=KOHAKUMOSS_ENV_VARIABLE,
        toml_value=toml_value,
        workspace_root=workspace_root,
        default_name=f"kohakumoss-{KOHAKUMOSS_VERSION}",
    )


def require_env(location: EnvLocation) -> EnvLocation:
    """``location`` when its Python exists, else a NotFound saying how to make it."""
    if not location.present:
        raise NotFound(
            f"the KohakuMoss environment is not installed at {location.path} "
            f"(chosen by {location.source})",
            hint=f"run `kura backend install kohakumoss` ({INSTALL_SIZE}), or point "
            "KURA_KOHAKUMOSS_ENV / kura.toml executor.kohakumoss_env at an existing one",
            path=location.path,
        )
    return location


def install_commands(
    location: EnvLocation, base_python: str | None = None
) -> tuple[tuple[str, ...], ...]:
    """The argv lists that make the environment, in order (never a shell string)."""
    python = base_python or sys.executable
    env_python = str(location.python)
    pip = (env_python, "-m", "pip", "install", "--disable-pip-version-check")
    torch, *rest = PINS
    return ((python, "-m", "venv", str(location.path)), (*pip, torch), (*pip, *rest))


class HelperFailed(CheckFailed):
    """The helper answered with an error (``kind`` says which class)."""

    def __init__(
        self, message: str, *, kind: str, hint: str = "", path: Path | str | None = None
    ) -> None:
        super().__init__(message, hint=hint, path=path)
        self.kind = kind


JSON = object


def call_helper(
    location: EnvLocation,
    command: str,
    request: Mapping[str, object] | None = None,
    *,
    timeout: float = 600.0,
    runner: Runner = subprocess.run,
) -> JSON:
    """Run ``envhelper.py COMMAND`` with the environment's Python; its ``result``.

    Raises NotFound when the environment is missing, HelperFailed on an error answer,
    KuraError when the helper crashed (its stderr tail in the message)."""
    require_env(location)
    answer = helper_answer(
        location,
        HELPER,
        command,
        dict(request or {}),
        trainer="KohakuMoss",
        doctor="kura doctor kohakumoss",
        timeout=timeout,
        runner=runner,
    )
    if not answer.get("ok"):
        raise HelperFailed(
            f"KohakuMoss: {answer.get('error')}",
            kind=str(answer.get("kind", "")),
            path=location.path,
        )
    result: JSON = answer.get("result")
    return result
