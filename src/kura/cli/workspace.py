"""`kura init` and `kura schema`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from kura.cli.main import AppState
from kura.errors import UsageError

__all__ = ["register"]


@click.command("init")
@click.argument("directory", required=False, type=click.Path(path_type=Path), default=Path("."))
@click.pass_obj
def init_command(state: AppState, directory: Path) -> None:
    """Create a workspace (kura.toml, datasets/, models/, runs/, knowledge/) in DIRECTORY."""
    from kura.workspace import init_workspace

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


SCHEMAS = ("approval", "dataset", "lock", "plan", "run", "workspace")


@click.command("schema")
@click.argument("name", type=click.Choice(SCHEMAS))
@click.pass_obj
def schema_command(state: AppState, name: str) -> None:
    """Print the JSON Schema of dataset.yaml, run.yaml, kura.toml, or a run's approval.json,
    plan.json or compiled/run.lock."""
    doc = {"kind": "schema", "name": name, "schema": json_schema(name)}
    state.out.result(doc, lambda console, d: console.print_json(json.dumps(d["schema"])))


def json_schema(name: str) -> dict[str, Any]:
    from pydantic import BaseModel

    from kura.spec import DatasetSpec, RunSpec
    from kura.spec.approval import ApprovalRecord
    from kura.spec.lock import RunLock
    from kura.spec.plan import PlanRecord
    from kura.workspace import WorkspaceConfig

    models: dict[str, type[BaseModel]] = {
        "approval": ApprovalRecord,
        "lock": RunLock,
        "plan": PlanRecord,
        "dataset": DatasetSpec,
        "run": RunSpec,
        "workspace": WorkspaceConfig,
    }
    if name not in models:
        raise UsageError(f"unknown schema {name!r}", hint=f"choose one of {', '.join(SCHEMAS)}")
    return models[name].model_json_schema()


def register(group: click.Group) -> None:
    group.add_command(init_command)
    group.add_command(schema_command)
