"""Calling ``envhelper.py`` in Musubi's environment: JSON in, JSON out, one subprocess."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kura.backends.trainer_env import EnvLocation, helper_answer
from kura.errors import CheckFailed, NotFound

__all__ = ["HELPER", "call_helper"]

HELPER = Path(__file__).with_name("envhelper.py")


def call_helper(
    location: EnvLocation,
    command: str,
    request: Mapping[str, object],
    *,
    cwd: Path | None = None,
    timeout: float = 600.0,
) -> Any:
    """``envhelper.py COMMAND`` with the environment's Python; its ``result``. NotFound when
    the environment is missing, CheckFailed on an error answer, KuraError on a crash."""
    if not location.present:
        raise NotFound(
            f"no Musubi Tuner environment at {location.path} (chosen by {location.source})",
            hint="run `kura backend install musubi --source DIR`",
            path=location.path,
        )
    answer = helper_answer(
        location,
        HELPER,
        command,
        request,
        trainer="Musubi",
        doctor="kura doctor musubi",
        extra_env={"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
        cwd=cwd,
        timeout=timeout,
    )
    if not answer.get("ok"):
        raise CheckFailed(f"Musubi helper `{command}`: {answer.get('error')}", path=location.path)
    return answer.get("result")
