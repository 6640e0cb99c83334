"""A tiny SDXL model AI-Toolkit trains on a CPU in seconds, for the demo and the real-run
tests.

:func:`build_tiny` runs :mod:`.tinybuilder` with the AI-Toolkit environment's Python (Kura
imports neither torch nor diffusers) and writes a random SDXL diffusers pipeline of about
1.1 M parameters into a folder; :func:`tiny_settings` are the ``--set`` values of
``kura run new`` that train it on the CPU with the run's own checkout of AI-Toolkit: the
diffusers-folder bundle (:data:`TINY_BASE`) pointed at the folder, fp32 (bf16 runs on a
CPU too, about 25 times slower a step), no hub access, no sampling, four steps of a rank-4 LoRA.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from kura.backends.trainer_env import EnvLocation
from kura.errors import KuraError, NotFound

__all__ = [
    "BUILDER",
    "TINY_BASE",
    "TINY_SETTINGS",
    "TinyPipeline",
    "UnetModule",
    "build_tiny",
    "tiny_settings",
]

BUILDER = Path(__file__).with_name("tinybuilder.py")
TINY_BASE = "aitk-sdxl-base-1.0"
"""The bundle whose DiT role is a diffusers folder (AI-Toolkit's ``from_pretrained`` path)."""
TINY_SETTINGS: tuple[str, ...] = (
    "execution.executor=host",
    "training.max_steps=4",
    "training.epochs=null",
    "training.network.rank=4",
    "training.network.alpha=4",
    "training.optimizer=adamw",
    "training.learning_rate=0.001",
    "training.warmup_steps=0",
    "training.sample_prompts=[]",
    "training.save_precision=fp32",
    "backend.config.dtype=fp32",
    "backend.config.offline=true",
)
"""A CPU-sized AI-Toolkit run of the tiny model: four steps, rank 4, fp32, offline."""

Runner = Callable[..., "subprocess.CompletedProcess[str]"]


@dataclass(frozen=True)
class UnetModule:
    """One module of the tiny UNet as torch names it (``kernel`` for convolutions)."""

    name: str
    kind: str
    kernel: tuple[int, ...] | None


@dataclass(frozen=True)
class TinyPipeline:
    """The folder :func:`build_tiny` wrote and what its builder reported."""

    root: Path
    parameters: Mapping[str, int]
    unet_modules: tuple[UnetModule, ...]


def tiny_settings(root: Path) -> tuple[str, ...]:
    """``--set`` values for ``kura run new --base TINY_BASE`` on the folder ``root``."""
    return (f"model.paths.dit={root}", *TINY_SETTINGS)


def build_tiny(
    location: EnvLocation,
    out: Path,
    *,
    seed: int = 0,
    runner: Runner = subprocess.run,
    timeout: float = 600.0,
) -> TinyPipeline:
    """Write the tiny pipeline into ``out`` with the environment's Python (NotFound when the
    environment is missing, KuraError with the builder's error when it fails)."""
    if not location.present:
        raise NotFound(
            f"AI-Toolkit's environment is not installed at {location.path}",
            hint="run `kura backend install ai-toolkit --source DIR`",
            path=location.path,
        )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    try:
        done = runner(
            [str(location.python), str(BUILDER), str(out), "--seed", str(seed)],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as error:
        raise KuraError(f"the tiny SDXL builder ran past {timeout:.0f} s") from error
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = "\n".join(done.stderr.strip().splitlines()[-10:])
        raise KuraError(
            f"the tiny SDXL builder failed (exit {done.returncode}):\n{tail}",
            hint="run `kura doctor ai-toolkit` to check the environment",
            path=location.path,
        )
    report = json.loads(lines[-1])
    return TinyPipeline(
        root=Path(report["root"]),
        parameters={str(k): int(v) for k, v in report["parameters"].items()},
        unet_modules=tuple(
            UnetModule(str(name), str(kind), tuple(kernel) if kernel else None)
            for name, kind, kernel in report["unet_modules"]
        ),
    )
