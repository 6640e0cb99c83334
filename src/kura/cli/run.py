"""`kura run new|compile|show`: draft a run, compile it for the trainer."""

from __future__ import annotations

from typing import Any

import click
from rich.console import Console
from rich.table import Table

from kura.cli.main import AppState

__all__ = ["register", "run_group"]


@click.group("run")
def run_group() -> None:
    """Draft, compile, plan, approve and follow training runs."""


@run_group.command("new")
@click.option(
    "--dataset", "datasets", multiple=True, required=True, help="Dataset name (repeatable)."
)
@click.option("--base", required=True, help="Model bundle id (`kura model bundles`).")
@click.option(
    "--task",
    type=click.Choice(["character", "style", "concept", "paired-edit", "video"]),
    help="What the LoRA learns (default: the datasets' intent or inspection).",
)
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Any run.yaml path.")
@click.pass_obj
def new_command(
    state: AppState, datasets: tuple[str, ...], base: str, task: str | None, sets: tuple[str, ...]
) -> None:
    """Draft runs/<id>/run.yaml; every drafted value says where it came from."""
    from kura.runs.new import create_run

    created = create_run(
        state.workspace(), datasets=list(datasets), base=base, task=task, sets=list(sets)
    )
    state.out.result(created.to_dict(), _render_new)


def _render_new(console: Console, doc: dict[str, Any]) -> None:
    console.print(f"Run [bold]{doc['id']}[/] drafted at {doc['path']} ({doc['architecture']})")
    console.print(f"task: {doc['task'] or 'unset'} — {doc['task_evidence']}")
    console.print(f"[dim]{doc['provenance']}[/]")
    console.print(f"next: `kura run compile {doc['id']}` or `kura run plan {doc['id']}`")


@run_group.command("compile")
@click.argument("run_id")
@click.pass_obj
def compile_command(state: AppState, run_id: str) -> None:
    """Write runs/<id>/compiled/: dataset TOML, exact trainer commands, container, lock."""
    from kura.runs.compile import compile_in_workspace

    report = compile_in_workspace(state.workspace(), run_id)
    state.out.result(report.to_dict(), render_compile)


def render_compile(console: Console, doc: dict[str, Any]) -> None:
    console.print(f"Run [bold]{doc['run']}[/] compiled: {', '.join(doc['files'])}")
    for step in doc["steps"]:
        console.print(f"[bold]{step['name']}[/]: {' '.join(step['argv'])}", soft_wrap=True)
    table = Table("check", "status", "detail", box=None)
    for check in doc["validate"]:
        colour = {"ok": "green", "pending": "yellow"}.get(check["status"], "red")
        table.add_row(check["check"], f"[{colour}]{check['status']}[/]", check["detail"])
    console.print(table)
    for warning in doc["warnings"]:
        console.print(f"[yellow]warning:[/] {warning}")


def register(group: click.Group) -> None:
    group.add_command(run_group)
