"""`kura export RUN` and `kura export merge-ema RUN`: LoRA files for ComfyUI/diffusers."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from kura.cli._output import and_next
from kura.cli.state import AppState

if TYPE_CHECKING:
    from rich.console import Console

    from kura.backends.base import LoraExport
    from kura.export.ema import EmaMerge

__all__ = ["export_group"]

_DEFAULT = "lora"


class _ExportGroup(click.Group):
    """A group whose bare form (`kura export RUN …`) runs the hidden default command."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = [_DEFAULT, *args]
        return super().parse_args(ctx, args)


class _DefaultCommand(click.Command):
    """The hidden default command, whose usage reads `kura export RUN_ID …`."""

    def format_usage(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        parent = ctx.parent.command_path if ctx.parent is not None else "export"
        formatter.write_usage(parent, " ".join(self.collect_usage_pieces(ctx)))


@click.group("export", cls=_ExportGroup, subcommand_metavar="RUN [OPTIONS] | merge-ema RUN")
def export_group() -> None:
    """Export a run's LoRA for ComfyUI or diffusers; merge epochs with post-hoc EMA.

    \b
    kura export RUN [--epoch N] [--format comfyui|diffusers|musubi|lycoris] [--out PATH]
    kura export merge-ema RUN [--beta B [--beta2 B2]]
    """


@export_group.command(_DEFAULT, cls=_DefaultCommand, hidden=True)
@click.argument("run_id")
@click.option("--epoch", type=click.IntRange(min=1), help="Epoch to export (default: final).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["comfyui", "diffusers", "musubi", "lycoris"]),
    default="comfyui",
    show_default=True,
    help="Key layout to write.",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    help="File (or folder) to write (default: runs/<id>/export/).",
)
@click.pass_obj
def export_command(
    state: AppState, run_id: str, epoch: int | None, fmt: str, out: Path | None
) -> None:
    """Convert (or copy) with the run's backend, verify against the base model, then write."""
    from kura.backends.registry import get_backend
    from kura.runs.store import read_run

    workspace = state.workspace()
    spec = read_run(workspace, run_id)
    from kura.cli._output import escape_value
    from kura.cli.nexts import after_export, with_next

    exported = get_backend(spec.backend.name).export(
        workspace, run_id, epoch=epoch, fmt=fmt, out=out
    )
    document = exported.to_dict()
    state.out.result(
        with_next(document, after_export(document, task=spec.task)),
        and_next(lambda console, _doc: _render_export(console, escape_value(exported))),
    )


@export_group.command("merge-ema")
@click.argument("run_id")
@click.option("--beta", type=float, default=0.95, show_default=True, help="EMA decay.")
@click.option("--beta2", type=float, help="Decay at the last merge (linear from --beta).")
@click.pass_obj
def merge_ema_command(state: AppState, run_id: str, beta: float, beta2: float | None) -> None:
    """Post-hoc EMA over the run's saved epochs (or steps), one average per expert where the
    run saves two → output/<id>-ema.safetensors (AI-Toolkit's: export/, out of its resume
    folder)."""
    from kura.cli.nexts import after_ema, followed
    from kura.export.ema import merge_ema

    merged = merge_ema(state.workspace(), run_id, beta=beta, beta2=beta2)
    state.out.result(followed(merged, after_ema), and_next(_render_ema))


def _render_export(console: Console, exported: LoraExport) -> None:
    if exported.epoch is not None:
        save = f"epoch {exported.epoch}"
    else:
        save = f"step {exported.step}" if exported.step is not None else "final"
    for one in (exported, *exported.companions):
        expert = f" {one.expert.replace('_', '-')} expert" if one.expert else ""
        action = "copied (already loads as is)" if one.copied else f"converted ({one.mode})"
        console.print(f"Run [bold]{one.run}[/] {save}{expert} → {one.format}: {action}")
        console.print(f"wrote {one.out} ({one.keys} tensors, {one.modules} modules)")
        console.print(f"[dim]verified against {one.verified_against}; {one.why}[/]")
    if exported.companions:
        console.print(
            "[dim]ComfyUI loads one LoRA per expert model: the high-noise file on the "
            "high-noise model, the low-noise file on the low-noise one[/]"
        )


def _render_ema(console: Console, merged: EmaMerge) -> None:
    for one in (merged, *merged.companions):
        console.print(
            f"Run [bold]{one.run}[/]: EMA of {len(one.inputs)} checkpoints "
            f"({', '.join(one.labels)}), beta {one.beta} → {one.beta2}"
        )
        console.print(f"wrote {one.out}")
