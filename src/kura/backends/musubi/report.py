"""plan.md's "Trainer" section for a Musubi run: which install runs it, and which steps a
person's command replaced (the CPU text-encoder stand-in named as such)."""

from __future__ import annotations

import posixpath
from pathlib import Path
from typing import Any

from kura.backends.base import CompileInputs
from kura.backends.musubi.adapters import MUSUBI_RELEASE
from kura.backends.musubi.config import ESCAPE_HATCH_KEYS
from kura.backends.trainer_env import EnvLocation, read_env_record
from kura.errors import KuraError
from kura.schema.run import RunSpec

__all__ = ["STANDIN_NAME", "trainer_section"]

STANDIN_NAME = "cpu_standin.py"
_STEP_OF_KEY = {
    "cache_latents_command": "cache_latents",
    "cache_text_encoder_command": "cache_text_encoder",
    "command": "train",
}


def trainer_section(spec: RunSpec, inputs: CompileInputs | None) -> dict[str, Any] | None:
    """``{title, lines}`` for plan.md; None when the compile inputs are not known."""
    if inputs is None:
        return None
    lines = [_install_line(inputs)]
    for key in ESCAPE_HATCH_KEYS:
        command = spec.backend.config.get(key)
        if isinstance(command, list):
            lines.append(_replaced_line(_STEP_OF_KEY[key], [str(part) for part in command]))
    return {"title": "Trainer", "lines": lines}


def _install_line(inputs: CompileInputs) -> str:
    if inputs.container_image is not None:
        return (
            f"docker image {inputs.container_image}: Musubi Tuner {MUSUBI_RELEASE} at "
            f"{inputs.trainer_dir} inside it"
        )
    if inputs.trainer_bin is None:
        return f"host: Musubi Tuner at {inputs.trainer_dir}, executables from PATH"
    env = posixpath.dirname(inputs.trainer_bin)
    line = (
        f"host: the environment {env} ({posixpath.join(inputs.trainer_bin, 'python')}, "
        f"{posixpath.join(inputs.trainer_bin, 'accelerate')}) running the checkout "
        f"{inputs.trainer_dir}"
    )
    try:
        record = read_env_record(EnvLocation(Path(env), "plan"))
    except KuraError:
        record = None
    if record is not None and record.packages:
        line += f"; installed by Kura with {', '.join(record.packages)}"
    return line


def _replaced_line(step: str, command: list[str]) -> str:
    if any(posixpath.basename(part) == STANDIN_NAME for part in command):
        return (
            f"{step}: Kura's CPU stand-in (kura.backends.musubi.cpu_standin), not Musubi's "
            "shipped step: Musubi's own script with the text encoder replaced by seeded "
            "random embeddings; the LoRA learns nothing about the captions"
        )
    return f"{step}: replaced by a person's command (escape hatch), not checked by Kura"
