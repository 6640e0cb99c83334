"""Calling ``envhelper.py`` in Musubi's environment: JSON in, JSON out, one subprocess."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kura.backends.trainer_env import EnvLocation
from kura.errors import CheckFailed, KuraError, NotFound

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
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "FORCE_COLOR")}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONDONTWRITEBYTECODE="1")
    try:
        done = subprocess.run(
            [str(location.python), str(HELPER), command],
            input=json.dumps(dict(request)),
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=cwd,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired as err:
        raise KuraError(f"the Musubi helper `{command}` ran past {timeout:.0f} s") from err
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    if done.returncode != 0 or not lines:
        tail = "\n".join(done.stderr.strip().splitlines()[-12:])
        raise KuraError(
            f"the Musubi helper `{command}` failed (exit {done.returncode}):\n{tail}",
            hint="run `kura doctor musubi`; reinstall with `kura backend install musubi "
            "--source DIR --force`",
            path=location.path,
        )
    answer = json.loads(lines[-1])
    if not isinstance(answer, dict) or not answer.get("ok"):
        error = answer.get("error") if isinstance(answer, dict) else answer
        raise CheckFailed(f"Musubi helper `{command}`: {error}", path=location.path)
    return answer.get("result")
