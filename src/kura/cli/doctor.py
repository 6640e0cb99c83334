"""`kura doctor [BACKEND]` and `kura image build BACKEND`, through the backend registry."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from kura.cli._output import new_table
from kura.cli.state import AppState
from kura.errors import WorkspaceNotFound

if TYPE_CHECKING:
    from rich.console import Console

    from kura.backends.base import DoctorReport
    from kura.workspace import Workspace

__all__ = ["doctor_command", "doctor_document", "image_group"]


def _workspace(state: AppState) -> Workspace | None:
    try:
        return state.workspace()
    except WorkspaceNotFound:
        return None


def doctor_document(report: DoctorReport) -> dict[str, Any]:
    """The ``doctor`` document of one backend's report."""
    return {
        "kind": "doctor",
        "scope": report.backend,
        "ok": report.ok,
        **dict(report.details),
        "findings": [f.to_dict() for f in report.findings],
    }


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

        doc = run_doctor(workspace)
    else:
        from kura.backends.registry import command_backend

        doc = doctor_document(command_backend(backend).doctor(workspace))
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
    for step in doc.get("next", []):
        console.print(f"[dim]next: {step['command']} — {step['why']}[/]")


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
    doc = build_image(recipe, run=run_it)
    state.out.result(doc, lambda console, d: console.print(" ".join(d["argv"]), soft_wrap=True))
    if run_it and doc["exit_code"] != 0:
        ctx.exit(1)
