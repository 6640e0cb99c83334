"""The recipe keys a sweep may search on AI-Toolkit, with the values its code accepts.

Choices are the names AI-Toolkit resolves at the pinned commit (``toolkit/optimizer.py``
``get_optimizer``, ``toolkit/scheduler.py`` ``get_lr_scheduler``, the flow-matching
``timestep_type`` values), as Kura's compiler already enforces them
(:mod:`kura.backends.aitoolkit.compile`). Numbers carry Kura's run.yaml bounds: AI-Toolkit
reads them with ``dict.get`` and checks none. Lengths are steps (AI-Toolkit trains by
steps). Memory aids (quantize, offloading, checkpointing, micro-batch) are never here.

Kura does not compile validation datasets for AI-Toolkit, so it reports no held-out loss.
"""

from __future__ import annotations

from types import MappingProxyType

from kura.backends.aitoolkit.compile import OPTIMIZERS, SCHEDULERS, TIMESTEP_TYPES
from kura.backends.base import SearchKey, SearchKeys

__all__ = ["search_keys"]

_READ = "AI-Toolkit reads it unchecked (dict.get); Kura's run.yaml schema bounds it"

_KEYS = (
    SearchKey(
        "training.learning_rate",
        "float",
        f"train.lr: {_READ}, > 0",
        minimum=0.0,
        exclusive_minimum=True,
        maximum=1.0,
    ),
    SearchKey(
        "training.network.rank",
        "int",
        f"network.linear: {_READ}, 1–1024",
        minimum=1,
        maximum=1024,
    ),
    SearchKey(
        "training.optimizer",
        "choice",
        "toolkit/optimizer.py get_optimizer names",
        choices=OPTIMIZERS,
    ),
    SearchKey(
        "training.scheduler",
        "choice",
        "toolkit/scheduler.py get_lr_scheduler names",
        choices=SCHEDULERS,
    ),
    SearchKey(
        "training.max_steps",
        "int",
        f"train.steps: {_READ}, ≥ 1",
        minimum=1,
    ),
    SearchKey(
        "training.timestep_sampling",
        "choice",
        "TrainConfig.timestep_type values",
        choices=TIMESTEP_TYPES,
    ),
)


def search_keys(architecture: str) -> SearchKeys:
    """The searchable keys; ``network.alpha`` is left out because the PEFT-format models
    ignore it (alpha = rank), so searching it would change nothing there."""
    del architecture
    return SearchKeys(
        keys=MappingProxyType({k.key: k for k in _KEYS}),
        heldout_loss=False,
        source="AI-Toolkit's optimizer and scheduler tables at the pinned commit",
    )
