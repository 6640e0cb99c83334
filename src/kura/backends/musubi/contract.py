"""The compiler's inputs (resolved by the caller) and its output, ``CompiledRun``.

All paths are as the trainer sees them (inside the container for the docker executor).
The compiled files are meant to be written under ``<CompileInputs.run_dir>/compiled/``: the
steps refer to ``<run_dir>/compiled/dataset.toml`` and ``…/compiled/sample_prompts.txt``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "CompileInputs",
    "CompiledRun",
    "ContainerSpec",
    "DatasetInput",
    "Mount",
    "Step",
]


@dataclass(frozen=True)
class DatasetInput:
    """One dataset of the run, resolved from the workspace by the caller.

    ``control_count`` is the number of control images per item when the caller knows it
    (from inspection); ``source_fps`` the frame rate of the source videos, if known.
    """

    name: str
    media_dir: str
    caption_ext: str
    control_dir: str | None
    kind: Literal["image", "video"]
    control_count: int | None = None
    source_fps: float | None = None


@dataclass(frozen=True)
class CompileInputs:
    """Facts the compiler needs besides the run spec.

    ``weight_dtypes`` maps a role to the dtype of its weight file (``bf16``, ``fp16``,
    ``fp8``) where the bundle table knows it; Wan and HunyuanVideo 1.5 check mixed
    precision against the DiT's. ``container_image`` overrides the default image name.
    """

    architecture: str
    model_version: str | None
    model_paths: dict[str, str]
    datasets: list[DatasetInput]
    run_dir: str
    musubi_dir: str
    weight_dtypes: dict[str, str] = field(default_factory=dict)
    container_image: str | None = None


@dataclass(frozen=True)
class Step:
    """One process to run: an argv list (never a shell string), its env and cwd."""

    name: Literal["cache_latents", "cache_text_encoder", "train"]
    argv: tuple[str, ...]
    env: dict[str, str]
    cwd: str
    generated: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "argv": list(self.argv),
            "env": dict(sorted(self.env.items())),
            "cwd": self.cwd,
            "generated": self.generated,
        }


@dataclass(frozen=True)
class Mount:
    """A path the container needs; the caller supplies the host side."""

    target: str
    read_only: bool
    purpose: str
    baked: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "read_only": self.read_only,
            "purpose": self.purpose,
            "baked": self.baked,
        }


@dataclass(frozen=True)
class ContainerSpec:
    """The image, GPU request, mounts and environment a container executor needs."""

    image: str
    gpus: int
    workdir: str
    mounts: tuple[Mount, ...]
    env: dict[str, str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "image": self.image,
            "gpus": self.gpus,
            "workdir": self.workdir,
            "mounts": [m.to_dict() for m in self.mounts],
            "env": dict(sorted(self.env.items())),
        }


@dataclass(frozen=True)
class CompiledRun:
    """Everything needed to run one Musubi training: files, steps, container."""

    files: dict[str, str]
    steps: tuple[Step, ...]
    container: ContainerSpec
    warnings: tuple[str, ...]
    escape_hatch: bool
    musubi_release: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "musubi_release": self.musubi_release,
            "files": dict(sorted(self.files.items())),
            "steps": [s.to_dict() for s in self.steps],
            "container": self.container.to_dict(),
            "warnings": list(self.warnings),
            "escape_hatch": self.escape_hatch,
        }
