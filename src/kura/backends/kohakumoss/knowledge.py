"""What KohakuMoss's own preset layers, train script and README give a run
(``kura/data/knowledge/kohakumoss.yaml``), and the tasks it trains on a bundle (images with
captions: its data sources carry no control images and no video)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kura.backends.knowledge_data import trainer_knowledge

if TYPE_CHECKING:
    from kura.backends.base import TrainerKnowledge
    from kura.models.bundles import Bundle

__all__ = ["BACKEND_NAME", "moss_knowledge", "moss_tasks"]

BACKEND_NAME = "kohakumoss"


def moss_knowledge(architecture: str) -> TrainerKnowledge:
    return trainer_knowledge(BACKEND_NAME, architecture)


def moss_tasks(bundle: Bundle) -> tuple[str, ...]:
    if bundle.backend != BACKEND_NAME or not bundle.supported:
        return ()
    return ("character", "style", "concept")
