"""`kura gpus` and `kura estimate`: GPU facts and the memory/time calculator."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from kura.cli._output import new_table
from kura.cli.state import AppState

if TYPE_CHECKING:
    from rich.console import Console

    from kura.planning.gpu_list import GpuList
    from kura.runs.estimate import RunEstimate
    from kura.runs.whatif import WhatIfEstimate

__all__ = ["estimate_command", "gpus_command", "render_estimate"]


@click.command("gpus")
@click.pass_obj
def gpus_command(state: AppState) -> None:
    """GPU classes Kura can plan for (memory, speed, prices seen), and this machine's GPUs."""
    from kura.planning.gpu_list import list_gpus

    state.out.result(list_gpus("."), _render_gpus)


def _render_gpus(console: Console, listed: GpuList) -> None:
    table = new_table("id", "name", "GiB", "bf16 TFLOPS", "fp8", "$/h", box=None)
    for gpu in listed.gpus:
        price = f"{gpu.usd_per_hour:.2f}" if gpu.usd_per_hour else "-"
        table.add_row(
            gpu.id,
            gpu.name,
            f"{gpu.memory_gib:g}",
            f"{gpu.bf16_tflops:g}",
            "yes" if gpu.fp8 else "no",
            price,
        )
    console.print(table)
    host = listed.host
    console.print(
        "this machine: "
        + (", ".join(f"{g.name} ({g.memory_gib:.0f} GiB)" for g in listed.local) or "no GPU")
        + f"; {host.ram_total_gib} GiB RAM, {host.disk_free_gib:.0f} GiB free"
    )


@click.command("estimate")
@click.option("--base", required=True, help="Model bundle id (`kura model bundles`).")
@click.option("--backend", "backend", default=None, help="Trainer (default: the bundle's backend).")
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="KEY=VALUE",
    help="backend.config.KEY=VALUE (the trainer's own settings, checked against the keys it "
    "reads) or training.KEY=VALUE; repeatable.",
)
@click.option("--resolution", default="1024", show_default=True, help="W or WxH.")
@click.option("--frames", type=int, default=1, show_default=True, help="Video frames (4n+1).")
@click.option(
    "--batch",
    type=int,
    default=1,
    show_default=True,
    help="Effective batch (training.effective_batch); the micro-batch is a backend.config key.",
)
@click.option("--rank", type=int, default=32, show_default=True)
@click.option("--optimizer", default="adamw8bit", show_default=True)
@click.option(
    "--steps", type=int, default=1000, show_default=True, help="Optimizer steps the time covers."
)
@click.option("--gpu", "gpu_id", help="GPU class (`kura gpus`); omitted: no fit verdict.")
@click.option("--step", "step", default=None, help="Show one step (its name in the output).")
@click.pass_obj
def estimate_command(
    state: AppState,
    base: str,
    backend: str | None,
    sets: tuple[str, ...],
    resolution: str,
    frames: int,
    batch: int,
    rank: int,
    optimizer: str,
    steps: int,
    gpu_id: str | None,
    step: str | None,
) -> None:
    """What-if calculator: every step's memory, time and fit for a configuration, from the
    backend's own estimate (the one `kura run plan` uses), without a run."""
    from kura.cli.dataset import parse_resolution
    from kura.runs.whatif import WhatIf, estimate_whatif

    width, height = parse_resolution(resolution) or (1024, 1024)
    question = WhatIf(
        base=base,
        width=width,
        height=height,
        backend=backend,
        frames=frames,
        batch=batch,
        rank=rank,
        optimizer=optimizer,
        steps=steps,
        sets=sets,
        gpu=gpu_id,
        step=step,
    )
    from kura.cli._output import and_next
    from kura.cli.nexts import after_whatif, followed

    estimate = followed(estimate_whatif(question), after_whatif)
    state.out.result(estimate, and_next(render_estimate))


def _gib(value: Any) -> str:
    return "-" if value is None else f"{value:.1f}"


def _seconds(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value / 3600:.1f} h" if value >= 3600 else f"{value:.0f} s"


def render_estimate(console: Console, estimate: RunEstimate | WhatIfEstimate) -> None:
    """The human view of a `run-estimate` result: every step's cost with its source, and
    the verdict of the worst step."""
    table = new_table("step", "kind", "peak GiB", "upper GiB", "host RAM GiB", "time", "fits")
    marks = {True: "[green]yes[/]", False: "[red]no[/]", None: "-"}
    for cost in estimate.steps:
        table.add_row(
            cost.step,
            cost.kind,
            _gib(cost.peak_gib),
            _gib(cost.upper_gib),
            _gib(cost.host_ram_gib),
            _seconds(cost.seconds),
            marks[cost.fits],
        )
    console.print(table)
    for cost in estimate.steps:
        console.print(f"[dim]{cost.step}: source {cost.source}[/]", soft_wrap=True)
        for note in cost.notes:
            console.print(f"[dim]{cost.step}: {note}[/]")
    found = estimate.verdict
    worst = f" (worst step: {found.worst_step})" if found.worst_step else ""
    if found.fits is True:
        line = f"[green]fits[/]{worst}"
    elif found.fits is False:
        line = f"[red]does not fit[/]{worst}"
    elif found.unsized:
        line = f"[yellow]cannot size[/] {', '.join(found.unsized)}: no fit verdict"
    else:
        line = "no GPU named: no fit verdict"
    document = estimate.estimate  # the backend's own keys
    gpu = estimate.gpu
    usable = document.get("usable_gib")
    on = f" on {gpu}" + (f" ({usable:.1f} GiB usable)" if usable else "") if gpu else ""
    console.print(f"{line}{on}")
    breakdown = document.get("breakdown")
    parts = (
        ", ".join(f"{k} {v:.1f}" for k, v in breakdown.items() if isinstance(v, float))
        if isinstance(breakdown, dict)
        else ""
    )
    if parts:
        console.print(f"[dim]training breakdown (GiB): {parts}[/]")
    step_seconds = document.get("step_seconds")
    if isinstance(step_seconds, int | float) and step_seconds:
        console.print(f"{step_seconds:.2f} s per optimizer step")
    whole: Any = getattr(estimate, "time_and_cost", None) or {}
    if whole.get("hours") is not None:
        low, high = whole["hours_band"]
        price = ""
        if whole.get("usd") is not None:
            cheap, dear = whole["usd_band"]
            price = f", about ${whole['usd']:.2f} (${cheap:.2f}–${dear:.2f})"
        console.print(f"every step: about {whole['hours']:.2f} h ({low:.2f}–{high:.2f} h){price}")
        if whole.get("untimed_steps"):
            console.print(
                f"[dim]not timed (not in the total): {', '.join(whole['untimed_steps'])}[/]"
            )
    if document.get("confidence"):
        console.print(f"[dim]confidence: {document['confidence']}[/]")
