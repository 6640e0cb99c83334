"""The container a Musubi run needs: image, GPUs, mounts, environment.

The image (``docker/Dockerfile`` in this package, built by ``kura image build musubi``)
holds Musubi at the pinned release under ``IMAGE_MUSUBI_DIR`` and a Hugging Face cache with
the tokenizers Musubi fetches at run time under ``IMAGE_HF_HOME``; runs set
``HF_HUB_OFFLINE=1`` so nothing is downloaded.
Mounts name the container side only; the executor supplies the host side.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from kura.backends.base import ImageRecipe
from kura.backends.container_mounts import run_mounts, unique_mounts
from kura.backends.musubi.adapters import MUSUBI_RELEASE
from kura.backends.musubi.contract import CompileInputs, ContainerSpec, Mount
from kura.backends.musubi.sample_inputs import sample_inputs
from kura.schema.run import RunSpec

if TYPE_CHECKING:
    from kura.workspace import Workspace

__all__ = [
    "DEFAULT_IMAGE",
    "DOCKERFILE",
    "HOST_ENV",
    "IMAGE_HF_HOME",
    "IMAGE_MUSUBI_DIR",
    "RUN_ENV",
    "container_spec",
    "image_recipe",
]

DEFAULT_IMAGE = f"kura/musubi-tuner:{MUSUBI_RELEASE}"
IMAGE_MUSUBI_DIR = "/opt/musubi-tuner"
IMAGE_HF_HOME = "/opt/hf-home"
RUN_ENV = {"HF_HUB_OFFLINE": "1"}
"""Environment of every step: no network look-ups at run time."""
HOST_ENV = {"TRANSFORMERS_OFFLINE": "1", "PYTHONDONTWRITEBYTECODE": "1"}
"""What a host step from the trainer environment adds: transformers offline as well, and no
``__pycache__`` written beside the checkout's scripts (the checkout may be read-only, or a
user's clean tree)."""
DOCKERFILE = Path(__file__).with_name("docker") / "Dockerfile"


def image_recipe(workspace: Workspace | None) -> ImageRecipe:
    """The Musubi image at the pinned release, tagged as kura.toml's ``musubi_image``."""
    tag = workspace.config().executor.musubi_image if workspace else DEFAULT_IMAGE
    return ImageRecipe(
        backend="musubi-tuner",
        tag=tag,
        dockerfile=DOCKERFILE,
        context=DOCKERFILE.parent,
        release=MUSUBI_RELEASE,
    )


def container_spec(spec: RunSpec, inputs: CompileInputs) -> ContainerSpec:
    """Image, GPU count, mounts (data, models and the sample prompts' files read-only) and
    environment."""
    mounts = run_mounts(inputs, writable=("cache", "output", "logs"), holds="dataset.toml, prompts")
    mounts += sample_inputs(spec).mounts
    mounts.append(Mount(IMAGE_HF_HOME, True, "Hugging Face tokenizer cache", baked=True))
    return ContainerSpec(
        image=inputs.container_image or DEFAULT_IMAGE,
        gpus=spec.execution.gpus,
        workdir=inputs.trainer_dir,
        mounts=unique_mounts(mounts),
        env={**RUN_ENV, "HF_HOME": IMAGE_HF_HOME},
    )
