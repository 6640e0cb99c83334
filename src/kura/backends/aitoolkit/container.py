"""The container an AI-Toolkit run needs (``docker/Dockerfile`` in this package, built by
``kura image build ai-toolkit``).

The image holds AI-Toolkit at the pinned commit under ``IMAGE_AITK_DIR``. AI-Toolkit
fetches text encoders, VAEs and adapters from the Hugging Face Hub itself (by repository
id), so its runs are not offline: what it downloads lands in the container's ``HF_HOME``
and goes with the container (the host executor keeps the user's cache). ``HF_TOKEN`` is
passed through by name for gated repositories, never written.
"""

from __future__ import annotations

from pathlib import Path

from kura.backends.aitoolkit.archs import AITK_RELEASE
from kura.backends.base import CompileInputs, ContainerSpec, ImageRecipe
from kura.backends.container_mounts import run_mounts, unique_mounts
from kura.schema.run import RunSpec

__all__ = [
    "DEFAULT_IMAGE",
    "DOCKERFILE",
    "IMAGE_AITK_DIR",
    "IMAGE_HF_HOME",
    "container_spec",
    "image_recipe",
]

DEFAULT_IMAGE = f"kura/ai-toolkit:{AITK_RELEASE}"
IMAGE_AITK_DIR = "/opt/ai-toolkit"
IMAGE_HF_HOME = "/opt/hf-home"
DOCKERFILE = Path(__file__).with_name("docker") / "Dockerfile"


def image_recipe() -> ImageRecipe:
    """The AI-Toolkit image at the pinned commit (the tag every compiled run names)."""
    return ImageRecipe(
        backend="ai-toolkit",
        tag=DEFAULT_IMAGE,
        dockerfile=DOCKERFILE,
        context=DOCKERFILE.parent,
        release=AITK_RELEASE,
    )


def container_spec(spec: RunSpec, inputs: CompileInputs) -> ContainerSpec:
    """Image, GPU count, mounts (datasets, models and the sample prompts' control images
    read-only, the run writable)."""
    from kura.backends.aitoolkit.archs import model_for
    from kura.backends.aitoolkit.samples import sample_prompts

    mounts = run_mounts(inputs, writable=("output", "data", "logs"), holds="job file")
    model = model_for(inputs.bundle or "")
    if model is not None:
        mounts += sample_prompts(spec, model).mounts
    return ContainerSpec(
        image=DEFAULT_IMAGE,
        gpus=spec.execution.gpus,
        workdir=IMAGE_AITK_DIR,
        mounts=unique_mounts(mounts),
        env={"HF_HOME": IMAGE_HF_HOME, "PYTHONUNBUFFERED": "1"},
    )
