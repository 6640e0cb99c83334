"""Render ``docs/musubi-adapters.md`` from the adapter table.

Regenerate with ``python -m kura.backends.musubi.adapter_doc > docs/musubi-adapters.md``;
a test fails when the committed file differs from this rendering.
"""

from __future__ import annotations

from kura.backends.musubi.adapter_model import Adapter, RoleFlag, StepName, Variant
from kura.backends.musubi.adapters import ADAPTERS, MUSUBI_RELEASE, MUSUBI_TAG
from kura.backends.musubi.config import known_keys

__all__ = ["REGENERATE_COMMAND", "render_adapter_doc"]

REGENERATE_COMMAND = "python -m kura.backends.musubi.adapter_doc > docs/musubi-adapters.md"
_STEPS: tuple[StepName, ...] = ("cache_latents", "cache_text_encoder", "train")


def render_adapter_doc() -> str:
    """The whole Markdown document, deterministic."""
    lines = [
        "# Musubi Tuner adapters",
        "",
        f"<!-- Generated from kura.backends.musubi.adapters; do not edit. "
        f"Regenerate: {REGENERATE_COMMAND} -->",
        "",
        f"Kura drives [Musubi Tuner](https://github.com/kohya-ss/musubi-tuner) release "
        f"**{MUSUBI_RELEASE}** (tag `{MUSUBI_TAG}`). Each architecture below is one record of "
        "the adapter table. A model missing here is a configuration task (add a record, or "
        "use `backend.config.command`), not a statement that Musubi lacks it.",
        "",
        "## Summary",
        "",
        "| Kura id | Musubi family | train script | network module | version flag | "
        "data | controls | fp8 | status |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for adapter in ADAPTERS.values():
        lines.append(_summary_row(adapter))
    lines += ["", "## backend.config keys every adapter knows", ""]
    common = known_keys(None)
    shared = {
        k: v
        for k, v in known_keys(ADAPTERS["krea2"]).items()
        if all(k in known_keys(a) for a in ADAPTERS.values())
    }
    for name, (kind, help_text) in sorted({**shared, **common}.items()):
        lines.append(f"- `{name}` ({kind}): {help_text}")
    for adapter in ADAPTERS.values():
        lines += ["", *_section(adapter)]
    return "\n".join(lines) + "\n"


def _summary_row(adapter: Adapter) -> str:
    data = "/".join(
        k for k, ok in (("image", adapter.accepts_image), ("video", adapter.accepts_video)) if ok
    )
    controls = sorted({_controls(v) for v in adapter.variants.values()})
    fp8 = "—" if not adapter.fp8_base else f"base, scaled {adapter.fp8_scaled}"
    return (
        f"| `{adapter.id}` | {adapter.title} | `{adapter.scripts['train']}.py` | "
        f"`{adapter.network_module}` | {_code(adapter.version_flag)} | {data} | "
        f"{'; '.join(controls)} | {fp8} | {adapter.smoke} |"
    )


def _code(value: str | None) -> str:
    return "—" if value is None else f"`{value}`"


def _controls(variant: Variant) -> str:
    if variant.controls is None:
        return "none"
    low, high = variant.controls
    if high is None:
        return f"{low}+"
    return str(low) if low == high else f"{low}–{high}"


def _roles(roles: tuple[RoleFlag, ...]) -> str:
    if not roles:
        return "—"
    return ", ".join(
        f"{r.role} → `{r.flag}`" + ("" if r.required else " (optional)") for r in roles
    )


def _section(adapter: Adapter) -> list[str]:
    lines = [
        f"## `{adapter.id}` — {adapter.title}",
        "",
        f"Upstream doc: `{adapter.doc}`. Status: {adapter.smoke}.",
        "",
        "| step | script | model roles |",
        "|---|---|---|",
    ]
    for step in _STEPS:
        lines.append(
            f"| {step} | `src/musubi_tuner/{adapter.scripts[step]}.py` | "
            f"{_roles(adapter.roles[step])} |"
        )
    lines.append(f"| train, when sampling | | {_roles(adapter.sample_roles)} |")
    also = ", ".join(f"`{m}`" for m in adapter.network_modules_also) or "none"
    lines += [
        "",
        f"- Network module: `{adapter.network_module}` (also: {also})",
        f"- Data: images {'yes' if adapter.accepts_image else 'no'}, video "
        f"{'yes' if adapter.accepts_video else 'no'}"
        + (f", model fps {adapter.model_fps}" if adapter.model_fps else ""),
        f"- fp8: `fp8_base` {'accepted' if adapter.fp8_base else 'refused'}; "
        f"`fp8_scaled` {adapter.fp8_scaled} ({adapter.fp8_source})",
        "- Text-encoder reduction key: "
        + (
            f"`{adapter.text_encoder_fp8.name}` → `{adapter.text_encoder_fp8.flag}` on "
            f"{', '.join(adapter.text_encoder_fp8.steps)}"
            if adapter.text_encoder_fp8
            else "none"
        ),
        f"- Attention: {', '.join(f'`{a}`' for a in adapter.attention)} (`sage_attn` cannot train)",
        f"- Width/height multiple: {adapter.resolution_multiple}"
        + (" (enforced)" if adapter.resolution_multiple > 16 else " (bucketing rounds)"),
        f"- Weight dtype rule: {adapter.weight_dtype_rule}",
        *_run_rules(adapter),
    ]
    if adapter.version_flag:
        lines.append(
            f"- Version flag: `{adapter.version_flag}` on {', '.join(adapter.version_steps)}"
        )
    lines += [
        "",
        "| variant | cache suffix | max blocks_to_swap | controls per item | extra | source |",
        "|---|---|---|---|---|---|",
    ]
    for name, variant in adapter.variants.items():
        lines.append(_variant_row(name, variant))
    if adapter.extra_config:
        lines += ["", "Architecture keys in `backend.config`:", ""]
        for key in adapter.extra_config:
            lines.append(
                f"- `{key.name}` ({key.kind}) → `{key.flag}` on {', '.join(key.steps)}: {key.help}"
            )
    lines += ["", "| default | value | source |", "|---|---|---|"]
    for name, default in sorted(adapter.defaults.items()):
        lines.append(f"| `{name}` | `{default.value!r}` | {default.source} |")
    if adapter.notes:
        lines += ["", *(f"- {note}" for note in adapter.notes)]
    return lines


def _run_rules(adapter: Adapter) -> list[str]:
    """The rules of Musubi's own code Kura applies to this architecture (issue 11)."""
    rules: list[str] = []
    if adapter.split_attn_for:
        rules.append(
            f"- `split_attn` required with {', '.join(f'`{a}`' for a in adapter.split_attn_for)}"
            f" ({adapter.split_attn_source})"
        )
    if adapter.split_attn_for_batch:
        rules.append(
            "- `split_attn` required with micro-batch > 1 and "
            f"{', '.join(f'`{a}`' for a in adapter.split_attn_for_batch)} "
            f"({adapter.split_attn_source})"
        )
    for module, why in adapter.network_modules_refused:
        rules.append(f"- `{module}` refused: {why}")
    lycoris = [m for m in adapter.network_modules_also if m in ("networks.loha", "networks.lokr")]
    if lycoris:
        rules.append(
            f"- {', '.join(f'`{m}`' for m in lycoris)} accepted: networks/network_arch.py "
            "detect_arch_config recognises this DiT's blocks"
        )
    if adapter.network_unchecked is None:
        rules.append(
            "- Network modules checked against Musubi's own `create_arch_network` on its DiT "
            "built on the meta device (tests/backends/musubi/test_musubi_networks.py)"
        )
    else:
        rules.append(f"- Network modules not built against Musubi: {adapter.network_unchecked}")
    rules.append(
        "- Buckets: `enable_bucket` written for every dataset, videos too (Musubi buckets videos "
        "by aspect at caching whatever it says, but its training buckets read it); "
        f"{adapter.resolution_multiple}-pixel bucket steps"
        + (
            " (the plan re-places inspection's 16-pixel buckets at this step)"
            if adapter.resolution_multiple != 16
            else ""
        )
    )
    rules.append(
        "- Items and batches per epoch, frames per item, fps handling and control pairing "
        "checked against Musubi's own dataset code on the golden cases "
        "(tests/backends/musubi/test_musubi_semantics.py)"
    )
    if adapter.accepts_video:
        fps = f"{adapter.model_fps} fps" if adapter.model_fps else "no fps conversion"
        rules.append(
            f"- Video: items per epoch counted as Musubi's VideoDataset makes them; {fps}, "
            "`source_fps` written per dataset (one rate per dataset, frames only dropped)"
            + (
                "; a folder with images too becomes two entries"
                if adapter.accepts_image
                else "; a folder with images too is refused"
            )
        )
    if adapter.framepack_window:
        rules.append(
            f"- FramePack sections: window {adapter.framepack_window} latent frames, at least "
            f"{adapter.framepack_window * 4 + 1} frames per item (shorter clips refused by name)"
        )
    controls = [v for v in adapter.variants.values() if v.controls is not None]
    if controls:
        rules.append(
            "- Control images join the sequence in the memory and time estimate, each costed "
            "at its `control_resolution`'s area (Musubi resizes controls to a bucket of that "
            "area); `no_resize_control` without `control_resolution` warns (controls keep "
            "their own size)"
        )
    defaults = [v.control_resolution for v in adapter.variants.values() if v.control_resolution]
    if defaults:
        rules.append(
            f"- `control_resolution` defaults to [{defaults[0].value}, {defaults[0].value}] "
            f"({defaults[0].source})"
        )
    rules.append(
        "- Sized steps: cache_latents, cache_text_encoder, train"
        + (" (+ sample when sample prompts are set)")
        + (
            f"; text-encoder fp8 aid `{adapter.text_encoder_fp8.name}`"
            if adapter.text_encoder_fp8 and adapter.text_encoder_fp8.kind == "bool"
            else ""
        )
        + (
            "; VAE aids `vae_chunk_size`/`vae_tiling`"
            if any(k.name == "vae_chunk_size" for k in adapter.extra_config)
            else ""
        )
    )
    rules.append(
        "- Attention libraries: `xformers`/`flash_attn`/`flash3` refused on Kura's image "
        "(it installs neither; Musubi does not depend on them)"
    )
    return rules


def _variant_row(name: str | None, variant: Variant) -> str:
    extra = []
    for step, flags in variant.step_flags.items():
        extra.append(f"{step}: {' '.join(flags)}")
    for step, roles in variant.step_roles.items():
        extra.append(f"{step}: {_roles(roles)}")
    if variant.dual_dit_boundary is not None:
        extra.append(f"dual DiT boundary {variant.dual_dit_boundary.value}")
    if not variant.text_encoder_fp8:
        extra.append("no text-encoder fp8")
    if variant.note:
        extra.append(variant.note)
    limit = "unknown" if variant.swap_limit is None else str(variant.swap_limit)
    return (
        f"| {_code(name) if name else '(default)'} | `{variant.cache_suffix}` | {limit} | "
        f"{_controls(variant)} | {'; '.join(extra) or '—'} | {variant.swap_limit_source} |"
    )


if __name__ == "__main__":
    print(render_adapter_doc(), end="")
