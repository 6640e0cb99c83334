"""`kura init` and `kura schema`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from kura.cli.state import AppState

if TYPE_CHECKING:
    from rich.console import Console
from kura.errors import UsageError

__all__ = ["init_command", "schema_command"]


@click.command("init")
@click.argument("directory", required=False, type=click.Path(path_type=Path), default=Path("."))
@click.pass_obj
def init_command(state: AppState, directory: Path) -> None:
    """Create a workspace (kura.toml, datasets/, models/, runs/, knowledge/) in DIRECTORY."""
    from kura.initialize import init_workspace

    workspace, created = init_workspace(directory)
    doc = {"kind": "workspace-init", "root": str(workspace.root), "created": created}
    state.out.result(doc, _render_init)


def _render_init(console: Console, doc: dict[str, Any]) -> None:
    if doc["created"]:
        console.print(
            f"Workspace ready at [bold]{doc['root']}[/] (created {', '.join(doc['created'])})"
        )
    else:
        console.print(f"Workspace at [bold]{doc['root']}[/] already complete; nothing changed")


SCHEMAS = ("dataset", "run", "workspace")


@click.command("schema")
@click.argument("name", type=click.Choice(SCHEMAS))
@click.pass_obj
def schema_command(state: AppState, name: str) -> None:
    """Print the JSON Schema of dataset.yaml, run.yaml or kura.toml."""
    doc = {"kind": "schema", "name": name, "schema": json_schema(name)}
    state.out.result(doc, lambda console, d: console.print_json(json.dumps(d["schema"])))


def json_schema(name: str) -> dict[str, Any]:
    from pydantic import BaseModel

    from kura.spec import DatasetSpec, RunSpec
    from kura.workspace import WorkspaceConfig

    models: dict[str, type[BaseModel]] = {
        "dataset": DatasetSpec,
        "run": RunSpec,
        "workspace": WorkspaceConfig,
    }
    if name not in models:
        raise UsageError(f"unknown schema {name!r}", hint=f"choose one of {', '.join(SCHEMAS)}")
    return models[name].model_json_schema()
