"""The recipe keys a sweep may search on Musubi Tuner, with the values its parser accepts.

Limits are read from Musubi's own code at the pinned release (``MUSUBI_RELEASE``):
``training/parser_common.py`` (``--learning_rate`` float, ``--network_dim`` int,
``--network_alpha`` float, ``--lr_warmup_steps`` int or ratio, ``--max_train_steps`` int,
``--discrete_flow_shift`` float, ``--timestep_sampling`` and ``--weighting_scheme`` choices)
and ``training/trainer_base.py`` (``get_optimizer``: ``AdamW``, ``AdamW8bit``,
``Adafactor`` by name, any other class by dotted path or as a ``torch.optim`` name;
``get_lr_scheduler``: transformers' ``SchedulerType`` names plus ``rex`` and
``piecewise_constant``). Where the parser sets no bound, Kura's run.yaml schema does.
Memory aids (fp8, checkpointing, block swap, micro-batch) are not here: the fit ladder sets
them per trial.

Musubi 0.3.4 has no validation datasets, so it reports no held-out loss.
"""

from __future__ import annotations

from types import MappingProxyType

from kura.backends.base import SearchKey, SearchKeys
from kura.backends.musubi.rules import TIMESTEP_SAMPLINGS, WEIGHTING_SCHEMES

__all__ = ["search_keys"]

_PARSER = "Musubi training/parser_common.py"
_SCHEMA = "Kura run.yaml schema"

SCHEDULERS = (
    "constant",
    "constant_with_warmup",
    "linear",
    "cosine",
    "cosine_with_restarts",
    "cosine_with_min_lr",
    "polynomial",
    "inverse_sqrt",
    "warmup_stable_decay",
    "piecewise_constant",
    "adafactor",
    "rex",
)
"""``--lr_scheduler`` names ``get_lr_scheduler`` resolves (transformers' SchedulerType,
diffusers' piecewise_constant, Musubi's own rex)."""

OPTIMIZERS = ("adamw", "adamw8bit", "adafactor")
"""``get_optimizer``'s built-in names (compared lower-cased)."""

_KEYS = (
    SearchKey(
        "training.learning_rate",
        "float",
        f"{_PARSER} --learning_rate (float); {_SCHEMA} > 0",
        minimum=0.0,
        exclusive_minimum=True,
        maximum=1.0,
    ),
    SearchKey(
        "training.network.rank",
        "int",
        f"{_PARSER} --network_dim (int); {_SCHEMA} 1–1024",
        minimum=1,
        maximum=1024,
    ),
    SearchKey(
        "training.network.alpha",
        "float",
        f"{_PARSER} --network_alpha (float); {_SCHEMA} > 0",
        minimum=0.0,
        exclusive_minimum=True,
        maximum=1024.0,
    ),
    SearchKey(
        "training.optimizer",
        "choice",
        "Musubi training/trainer_base.py get_optimizer (built-ins, or a class by dotted path)",
        choices=OPTIMIZERS,
        open_pattern=r"[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)+",
    ),
    SearchKey(
        "training.scheduler",
        "choice",
        "Musubi training/trainer_base.py get_lr_scheduler",
        choices=SCHEDULERS,
    ),
    SearchKey(
        "training.warmup_steps",
        "int",
        f"{_PARSER} --lr_warmup_steps (int); {_SCHEMA} ≥ 0",
        minimum=0,
    ),
    SearchKey(
        "training.max_steps",
        "int",
        f"{_PARSER} --max_train_steps (int); {_SCHEMA} ≥ 1",
        minimum=1,
    ),
    SearchKey(
        "training.epochs",
        "int",
        f"{_PARSER} --max_train_epochs (int); {_SCHEMA} ≥ 1",
        minimum=1,
    ),
    SearchKey(
        "training.discrete_flow_shift",
        "float",
        f"{_PARSER} --discrete_flow_shift (float)",
        minimum=0.0,
        exclusive_minimum=True,
    ),
    SearchKey(
        "training.timestep_sampling",
        "choice",
        f"{_PARSER} --timestep_sampling choices",
        choices=TIMESTEP_SAMPLINGS,
    ),
    SearchKey(
        "training.weighting_scheme",
        "choice",
        f"{_PARSER} --weighting_scheme choices",
        choices=WEIGHTING_SCHEMES,
    ),
)


def search_keys(architecture: str) -> SearchKeys:
    """The same keys on every Musubi architecture: they are common training arguments."""
    return SearchKeys(
        keys=MappingProxyType({key.key: key for key in _KEYS}),
        heldout_loss=False,
        source="Musubi Tuner's parser and trainer_base at the pinned release",
    )
