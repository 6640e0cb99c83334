"""What AI-Toolkit's own examples, UI presets and config classes give a run
(``kura/data/knowledge/ai-toolkit.yaml``), and the tasks it trains on a bundle (its own
bundles only: an edit model trains on edit pairs alone, a video model on images and videos)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kura.backends.knowledge_data import trainer_knowledge

if TYPE_CHECKING:
    from kura.backends.base import TrainerKnowledge
    from kura.models.bundles import Bundle

__all__ = ["BACKEND_NAME", "aitk_knowledge", "aitk_tasks"]

BACKEND_NAME = "ai-toolkit"
IMAGE_TASKS = ("character", "style", "concept")


def aitk_knowledge(architecture: str) -> TrainerKnowledge:
    return trainer_knowledge(BACKEND_NAME, architecture)


def aitk_tasks(bundle: Bundle) -> tuple[str, ...]:
    """``paired-edit`` for an edit model (every dataset needs its control folder), image
    tasks (and ``video`` for a video model) otherwise; none for a bundle that is not
    AI-Toolkit's (compile refuses it, naming the AI-Toolkit bundle)."""
    from kura.backends.aitoolkit.archs import model_for

    model = model_for(bundle.id)
    if model is None or bundle.backend != BACKEND_NAME:
        return ()
    if model.control:
        return ("paired-edit",)
    return (*IMAGE_TASKS, "video") if model.video else IMAGE_TASKS
