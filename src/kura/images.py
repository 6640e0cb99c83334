"""Container images: the Musubi image is built from the Dockerfile Kura ships."""

from __future__ import annotations

import shutil
import subprocess
from importlib import resources
from typing import Any

from kura.errors import Unsupported

__all__ = ["RELEASE_LABEL", "build_image", "dockerfile_path", "image_release"]

RELEASE_LABEL = "org.kura.musubi-release"
"""Image label recording the Musubi release an image was built from."""


def dockerfile_path(name: str) -> str:
    return str(resources.files("kura").joinpath(f"data/docker/{name}/Dockerfile"))


def build_image(name: str, *, image: str | None, run: bool) -> dict[str, Any]:
    """The exact ``docker build`` argv; run it when asked (output goes to the terminal)."""
    from kura.backends.musubi import DEFAULT_IMAGE, MUSUBI_RELEASE

    tag = image or DEFAULT_IMAGE
    dockerfile = dockerfile_path(name)
    context = dockerfile.rsplit("/", 1)[0]
    argv = [
        "docker",
        "build",
        "-t",
        tag,
        "-f",
        dockerfile,
        "--label",
        f"org.kura.musubi-release={MUSUBI_RELEASE}",
        context,
    ]
    exit_code = None
    if run:
        if shutil.which("docker") is None:
            raise Unsupported("docker is not installed", hint="install Docker Engine, then retry")
        exit_code = subprocess.run(argv, check=False).returncode
    return {"kind": "image-build", "image": tag, "argv": argv, "ran": run, "exit_code": exit_code}


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
    """The Musubi release label of a local image; None when the image is not there.

    Raises :class:`Unsupported` when docker itself is missing."""
    import json

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
    return str(labels.get(RELEASE_LABEL, "unknown"))
