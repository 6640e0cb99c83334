"""`kura gpus` and `kura estimate`: GPU facts and the memory/time calculator."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from kura.cli._output import new_table
from kura.cli.state import AppState

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["estimate_command", "gpus_command", "render_estimate"]


@click.command("gpus")
@click.pass_obj
def gpus_command(state: AppState) -> None:
    """GPU classes Kura can plan for (memory, speed, prices seen), and this machine's GPUs."""
    from kura.planning.detect import detect_gpus
    from kura.planning.gpus import GPU_CLASSES
    from kura.planning.host import host_facts

    gpus = []
    for gpu in GPU_CLASSES.values():
        offer = gpu.cheapest_offer()
        gpus.append(
            {
                "id": gpu.id,
                "name": gpu.name,
                "memory_gib": gpu.memory_gib,
                "bf16_tflops": gpu.bf16_tflops,
                "fp8": gpu.fp8,
                "pcie_gbs": gpu.pcie_gbs,
                "usd_per_hour": offer.usd_per_hour if offer else None,
                "price_seen": offer.price_seen if offer else None,
                "cloud_types": [f"{o.provider}:{o.type_id}" for o in gpu.offers],
            }
        )
    doc = {
        "kind": "gpus",
        "gpus": gpus,
        "local": [g.to_dict() for g in detect_gpus()],
        "host": host_facts(".").to_dict(),
    }
    state.out.result(doc, _render_gpus)


def _render_gpus(console: Console, doc: dict[str, Any]) -> None:
    table = new_table("id", "name", "GiB", "bf16 TFLOPS", "fp8", "$/h", box=None)
    for gpu in doc["gpus"]:
        price = f"{gpu['usd_per_hour']:.2f}" if gpu["usd_per_hour"] else "-"
        table.add_row(
            gpu["id"],
            gpu["name"],
            f"{gpu['memory_gib']:g}",
            f"{gpu['bf16_tflops']:g}",
            "yes" if gpu["fp8"] else "no",
            price,
        )
    console.print(table)
    local = doc["local"]
    console.print(
        "this machine: "
        + (", ".join(f"{g['name']} ({g['memory_gib']:.0f} GiB)" for g in local) or "no GPU")
        + f"; {doc['host']['ram_total_gib']} GiB RAM, {doc['host']['disk_free_gib']:.0f} GiB free"
    )


@click.command("estimate")
@click.option("--base", required=True, help="Model bundle id (`kura model bundles`).")
@click.option("--resolution", default="1024", show_default=True, help="W or WxH.")
@click.option("--frames", type=int, default=1, show_default=True, help="Video frames (4n+1).")
@click.option("--batch", type=int, default=1, show_default=True, help="Micro-batch per GPU.")
@click.option("--rank", type=int, default=32, show_default=True)
@click.option("--optimizer", default="adamw8bit", show_default=True)
@click.option("--precision", type=click.Choice(["bf16", "fp16"]), default="bf16", show_default=True)
@click.option(
    "--fp8", type=click.Choice(["none", "base", "scaled"]), default="none", show_default=True
)
@click.option("--swap", type=int, default=0, show_default=True, help="blocks_to_swap.")
@click.option("--h2d", is_flag=True, help="Host-to-device-only block swap.")
@click.option(
    "--checkpointing",
    type=click.Choice(["off", "on", "cpu-offload"]),
    default="off",
    show_default=True,
)
@click.option(
    "--attention", type=click.Choice(["sdpa", "flash", "xformers", "sage"]), default="sdpa"
)
@click.option("--split-attn", is_flag=True)
@click.option("--gpu", "gpu_id", help="GPU class (`kura gpus`); omitted: no fit verdict.")
@click.pass_obj
def estimate_command(
    state: AppState, base: str, resolution: str, gpu_id: str | None, **knobs: Any
) -> None:
    """What-if calculator: peak memory, step time and fit for a configuration, without a run."""
    from kura.backends.musubi.estimation import estimator_model
    from kura.backends.musubi.estimator.config import EstimateConfig
    from kura.backends.musubi.estimator.estimate import estimate
    from kura.cli.dataset import parse_resolution
    from kura.models.bundles import get_bundle
    from kura.planning.gpus import get_gpu_class

    width, height = parse_resolution(resolution) or (1024, 1024)
    config = EstimateConfig.at_resolution(
        estimator_model(get_bundle(base)),
        width,
        height,
        frames=knobs["frames"],
        micro_batch=knobs["batch"],
        rank=knobs["rank"],
        optimizer=knobs["optimizer"],
        precision=knobs["precision"],
        fp8=knobs["fp8"],
        blocks_to_swap=knobs["swap"],
        swap_h2d_only=knobs["h2d"],
        gradient_checkpointing=knobs["checkpointing"],
        attention=knobs["attention"],
        split_attn=knobs["split_attn"],
    )
    result = estimate(config, get_gpu_class(gpu_id) if gpu_id else None)
    state.out.result(result.to_dict(), render_estimate)


def render_estimate(console: Console, doc: dict[str, Any]) -> None:
    """The human view of a `run-estimate` document."""
    verdict = {True: "[green]fits[/]", False: "[red]does not fit[/]", None: "no GPU named"}
    console.print(
        f"{doc['model']}: peak {doc['peak_vram_gib']:.1f} ± {doc['band_gib'] / 2:.1f} GiB"
        f" — {verdict[doc['fits']]}"
        + (f" on {doc['gpu']} ({doc['usable_gib']:.1f} GiB usable)" if doc.get("gpu") else "")
    )
    parts = ", ".join(f"{k} {v:.1f}" for k, v in doc["breakdown"].items() if isinstance(v, float))
    console.print(f"[dim]breakdown (GiB): {parts}[/]")
    if doc.get("step_seconds"):
        hours = f", {doc['total_hours']:.1f} h in all" if doc.get("total_hours") else ""
        console.print(
            f"{doc['step_seconds']:.2f} s per step{hours}; host RAM {doc['host_ram_gib']:.0f} GiB"
        )
    console.print(f"[dim]confidence: {doc['confidence']}[/]")
