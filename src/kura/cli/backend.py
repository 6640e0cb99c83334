"""`kura backend install NAME` and `kura backend list`: how each trainer's environment is made."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from kura.cli._output import and_next, new_table
from kura.cli.state import AppState
from kura.errors import WorkspaceNotFound

if TYPE_CHECKING:
    from rich.console import Console

    from kura.backends.install import BackendList
    from kura.workspace import Workspace

__all__ = ["backend_group"]


def _workspace(state: AppState) -> Workspace | None:
    try:
        return state.workspace()
    except WorkspaceNotFound:
        return None


@click.group("backend")
def backend_group() -> None:
    """Trainer backends and their environments."""


@backend_group.command("list")
@click.pass_context
def list_command(ctx: click.Context) -> None:
    """The backends, how each environment is made, and whether it is there."""
    from kura.backends.install import list_backends
    from kura.cli.nexts import after_backend_list, followed

    state: AppState = ctx.obj
    listed = followed(list_backends(_workspace(state)), after_backend_list)
    state.out.result(listed, and_next(_render_list))


def _render_list(console: Console, listed: BackendList) -> None:
    table = new_table("backend", "environment", "present", box=None)
    for entry in listed.backends:
        present = {True: "[green]yes[/]", False: "[red]no[/]", None: "-"}[entry.present]
        table.add_row(
            entry.name,
            entry.environment + (f" — {entry.path}" if entry.path else ""),
            present,
        )
    console.print(table)


@backend_group.command("install")
@click.argument("name")
@click.option(
    "--python", "python", default=None, help="The Python that makes the venv (default: Kura's)."
)
@click.option(
    "--source",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The trainer's checkout at the pinned release to install from (Musubi Tuner, "
    "AI-Toolkit; default: kura.toml's musubi_checkout / aitk_checkout).",
)
@click.option("--force", is_flag=True, help="Install again over an existing environment.")
@click.pass_context
def install_command(
    ctx: click.Context, name: str, python: str | None, source: Path | None, force: bool
) -> None:
    """Make the trainer's own virtual environment with pinned versions: Musubi Tuner and
    AI-Toolkit from a checkout (--source), KohakuMoss from the package registry."""
    from kura.backends.install import install_trainer
    from kura.cli.nexts import after_backend_install, with_next

    state: AppState = ctx.obj
    result = install_trainer(
        _workspace(state),
        name,
        python=python,
        source=source,
        force=force,
        announce=lambda line: state.out.err.print(line, soft_wrap=True, markup=False),
    )
    doc = result.to_dict()
    state.out.result(
        with_next(doc, after_backend_install(doc)),
        and_next(
            lambda console, d: console.print(
                f"{'installed' if d['installed'] else 'already present'}: {d['path']} "
                f"(python {d['python']})"
            )
        ),
    )
