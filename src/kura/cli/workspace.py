"""`kura init` and `kura schema`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kura.cli._output import and_next
from kura.cli.state import AppState

if TYPE_CHECKING:
    from rich.console import Console

    from kura.initialize import WorkspaceInit
from kura.schema.catalog import SCHEMAS, json_schema

__all__ = ["init_command", "schema_command"]


@click.command("init")
@click.argument("directory", required=False, type=click.Path(path_type=Path), default=Path("."))
@click.pass_obj
def init_command(state: AppState, directory: Path) -> None:
    """Create a workspace (kura.toml, datasets/, models/, runs/, knowledge/) in DIRECTORY."""
    from kura.cli.nexts import after_init, followed
    from kura.initialize import initialize

    state.out.result(followed(initialize(directory), after_init), and_next(_render_init))


def _render_init(console: Console, initialized: WorkspaceInit) -> None:
    if initialized.created:
        console.print(
            f"Workspace ready at [bold]{initialized.root}[/] "
            f"(created {', '.join(initialized.created)})"
        )
    else:
        console.print(f"Workspace at [bold]{initialized.root}[/] already complete; nothing changed")


@click.command("schema")
@click.argument("name", type=click.Choice(sorted(SCHEMAS)))
@click.pass_obj
def schema_command(state: AppState, name: str) -> None:
    """Print the JSON Schema of a file Kura writes (run.yaml, steps.json, state.json …)."""
    doc = {"kind": "schema", "name": name, "schema": json_schema(name)}
    state.out.result(doc, lambda console, d: console.print_json(json.dumps(d["schema"])))
