"""`kura backend install NAME` and `kura backend list`: how each trainer's environment is made."""

from __future__ import annotations

import subprocess
from typing import TYPE_CHECKING, Any

import click

from kura.cli._output import new_table
from kura.cli.state import AppState

if TYPE_CHECKING:
    from rich.console import Console
from kura.errors import CheckFailed, KuraError, WorkspaceNotFound

__all__ = ["backend_group"]

BACKENDS = ("kohakumoss", "musubi-tuner")
HOW = {
    "musubi-tuner": (
        "a Docker image: `kura image build musubi --run` (or a checkout for the host executor)"
    ),
    "kohakumoss": "a virtual environment of its own: `kura backend install kohakumoss`",
}


def _location(state: AppState) -> Any:
    from kura.backends.kohakumoss.env import locate_env

    try:
        workspace = state.workspace()
    except WorkspaceNotFound:
        return locate_env()
    return locate_env(workspace.config().executor.kohakumoss_env, workspace.root)


@click.group("backend")
def backend_group() -> None:
    """Trainer backends and their environments."""


@backend_group.command("list")
@click.pass_context
def list_command(ctx: click.Context) -> None:
    """The backends, how each environment is made, and whether it is there."""
    state: AppState = ctx.obj
    env = _location(state)
    rows = [
        {"name": "musubi-tuner", "environment": HOW["musubi-tuner"], "present": None},
        {
            "name": "kohakumoss",
            "environment": HOW["kohakumoss"],
            "present": env.present,
            "path": str(env.path),
        },
    ]
    state.out.result({"kind": "backend-list", "backends": rows}, _render_list)


def _render_list(console: Console, doc: dict[str, Any]) -> None:
    table = new_table("backend", "environment", "present", box=None)
    for row in doc["backends"]:
        present = {True: "[green]yes[/]", False: "[red]no[/]", None: "-"}[row["present"]]
        table.add_row(
            row["name"],
            row["environment"] + (f" — {row['path']}" if row.get("path") else ""),
            present,
        )
    console.print(table)


@backend_group.command("install")
@click.argument("name", type=click.Choice(BACKENDS))
@click.option(
    "--python", "python", default=None, help="The Python that makes the venv (default: Kura's)."
)
@click.option("--force", is_flag=True, help="Install again over an existing environment.")
@click.pass_context
def install_command(ctx: click.Context, name: str, python: str | None, force: bool) -> None:
    """Make the trainer's environment (KohakuMoss: a venv with pinned versions)."""
    from kura.backends.kohakumoss.env import INSTALL_SIZE, install_commands

    state: AppState = ctx.obj
    if name == "musubi-tuner":
        raise KuraError(
            "Musubi Tuner runs from a Docker image, not an environment Kura installs",
            hint="kura image build musubi --run",
        )
    env = _location(state)
    commands = install_commands(env, python)
    if env.present and not force:
        commands = ()
    else:
        state.out.err.print(f"installing KohakuMoss into {env.path} ({INSTALL_SIZE})")
        env.path.parent.mkdir(parents=True, exist_ok=True)
    for argv in commands:
        state.out.err.print("$ " + " ".join(argv), soft_wrap=True)
        done = subprocess.run(list(argv), stdin=subprocess.DEVNULL, check=False)
        if done.returncode != 0:
            raise CheckFailed(
                f"`{' '.join(argv)}` exited {done.returncode}",
                hint="see the pip output above; rerun with --force",
                path=env.path,
            )
    doc = {
        "kind": "backend-install",
        "backend": name,
        "path": str(env.path),
        "source": env.source,
        "python": str(env.python),
        "installed": bool(commands),
        "commands": [list(a) for a in commands],
    }
    state.out.result(
        doc,
        lambda console, d: console.print(
            f"{'installed' if d['installed'] else 'already present'}: {d['path']} "
            f"(python {d['python']})"
        ),
    )

