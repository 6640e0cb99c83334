"""What Musubi Tuner's own docs and code give a run (``kura/data/knowledge/musubi-tuner.yaml``),
and the tasks it trains on a bundle (from the adapter table: image and video datasets, and
edit pairs where the variant takes control images)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kura.backends.knowledge_data import trainer_knowledge

if TYPE_CHECKING:
    from kura.backends.base import TrainerKnowledge
    from kura.models.bundles import Bundle

__all__ = ["BACKEND_NAME", "musubi_knowledge", "musubi_tasks"]

BACKEND_NAME = "musubi-tuner"
IMAGE_TASKS = ("character", "style", "concept")


def musubi_knowledge(architecture: str) -> TrainerKnowledge:
    return trainer_knowledge(BACKEND_NAME, architecture)


def musubi_tasks(bundle: Bundle) -> tuple[str, ...]:
    """Image tasks where the adapter takes images and the variant does not require control
    images; ``paired-edit`` where the variant takes them; ``video`` where the adapter takes
    videos. None for a bundle laid out for another trainer, marked unsupported, or of a
    variant Kura's adapter table lacks (compile would refuse it)."""
    from kura.backends.musubi.adapters import adapter_for

    if bundle.backend != BACKEND_NAME or not bundle.supported:
        return ()
    adapter = adapter_for(bundle.architecture)
    if adapter is None:
        return ()
    version = next(
        (
            str(bundle.trainer[k])
            for k in ("model_version", "task", "model_type")
            if k in bundle.trainer
        ),
        None,
    )
    variant = adapter.variants.get(version)
    if variant is None:
        return ()
    tasks: list[str] = []
    controls = variant.controls
    if adapter.accepts_image and (controls is None or controls[0] == 0):
        tasks += IMAGE_TASKS
    if controls is not None:
        tasks.append("paired-edit")
    if adapter.accepts_video:
        tasks.append("video")
    return tuple(tasks)
