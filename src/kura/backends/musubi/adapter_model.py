"""The shape of one Musubi Tuner adapter record: plain, frozen data.

An adapter says, for one Kura architecture, which Musubi scripts run, which flag carries
each model role on each step, which ``--model_version``/``--task`` values exist and what
each changes (cache suffix, block-swap limit, control images), which fp8 modes and
attention backends the trainer accepts, which extra ``backend.config`` keys it knows, and
every default Kura may use together with where that default comes from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "Adapter",
    "ConfigKey",
    "Default",
    "Fp8Scaled",
    "RoleFlag",
    "StepName",
    "Variant",
]

StepName = Literal["cache_latents", "cache_text_encoder", "train"]
Fp8Scaled = Literal["absent", "optional", "required"]
"""How ``--fp8_scaled`` relates to ``--fp8_base`` on the training script.

``absent``: the training script has no ``--fp8_scaled``. ``optional``: it may be added to
``--fp8_base``. ``required``: plain ``--fp8_base`` is refused by the trainer.
"""


@dataclass(frozen=True)
class Default:
    """A value Kura uses when the spec leaves it unset, and where it comes from."""

    value: bool | int | float | str
    source: str


@dataclass(frozen=True)
class RoleFlag:
    """One model role passed to one script as ``flag path``.

    ``required`` roles must be in the compile inputs; the others are passed when the
    caller provides them, and become required when the step needs them (sampling).
    """

    role: str
    flag: str
    required: bool = True


@dataclass(frozen=True)
class ConfigKey:
    """An architecture-specific ``backend.config`` key and the flag it becomes."""

    name: str
    kind: Literal["bool", "int", "str"]
    flag: str
    steps: tuple[StepName, ...]
    help: str
    choices: tuple[str, ...] = ()


@dataclass(frozen=True)
class Variant:
    """What one ``--model_version`` / ``--task`` value (or the only variant) changes.

    ``controls`` is ``None`` when control images are refused, otherwise the inclusive
    (min, max) number of control images per item; ``max`` ``None`` means no upper bound.
    ``swap_limit`` ``None`` means Kura cannot know the limit before the model is loaded.
    """

    cache_suffix: str
    swap_limit: int | None
    swap_limit_source: str
    controls: tuple[int, int | None] | None = None
    step_flags: dict[StepName, tuple[str, ...]] = field(default_factory=dict)
    step_roles: dict[StepName, tuple[RoleFlag, ...]] = field(default_factory=dict)
    dual_dit_boundary: Default | None = None
    text_encoder_fp8: bool = True
    control_resolution: Default | None = None
    """The ``control_resolution`` Kura writes when the dataset sets none (and does not
    keep controls unresized)."""
    note: str = ""
    sample_image: str | None = None
    """Why every sample prompt must name a start image (``--i``): the trainer asserts it or
    opens it (its source); None when a prompt needs none."""


@dataclass(frozen=True)
class Adapter:
    """Everything Kura knows about driving one Musubi architecture family."""

    id: str
    title: str
    doc: str
    scripts: dict[StepName, str]
    network_module: str
    network_modules_also: tuple[str, ...]
    roles: dict[StepName, tuple[RoleFlag, ...]]
    sample_roles: tuple[RoleFlag, ...]
    version_flag: str | None
    version_steps: tuple[StepName, ...]
    variants: dict[str | None, Variant]
    fp8_base: bool
    fp8_scaled: Fp8Scaled
    fp8_source: str
    text_encoder_fp8: ConfigKey | None
    attention: tuple[str, ...]
    accepts_image: bool
    accepts_video: bool
    model_fps: int | None
    resolution_multiple: int
    weight_dtype_rule: Literal["none", "match_mixed_precision"]
    extra_config: tuple[ConfigKey, ...]
    defaults: dict[str, Default]
    notes: tuple[str, ...] = ()
    smoke: str = "command generation checked, training smoke pending"
    split_attn_for: tuple[str, ...] = ()
    """Attention backends that crash (or are documented to) without ``--split_attn``."""
    split_attn_for_batch: tuple[str, ...] = ()
    """Attention backends that need ``--split_attn`` when the micro-batch is over 1."""
    split_attn_source: str = ""
    network_modules_refused: tuple[tuple[str, str], ...] = ()
    """Modules Musubi has but cannot build for this architecture, with the reason."""
    network_unchecked: str | None = None
    """Why Musubi's network builders could not be run on this architecture's DiT (built on
    the meta device by tests/backends/musubi/test_musubi_networks.py); None when they ran."""
    framepack_window: int | None = None
    """FramePack's latent window (``fp_latent_window_size``): items are cached as sections
    of this many latent frames."""
