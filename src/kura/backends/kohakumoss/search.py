"""The recipe keys a sweep may search on KohakuMoss, with the values its checker accepts.

Kura maps them onto KohakuMoss's knobs (``kura.backends.kohakumoss.knobs``): learning rate
→ ``LR``, rank → ``DIM``, alpha → ``ALPHA``, steps → ``STEPS``. KohakuMoss's own validator
(``training/knobs.py validate``) refuses ``STEPS ≤ 0`` and a warmup at or past ``STEPS``;
the other bounds are Kura's run.yaml schema. KohakuMoss trains by steps, so epochs are not a
key. Memory profiles are the fit ladder's, never an axis. KohakuMoss reports a held-out
loss: Kura compiles run.yaml ``validation`` into its ``VALIDATION`` datasets, validated at the
last step (``kura.backends.kohakumoss.validation``), and reads ``val_loss`` back.
"""

from __future__ import annotations

from types import MappingProxyType

from kura.backends.base import SearchKey, SearchKeys

__all__ = ["search_keys"]

_SCHEMA = "Kura run.yaml schema"

_KEYS = (
    SearchKey(
        "training.learning_rate",
        "float",
        f"KohakuMoss LR; {_SCHEMA} > 0",
        minimum=0.0,
        exclusive_minimum=True,
        maximum=1.0,
    ),
    SearchKey(
        "training.network.rank",
        "int",
        f"KohakuMoss DIM; {_SCHEMA} 1–1024",
        minimum=1,
        maximum=1024,
    ),
    SearchKey(
        "training.network.alpha",
        "float",
        f"KohakuMoss ALPHA; {_SCHEMA} > 0",
        minimum=0.0,
        exclusive_minimum=True,
        maximum=1024.0,
    ),
    SearchKey(
        "training.max_steps",
        "int",
        "KohakuMoss STEPS (its validator: STEPS > 0)",
        minimum=1,
    ),
)


def search_keys(architecture: str) -> SearchKeys:
    del architecture
    return SearchKeys(
        keys=MappingProxyType({k.key: k for k in _KEYS}),
        heldout_loss=True,
        source="KohakuMoss's knob checker and Kura's run.yaml schema",
    )
