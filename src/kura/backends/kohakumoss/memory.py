"""Memory for KohakuMoss: its own estimator, its own memory settings as the ladder's options.

The device peak per step is KohakuMoss's ``estimate(workload(knobs), resolve(profile))``
(asked through the helper; no GPU needed). The fit ladder's options are KohakuMoss's VRAM
layers (each sets MEMORY_PROFILE, MAX_TOKENS and the encoder placement), smaller
MAX_TOKENS, and the four named profiles, each with what it costs.

Host RAM has no estimator in KohakuMoss; its README gives figures for the named MOSS
variants (``HOST_RAM``), which Kura adds to the plan. The calibration table holds the
README's measured nvidia-smi peaks (``CALIBRATION``); ``calibrate`` states by how much the
estimate differs from them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kura.backends.kohakumoss.queries import MemoryEstimate, MemoryOption

__all__ = [
    "AIDS",
    "BAND",
    "CALIBRATION",
    "HOST_RAM",
    "LAYER_PROFILES",
    "PROFILE_ORDER",
    "Calibration",
    "HostRam",
    "MossMemoryAid",
    "band",
    "calibrate",
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

BAND = (0.85, 1.10)
"""The estimate's band as fractions of it: the README's measured nvidia-smi step peaks lie
between −15 % and +6 % of KohakuMoss's estimate for the rows in ``CALIBRATION``."""


def band(estimate_gib: float) -> tuple[float, float]:
    return estimate_gib * BAND[0], estimate_gib * BAND[1]


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


def calibration_options() -> tuple[MemoryOption, ...]:
    """The README's setups as estimator options (the base arch, r32, 1 MP)."""
    return tuple(
        MemoryOption(
            c.name,
            None,
            {
                "MEMORY_PROFILE": c.profile,
                "MAX_TOKENS": c.max_tokens,
                "DIM": 32,
                "TARGET_AREA": 1024 * 1024,
                "BATCHING": "tokens",
                "ARCH_OVERRIDES": {},
            },
        )
        for c in CALIBRATION
    )


def calibrate(rows: Sequence[MemoryEstimate]) -> tuple[tuple[Calibration, float], ...]:
    """(cell, estimate ÷ measured midpoint − 1) per calibration cell found in ``rows``."""
    by_name = {r.name: r for r in rows}
    out = []
    for cell in CALIBRATION:
        row = by_name.get(cell.name)
        if row is None or row.error:
            continue
        mid = (cell.measured_low_gib + cell.measured_high_gib) / 2
        out.append((cell, row.total_gib / mid - 1.0))
    return tuple(out)
