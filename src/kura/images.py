"""Container images: ``kura image build BACKEND`` and the release label launch reads back.

Which Dockerfile, tag and release an image has is the backend's (``Backend.image``, an
:class:`~kura.backends.base.ImageRecipe`); this module only runs Docker. Every image Kura
builds is labelled with the backend's name and the trainer release it holds, and the launch
gate refuses an image whose release is not the one the run was compiled for.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from kura.errors import Unsupported
from kura.nextsteps import NextStep, next_list

if TYPE_CHECKING:
    from kura.backends.base import ImageRecipe

__all__ = [
    "BACKEND_LABEL",
    "RELEASE_LABEL",
    "ImageBuild",
    "build_argv",
    "build_image",
    "image_release",
]

RELEASE_LABEL = "org.kura.release"
"""Image label recording the trainer release an image was built from."""
BACKEND_LABEL = "org.kura.backend"
"""Image label recording the backend (``backend.name``) an image was built for."""
_OLDER_RELEASE_LABEL = re.compile(r"org\.kura\.[a-z0-9-]+-release")
"""The per-trainer release label images built by earlier Kura versions carry
(``org.kura.<trainer>-release``): the same fact under its older name."""


def build_argv(recipe: ImageRecipe) -> list[str]:
    """The exact ``docker build`` of ``recipe``, labelled with its backend and release."""
    return [
        "docker",
        "build",
        "-t",
        recipe.tag,
        "-f",
        str(recipe.dockerfile),
        "--label",
        f"{BACKEND_LABEL}={recipe.backend}",
        "--label",
        f"{RELEASE_LABEL}={recipe.release}",
        str(recipe.context),
    ]


@dataclass(frozen=True)
class ImageBuild:
    """``kura image build``: the ``docker build`` of a backend's image (``argv``), whether
    it ``ran`` and docker's exit code when it did."""

    backend: str
    image: str
    release: str
    argv: tuple[str, ...]
    ran: bool
    exit_code: int | None
    next: tuple[NextStep, ...] = ()

    kind: ClassVar[str] = "image-build"

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "backend": self.backend,
            "image": self.image,
            "release": self.release,
            "argv": list(self.argv),
            "ran": self.ran,
            "exit_code": self.exit_code,
            "next": next_list(*self.next),
        }


def build_image(recipe: ImageRecipe, *, run: bool) -> ImageBuild:
    """The build of ``recipe``; run when asked (docker's output to the terminal)."""
    argv = build_argv(recipe)
    exit_code = None
    if run:
        if shutil.which("docker") is None:
            raise Unsupported("docker is not installed", hint="install Docker Engine, then retry")
        exit_code = subprocess.run(argv, check=False).returncode
    return ImageBuild(
        backend=recipe.backend,
        image=recipe.tag,
        release=recipe.release,
        argv=tuple(argv),
        ran=run,
        exit_code=exit_code,
    )


_UNREACHABLE = (
    "cannot connect to the docker daemon",
    "is the docker daemon running",
    "error during connect",
    "permission denied while trying to connect",
)


def _engine_unreachable(stderr: str) -> bool:
    """Whether docker's error says the engine is unreachable (not that the image is absent)."""
    text = stderr.lower()
    return any(marker in text for marker in _UNREACHABLE)


def image_release(image: str) -> str | None:
    """The trainer release label of a local image (``unknown`` when it has none); None when
    the image is not there.

    Raises :class:`Unsupported` when docker itself is missing or its engine does not answer."""
    if shutil.which("docker") is None:
        raise Unsupported("docker is not installed", hint="install Docker Engine, then retry")
    try:
        inspected = subprocess.run(
            ["docker", "image", "inspect", image, "--format", "{{json .Config.Labels}}"],
            capture_output=True,
            text=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        raise Unsupported(
            "no Docker engine answered within 30 s (`docker image inspect` timed out)",
            hint="start Docker (`systemctl start docker`, or Docker Desktop) and retry",
        ) from None
    except OSError as exc:
        raise Unsupported(f"docker cannot be run: {exc}", hint="check the Docker install") from None
    if inspected.returncode != 0:
        if _engine_unreachable(inspected.stderr):
            raise Unsupported(
                "no Docker engine: " + inspected.stderr.strip().splitlines()[-1],
                hint="start Docker (`systemctl start docker`, or Docker Desktop), or check "
                "DOCKER_HOST and your permission on the docker socket, then retry",
            )
        return None
    labels = json.loads(inspected.stdout or "null") or {}
    if RELEASE_LABEL in labels:
        return str(labels[RELEASE_LABEL])
    older = [str(v) for k, v in labels.items() if _OLDER_RELEASE_LABEL.fullmatch(str(k))]
    return older[0] if len(older) == 1 else "unknown"
