"""`kura doctor [musubi]` and `kura image build musubi`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from kura.cli._output import new_table
from kura.cli.state import AppState

if TYPE_CHECKING:
    from rich.console import Console
from kura.errors import WorkspaceNotFound

__all__ = ["doctor_command", "image_group"]


@click.command("doctor")
@click.argument("scope", required=False, type=click.Choice(["musubi", "kohakumoss"]))
@click.pass_context
def doctor_command(ctx: click.Context, scope: str | None) -> None:
    """Check GPU, Docker, the Musubi image, RAM, disk, HF token and SkyPilot (or, with
    `kohakumoss`, the KohakuMoss environment: its own doctor plus Kura's checks)."""
    from kura.doctor import run_doctor

    state: AppState = ctx.obj
    if scope == "kohakumoss":
        from kura.cli.backend import kohakumoss_doctor

        moss, ok = kohakumoss_doctor(state)
        state.out.result(moss, _render)
        if not ok:
            ctx.exit(1)
        return
    try:
        workspace = state.workspace()
    except WorkspaceNotFound:
        workspace = None
    doc = run_doctor(workspace, only=scope)
    state.out.result(doc, _render)
    if not doc["ok"]:
        ctx.exit(1)


def _render(console: Console, doc: dict[str, Any]) -> None:
    table = new_table("check", "status", "detail", "fix", box=None)
    colours = {"ok": "green", "warn": "yellow", "fail": "red", "skip": "dim"}
    for f in doc["findings"]:
        table.add_row(
            f["check"], f"[{colours[f['status']]}]{f['status']}[/]", f["detail"], f["fix"]
        )
    console.print(table)


@click.group("image")
def image_group() -> None:
    """Container images Kura runs trainers in."""


@image_group.command("build")
@click.argument("name", type=click.Choice(["musubi", "kohakumoss"]))
@click.option("--run", "run_it", is_flag=True, help="Run the build (default: print it).")
@click.pass_context
def build_command(ctx: click.Context, name: str, run_it: bool) -> None:
    """Print (or run) the docker build of the Musubi image at the pinned release."""
    from kura.images import build_image

    state: AppState = ctx.obj
    try:
        image = state.workspace().config().executor.musubi_image
    except WorkspaceNotFound:
        image = None
    doc = build_image(name, image=image, run=run_it)
    state.out.result(doc, lambda console, d: console.print(" ".join(d["argv"]), soft_wrap=True))
    if run_it and doc["exit_code"] != 0:
        ctx.exit(1)
