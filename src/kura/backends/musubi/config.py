"""Reading ``backend.config``: known keys per adapter, types, and adapter defaults.

An unknown key is an error that names the key and lists the keys this architecture
knows. A key the spec leaves unset takes the adapter's default (each with a source);
nothing else is filled in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kura.backends.musubi.adapter_model import Adapter, ConfigKey
from kura.errors import SpecError

__all__ = ["ESCAPE_HATCH_KEYS", "ExecConfig", "check_command", "read_exec_config"]

ESCAPE_HATCH_KEYS = ("command", "cache_latents_command", "cache_text_encoder_command")

# name -> (kind, help). Kinds: bool, int, str, argv.
_COMMON: dict[str, tuple[str, str]] = {
    "batch_size": ("int", "micro-batch per GPU (dataset TOML batch_size)"),
    "gradient_accumulation_steps": ("int", "micro-batches per optimizer step"),
    "mixed_precision": ("str", "bf16 | fp16 | no"),
    "gradient_checkpointing": ("bool", "recompute activations to save VRAM"),
    "gradient_checkpointing_cpu_offload": ("bool", "offload checkpointed activations"),
    "blocks_to_swap": ("int", "DiT blocks kept on the CPU"),
    "use_pinned_memory_for_block_swap": ("bool", "pinned host memory for block swap"),
    "block_swap_h2d_only": ("bool", "host-to-device-only block swap (LoRA only)"),
    "block_swap_ring_size": ("int", "GPU ring buffers for H2D-only swap"),
    "attention": ("str", "attention backend"),
    "split_attn": ("bool", "attention per sample (needed by some backends at batch > 1)"),
    "max_data_loader_n_workers": ("int", "data loader workers"),
    "persistent_data_loader_workers": ("bool", "keep loader workers between epochs"),
    "num_cpu_threads_per_process": ("int", "accelerate CPU threads per process"),
    "command": ("argv", "escape hatch: the train argv, replacing the generated one"),
    "cache_latents_command": ("argv", "escape hatch: the latent-cache argv"),
    "cache_text_encoder_command": ("argv", "escape hatch: the text-encoder-cache argv"),
}
_MIXED_PRECISION = ("bf16", "fp16", "no")
DIT_EXPERTS = ("low", "high")
"""``backend.config.dit_expert``: train one Wan 2.2 expert alone (docs/wan.md)."""
_RANGES: dict[str, int] = {
    "batch_size": 1,
    "gradient_accumulation_steps": 1,
    "blocks_to_swap": 0,
    "block_swap_ring_size": 1,
    "max_data_loader_n_workers": 0,
    "num_cpu_threads_per_process": 1,
    "num_layers": 1,
}


@dataclass(frozen=True)
class ExecConfig:
    """``backend.config`` after checking, with adapter defaults applied."""

    batch_size: int
    gradient_accumulation_steps: int
    mixed_precision: str
    gradient_checkpointing: bool
    gradient_checkpointing_cpu_offload: bool
    fp8_base: bool
    fp8_scaled: bool
    blocks_to_swap: int
    use_pinned_memory_for_block_swap: bool
    block_swap_h2d_only: bool
    block_swap_ring_size: int | None
    attention: str
    split_attn: bool
    max_data_loader_n_workers: int
    persistent_data_loader_workers: bool
    num_cpu_threads_per_process: int
    arch_keys: tuple[tuple[ConfigKey, Any], ...]
    commands: dict[str, tuple[str, ...]]
    dit_expert: str | None = None


def known_keys(adapter: Adapter | None) -> dict[str, tuple[str, str]]:
    """Every ``backend.config`` key this architecture accepts, with kind and help."""
    keys = dict(_COMMON)
    if adapter is None:
        return {k: keys[k] for k in ESCAPE_HATCH_KEYS}
    if adapter.fp8_base:
        keys["fp8_base"] = ("bool", "DiT weights in fp8")
    if adapter.fp8_scaled != "absent":
        keys["fp8_scaled"] = ("bool", "scaled fp8 (with fp8_base)")
    if any(v.dual_dit_boundary is not None for v in adapter.variants.values()):
        keys["dit_expert"] = ("str", "low | high: train that one expert alone (dual-DiT models)")
    extra = list(adapter.extra_config)
    if adapter.text_encoder_fp8 is not None:
        extra.append(adapter.text_encoder_fp8)
    for key in extra:
        keys[key.name] = (key.kind, key.help)
    return keys


def _arch_key(adapter: Adapter, name: str) -> ConfigKey | None:
    extra = list(adapter.extra_config)
    if adapter.text_encoder_fp8 is not None:
        extra.append(adapter.text_encoder_fp8)
    return next((k for k in extra if k.name == name), None)


def check_command(name: str, value: Any) -> tuple[str, ...]:
    """An escape-hatch command must be a non-empty list of strings."""
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise SpecError(
            f"backend.config.{name} must be a non-empty list of strings (an argv), "
            f"got {type(value).__name__}",
            hint=f'write it as a YAML list, e.g. {name}: ["accelerate", "launch", …]',
        )
    return tuple(value)


def _check_value(name: str, kind: str, value: Any) -> Any:
    where = f"backend.config.{name}"
    if kind == "bool":
        if not isinstance(value, bool):
            raise SpecError(f"{where} must be true or false, got {value!r}", hint=f"set {where}")
        return value
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise SpecError(f"{where} must be an integer, got {value!r}", hint=f"set {where}")
        low = _RANGES.get(name, 0)
        if value < low:
            raise SpecError(f"{where} must be ≥ {low}, got {value}", hint=f"set {where} ≥ {low}")
        return value
    if kind == "str":
        if not isinstance(value, str):
            raise SpecError(f"{where} must be a string, got {value!r}", hint=f"set {where}")
        return value
    return check_command(name, value)


def read_exec_config(adapter: Adapter, config: dict[str, Any]) -> ExecConfig:
    """Check every key of ``backend.config`` against the adapter; apply its defaults."""
    keys = known_keys(adapter)
    unknown = sorted(set(config) - set(keys))
    if unknown:
        raise SpecError(
            f"unknown backend.config key(s) for {adapter.id}: {', '.join(unknown)}",
            hint=_unknown_hint(adapter, unknown, keys),
        )
    values = {name: _check_value(name, keys[name][0], v) for name, v in config.items()}

    def pick(name: str) -> Any:
        if name in values:
            return values[name]
        return adapter.defaults[name].value

    mixed = pick("mixed_precision")
    if mixed not in _MIXED_PRECISION:
        raise SpecError(
            f"backend.config.mixed_precision must be one of {', '.join(_MIXED_PRECISION)}, "
            f"got {mixed!r}",
            hint="bf16 is what every Musubi example uses",
        )
    arch_keys = []
    for name in sorted(values):
        key = _arch_key(adapter, name)
        if key is None:
            continue
        if key.choices and values[name] not in key.choices:
            raise SpecError(
                f"backend.config.{name} must be one of {', '.join(key.choices)}, "
                f"got {values[name]!r}",
                hint=key.help,
            )
        arch_keys.append((key, values[name]))
    return ExecConfig(
        batch_size=pick("batch_size"),
        gradient_accumulation_steps=pick("gradient_accumulation_steps"),
        mixed_precision=mixed,
        gradient_checkpointing=pick("gradient_checkpointing"),
        gradient_checkpointing_cpu_offload=values.get("gradient_checkpointing_cpu_offload", False),
        fp8_base=values.get("fp8_base", False),
        fp8_scaled=values.get("fp8_scaled", False),
        blocks_to_swap=values.get("blocks_to_swap", 0),
        use_pinned_memory_for_block_swap=values.get("use_pinned_memory_for_block_swap", False),
        block_swap_h2d_only=values.get("block_swap_h2d_only", False),
        block_swap_ring_size=values.get("block_swap_ring_size"),
        attention=pick("attention"),
        split_attn=values.get("split_attn", False),
        max_data_loader_n_workers=pick("max_data_loader_n_workers"),
        persistent_data_loader_workers=pick("persistent_data_loader_workers"),
        num_cpu_threads_per_process=pick("num_cpu_threads_per_process"),
        arch_keys=tuple(arch_keys),
        commands={k: values[k] for k in ESCAPE_HATCH_KEYS if k in values},
        dit_expert=_dit_expert(values.get("dit_expert")),
    )


def _dit_expert(value: str | None) -> str | None:
    if value is not None and value not in DIT_EXPERTS:
        raise SpecError(
            f"backend.config.dit_expert must be one of {', '.join(DIT_EXPERTS)}, got {value!r}",
            hint="low trains the low-noise expert (dit), high the high-noise one; drop the "
            "key to train both",
        )
    return value


_TE_FP8_ALIASES = ("fp8_llm", "fp8_t5", "fp8_vl", "fp8_text_encoder", "fp8_te", "quantized_qwen")


def _unknown_hint(adapter: Adapter, unknown: list[str], keys: dict[str, tuple[str, str]]) -> str:
    parts = []
    if any(u in _TE_FP8_ALIASES or u == "text_cache_dtype" for u in unknown):
        te = adapter.text_encoder_fp8
        parts.append(
            f"{adapter.id}'s text-encoder fp8 key is `{te.name}`"
            if te is not None
            else f"{adapter.id} has no text-encoder fp8 option"
        )
    if any(u in ("fp8_base", "fp8_scaled") for u in unknown):
        parts.append(f"{adapter.id} does not take {', '.join(u for u in unknown if 'fp8' in u)}")
    parts.append(f"keys {adapter.id} knows: {', '.join(sorted(keys))}")
    return "; ".join(parts)
