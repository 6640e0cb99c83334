"""`kura doctor [BACKEND]` and `kura image build BACKEND`, through the backend registry."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from kura.cli._output import new_table
from kura.cli.state import AppState
from kura.errors import WorkspaceNotFound

if TYPE_CHECKING:
    from rich.console import Console

    from kura.doctor import DoctorResult
    from kura.images import ImageBuild
    from kura.workspace import Workspace

__all__ = ["doctor_command", "image_group"]


def _workspace(state: AppState) -> Workspace | None:
    try:
        return state.workspace()
    except WorkspaceNotFound:
        return None


@click.command("doctor")
@click.argument("backend", required=False, metavar="[BACKEND]")
@click.pass_context
def doctor_command(ctx: click.Context, backend: str | None) -> None:
    """Check this machine (GPU, Docker, RAM, disk, HF token, SkyPilot), or with BACKEND
    (`kura backend list`; `musubi` for musubi-tuner) that trainer's setup: its image, its
    environment, the GPU it sees."""
    state: AppState = ctx.obj
    workspace = _workspace(state)
    if backend is None:
        from kura.doctor import run_doctor

        result = run_doctor(workspace)
    else:
        from kura.backends.registry import command_backend
        from kura.cli.nexts import after_backend_doctor, followed
        from kura.doctor import backend_doctor

        report = command_backend(backend).doctor(workspace)
        result = followed(backend_doctor(report), after_backend_doctor)
    state.out.result(result, _render)
    if not result.ok:
        ctx.exit(1)


def _render(console: Console, result: DoctorResult) -> None:
    table = new_table("check", "status", "detail", "fix", box=None)
    colours = {"ok": "green", "warn": "yellow", "fail": "red", "skip": "dim"}
    for f in result.findings:
        table.add_row(f.check, f"[{colours[f.status]}]{f.status}[/]", f.detail, f.fix)
    console.print(table)
    for step in result.next:
        console.print(f"[dim]next: {step.command} — {step.why}[/]")


@click.group("image")
def image_group() -> None:
    """Container images Kura runs trainers in."""


@image_group.command("build")
@click.argument("backend", metavar="BACKEND")
@click.option("--run", "run_it", is_flag=True, help="Run the build (default: print it).")
@click.pass_context
def build_command(ctx: click.Context, backend: str, run_it: bool) -> None:
    """Print (or run) the docker build of BACKEND's image at the pinned release
    (`musubi` for musubi-tuner; a backend without an image says how it is installed)."""
    from kura.backends.registry import command_backend
    from kura.images import build_image

    state: AppState = ctx.obj
    recipe = command_backend(backend).image(_workspace(state))
    from kura.cli._output import and_next
    from kura.cli.nexts import after_image_build, followed

    built = followed(build_image(recipe, run=run_it), after_image_build)
    state.out.result(built, and_next(_render_build))
    if run_it and built.exit_code != 0:
        ctx.exit(1)


def _render_build(console: Console, built: ImageBuild) -> None:
    console.print(" ".join(built.argv), soft_wrap=True)
