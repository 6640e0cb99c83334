"""Environment variables Kura reads, read in this one place."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "TRAINER_ENV_VARIABLES",
    "cache_dir",
    "data_dir",
    "debug_enabled",
    "lock_timeout_seconds",
    "trainer_env_override",
]


def debug_enabled() -> bool:
    """``KURA_DEBUG=1`` makes the CLI show full tracebacks."""
    return os.environ.get("KURA_DEBUG", "") not in ("", "0", "false")


def cache_dir() -> Path:
    """Where Kura keeps per-user caches (digests, stat facts): ``KURA_CACHE_DIR`` or the
    platform's user cache folder."""
    override = os.environ.get("KURA_CACHE_DIR")
    if override:
        return Path(override)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("kura"))


def lock_timeout_seconds() -> float:
    """How long a Kura process waits for the workspace lock (``KURA_LOCK_TIMEOUT``)."""
    raw = os.environ.get("KURA_LOCK_TIMEOUT", "30")
    try:
        return max(0.0, float(raw))
    except ValueError:
        return 30.0


def data_dir() -> Path:
    """Where Kura keeps per-user data it installs (trainer environments): the platform's
    user data folder."""
    from platformdirs import user_data_dir

    return Path(user_data_dir("kura"))


TRAINER_ENV_VARIABLES = ("KURA_MUSUBI_ENV", "KURA_AITK_ENV", "KURA_KOHAKUMOSS_ENV")
"""The variables that name a trainer's environment folder, over kura.toml and the default
under :func:`data_dir` (``kura.backends.trainer_env``)."""


def trainer_env_override(variable: str) -> Path | None:
    """The folder one of :data:`TRAINER_ENV_VARIABLES` names (None when unset or empty)."""
    if variable not in TRAINER_ENV_VARIABLES:
        raise ValueError(f"{variable} is not a trainer environment variable")
    raw = os.environ.get(variable, "")
    return Path(raw).expanduser() if raw else None
