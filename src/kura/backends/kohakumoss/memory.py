"""Memory for KohakuMoss: its own estimator, its own memory settings as the ladder's options.

The device peak per step is KohakuMoss's ``estimate(workload(knobs), resolve(profile))``
(asked through the helper; no GPU needed). The fit ladder's options are KohakuMoss's VRAM
layers (each sets MEMORY_PROFILE, MAX_TOKENS and the encoder placement), smaller
MAX_TOKENS, and the four named profiles, each with what it costs.

Host RAM has no estimator in KohakuMoss; its README gives figures for the named MOSS
variants (``HOST_RAM``), which Kura adds to the plan. The calibration table holds the
README's measured nvidia-smi peaks (``CALIBRATION``); ``calibrate`` states by how much the
estimate differs from them, and :func:`band` turns the same cells into the band the plan
uses, so the band always contains every measurement the plan prints.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kura.backends.kohakumoss.knobs import KnobValue
from kura.backends.kohakumoss.queries import MemoryEstimate, MemoryOption
from kura.errors import CheckFailed

__all__ = [
    "AIDS",
    "CALIBRATION",
    "HOST_RAM",
    "LAYER_PROFILES",
    "PROFILE_ORDER",
    "README_SETUP",
    "Band",
    "Calibration",
    "HostRam",
    "MossMemoryAid",
    "band",
    "calibrate",
    "calibration_line",
    "calibration_options",
    "host_ram",
    "ladder_options",
]

README = "KohakuMoss 0.1.0 README (METADATA), §Memory profiles and VRAM"

PROFILE_ORDER = ("speed", "balanced", "low", "minimal")
"""KohakuMoss's named profiles, most resident first (``memory/profiles.py ORDER``; its
``auto_plan`` takes the first that fits)."""

LAYER_PROFILES: Mapping[str, str] = {
    "24g": "balanced",
    "16g": "low",
    "12g": "ckpt-stream4-actoff-optstream-gradoff",
    "8g": "minimal",
    "6g": "ckpt-stream2-actoff-optcpu-gradoff",
    "auto": "auto",
}
"""MEMORY_PROFILE each adapter VRAM layer of KohakuMoss 0.1.0 sets (``configs/moss/vram``),
so a failure's diagnosis names the next profile without asking the environment; the real-run
test checks this table against the installed layers."""


@dataclass(frozen=True)
class MossMemoryAid:
    """One memory setting the fit ladder may take, cheapest first (KohakuMoss's names)."""

    name: str
    rung: int
    keys: tuple[str, ...]
    levels: tuple[str | int, ...]
    saves: str
    costs: str


AIDS: tuple[MossMemoryAid, ...] = (
    MossMemoryAid(
        "vram_layer",
        1,
        ("MEMORY_PROFILE", "MAX_TOKENS", "TEXT_ENCODE", "VAE_ENCODE"),
        ("24g", "16g", "12g", "8g", "6g"),
        "streams DiT blocks from host RAM, offloads activations/gradients/AdamW states",
        "speed (3090, LoRA r32: balanced 0.39 samples/s, minimal 0.37) and host RAM "
        "(8g: ~19 GiB during steps, ~32 GiB at build)",
    ),
    MossMemoryAid(
        "max_tokens",
        2,
        ("MAX_TOKENS",),
        (12288, 8192, 6144, 4352, 2048),
        "fewer joint tokens per batch: activations shrink linearly",
        "fewer samples per step (more steps for the same epochs); samples longer than "
        "MAX_TOKENS are dropped or cut (OVERLONG)",
    ),
    MossMemoryAid(
        "memory_profile",
        3,
        ("MEMORY_PROFILE",),
        ("speed", "balanced", "low", "minimal"),
        "checkpointing, fewer resident blocks, host optimizer states",
        "recompute and host↔device transfers each step",
    ),
)


def ladder_options(stack_root: Path, vram_layers: Sequence[str]) -> tuple[MemoryOption, ...]:
    """The options to estimate: every installed adapter VRAM layer, then the named
    profiles and token budgets over the compiled config."""
    options = [
        MemoryOption(f"vram_{name}", stack_root / "configs" / "moss" / "vram" / f"vram_{name}.py")
        for name in AIDS[0].levels
        if name in vram_layers
    ]
    options += [MemoryOption(f"profile {p}", None, {"MEMORY_PROFILE": p}) for p in AIDS[2].levels]
    options += [MemoryOption(f"MAX_TOKENS {t}", None, {"MAX_TOKENS": t}) for t in AIDS[1].levels]
    return tuple(options)


@dataclass(frozen=True)
class HostRam:
    steps_gib: float | None
    build_gib: float | None
    source: str


HOST_RAM: Mapping[str, HostRam] = {
    "streamed": HostRam(19.0, 32.0, f"{README}: the 8g layer, DiT on the host"),
    "full": HostRam(70.0, 88.0, f"{README}: single-GPU full finetune"),
}


def host_ram(
    *, named_variant: bool, full_ft: bool, profile: str, text_encoder_at_build: bool
) -> HostRam:
    """Host RAM for a plan: the README's figures for the named MOSS variants; unknown for
    another shape (a custom or tiny DiT). Without sample prompts and with both caches
    offline the text encoder never loads, so the build peak is the steps figure."""
    if not named_variant:
        return HostRam(None, None, "not a named MOSS variant: KohakuMoss publishes no figure")
    row = HOST_RAM["full" if full_ft else "streamed"]
    if profile == "speed" and not full_ft:
        return HostRam(None, None, "resident weights: the README gives no host figure")
    build = row.build_gib if text_encoder_at_build else row.steps_gib
    return HostRam(row.steps_gib, build, row.source)


@dataclass(frozen=True)
class Calibration:
    """One measured README cell: LoRA r32 at 1 MP, latent + text cache."""

    name: str
    profile: str
    max_tokens: int
    measured_low_gib: float
    measured_high_gib: float
    gpus: str


CALIBRATION: tuple[Calibration, ...] = (
    Calibration("balanced 8192", "balanced", 8192, 8.82, 9.54, "3090, 2080 Ti, T10, 5090 (steps)"),
    Calibration("minimal 8192", "minimal", 8192, 3.45, 4.06, "3090, 2080 Ti, T10, 5090 (steps)"),
)
"""nvidia-smi peaks during the steps (Windows/WDDM 4090 rows left out: they report the card's
use above idle, not the process's)."""

_CELL_NAMES = frozenset(c.name for c in CALIBRATION)


README_SETUP: Mapping[str, KnobValue] = {
    "VARIANT": "base",
    "ARCH_OVERRIDES": {},
    "ALGO": "lora",
    "DIM": 32,
    "OPTIMIZER": "adamw",
    "EMA": 0.0,
    "PRECISION": "bf16",
    "GRAD_ACC": 1,
    "PARALLEL": "none",
    "MEMORY_OVERRIDES": {},
    "TARGET_AREA": 1024 * 1024,
    "BATCHING": "tokens",
    "MAX_TEXT_TOKENS": 4096,
}
"""Every knob KohakuMoss's ``workload`` reads, set as the README's measured cells ran: the
base DiT, LoRA r32 at 1 MP, the release stack's AdamW in bf16 on one GPU (``base_lora``,
``algo_lora``, ``precision_bf16``), the script's own MAX_TEXT_TOKENS. So a calibration
cell's estimate is the same whatever the run sets (a full finetune, another optimizer)."""


def calibration_options() -> tuple[MemoryOption, ...]:
    """The README's setups as estimator options (:data:`README_SETUP` per cell)."""
    return tuple(
        MemoryOption(
            c.name,
            None,
            {**README_SETUP, "MEMORY_PROFILE": c.profile, "MAX_TOKENS": c.max_tokens},
        )
        for c in CALIBRATION
    )


def calibrate(rows: Sequence[MemoryEstimate]) -> tuple[tuple[Calibration, float], ...]:
    """(cell, KohakuMoss's estimate in GiB) per calibration cell estimated in ``rows``."""
    by_name = {r.name: r for r in rows}
    out = []
    for cell in CALIBRATION:
        row = by_name.get(cell.name)
        if row is not None and not row.error:
            out.append((cell, row.total_gib))
    return tuple(out)


def calibration_line(cell: Calibration, estimate_gib: float) -> str:
    """One calibration cell as the plan prints it, measured as fractions of the estimate
    (the terms of :class:`Band`)."""
    low, high = cell.measured_low_gib / estimate_gib, cell.measured_high_gib / estimate_gib
    return (
        f"{cell.name} (LoRA r32, 1 MP, base arch): estimate {estimate_gib:.2f} GiB vs "
        f"measured {cell.measured_low_gib:.2f}–{cell.measured_high_gib:.2f} GiB nvidia-smi "
        f"({cell.gpus}): {low * 100 - 100:+.0f} % … {high * 100 - 100:+.0f} % of the estimate"
    )


@dataclass(frozen=True)
class Band:
    """Where the device peak is expected, as fractions of KohakuMoss's estimate.

    ``measured_low``/``measured_high`` are the lowest and highest measured ÷ estimated
    ratio over the calibration cells: every measured peak the plan prints lies between
    them. ``low`` is ``measured_low``; ``high`` is ``measured_high``, but never below 1:
    the fit is never decided below KohakuMoss's own figure, even where every measurement
    came in under it."""

    low: float
    high: float
    measured_low: float
    measured_high: float

    def centre(self, estimate_gib: float) -> float:
        """The band's middle for an estimate: what the plan shows as the peak."""
        return estimate_gib * (self.low + self.high) / 2

    def upper(self, estimate_gib: float) -> float:
        """The band's top for an estimate: what the fit compares with usable memory."""
        return estimate_gib * self.high

    def width(self, estimate_gib: float) -> float:
        return estimate_gib * (self.high - self.low)

    def contains(self, cell: Calibration, estimate_gib: float) -> bool:
        """True when ``cell``'s measured range lies in the band around ``estimate_gib``."""
        return (
            self.low * estimate_gib <= cell.measured_low_gib
            and cell.measured_high_gib <= self.high * estimate_gib
        )

    def describe(self) -> str:
        """The band as the plan prints it."""
        line = (
            f"band used: {self.low * 100 - 100:+.0f} % … {self.high * 100 - 100:+.0f} % of "
            f"the estimate: the measured peaks above lie at {self.measured_low * 100 - 100:+.0f}"
            f" % … {self.measured_high * 100 - 100:+.0f} % of its estimates"
        )
        if self.high > self.measured_high:
            line += (
                "; its top is the estimate itself (Kura never fits a run below KohakuMoss's "
                "own figure)"
            )
        return f"{line} ({README})"


def band(rows: Sequence[MemoryEstimate]) -> Band:
    """The band from the calibration cells estimated in ``rows`` (the same rows the plan
    prints); CheckFailed when KohakuMoss estimated none of them."""
    cells = calibrate(rows)
    if not cells:
        errors = "; ".join(
            f"{r.name}: {r.error}" for r in rows if r.error and r.name in _CELL_NAMES
        )
        raise CheckFailed(
            "KohakuMoss's estimator gave no figure for its README's measured setups, so the "
            "plan has no calibrated band" + (f" ({errors})" if errors else ""),
            hint="check the environment with `kura doctor kohakumoss`",
        )
    lows = [cell.measured_low_gib / estimate for cell, estimate in cells]
    highs = [cell.measured_high_gib / estimate for cell, estimate in cells]
    return Band(min(lows), max(1.0, max(highs)), min(lows), max(highs))
