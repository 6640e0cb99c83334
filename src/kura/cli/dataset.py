"""`kura dataset add|inspect|set|validate|list`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from kura.cli._output import and_next, new_table
from kura.cli.state import AppState

if TYPE_CHECKING:
    from rich.console import Console

    from kura.dataset.registry import DatasetInspection, DatasetList, DatasetSet
    from kura.runs.buckets import RunBuckets
from kura.errors import UsageError

__all__ = ["dataset_group", "parse_resolution", "render_inspection"]


def parse_resolution(value: str | None) -> tuple[int, int] | None:
    """``1024`` → (1024, 1024); ``960x544`` → (960, 544)."""
    if value is None:
        return None
    width, sep, height = value.lower().partition("x")
    try:
        w = int(width)
        h = int(height) if sep else w
    except ValueError:
        raise UsageError(
            f"--resolution {value!r} is not W or WxH", hint="e.g. --resolution 1024 or 960x544"
        ) from None
    if not (64 <= w <= 8192 and 64 <= h <= 8192):
        raise UsageError(f"--resolution {value} is outside 64..8192", hint="e.g. 1024x1024")
    return w, h


@click.group("dataset")
def dataset_group() -> None:
    """Register, inspect and validate datasets."""


@dataset_group.command("add")
@click.argument("name")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--link", is_flag=True, help="Record a pointer to PATH instead of copying it.")
@click.option("--caption-ext", default=".txt", show_default=True, help="Caption file extension.")
@click.option("--control", type=click.Path(path_type=Path), help="Control images (paired edits).")
@click.option("--resolution", help="Training resolution for the bucket preview: W or WxH.")
@click.option(
    "--follow-links",
    is_flag=True,
    help="Copy what symlinks pointing outside PATH point to (each is listed); refused without.",
)
@click.pass_obj
def add_command(
    state: AppState,
    name: str,
    path: Path,
    link: bool,
    caption_ext: str,
    control: Path | None,
    resolution: str | None,
    follow_links: bool,
) -> None:
    """Register the folder PATH (media + same-stem captions) as dataset NAME and inspect it."""
    from kura.dataset.registry import add_dataset

    workspace = state.workspace()
    with state.out.progress("inspecting") as progress:
        added = add_dataset(
            workspace,
            name,
            path,
            link=link,
            caption_ext=caption_ext,
            control=control,
            resolution=parse_resolution(resolution) or (1024, 1024),
            progress=progress,
            follow_links=follow_links,
        )
    state.out.result(added.to_dict(), _render_add)


def _render_add(console: Console, doc: dict[str, Any]) -> None:
    how = "linked" if doc["linked"] else f"copied {doc['copied_files']} files"
    console.print(f"Dataset [bold]{doc['name']}[/] registered at {doc['folder']} ({how})")
    for rel in doc.get("followed_links", []):
        console.print(f"[yellow]followed a link out of the folder[/]: {rel}")
    render_inspection(console, doc["inspection"])


@dataset_group.command("inspect")
@click.argument("target")
@click.option("--resolution", help="Training resolution for the bucket preview: W or WxH.")
@click.option(
    "--run",
    "run_id",
    help="Also show the buckets and batches that run's trainer makes of this dataset.",
)
@click.pass_obj
def inspect_command(
    state: AppState, target: str, resolution: str | None, run_id: str | None
) -> None:
    """Gather the facts of dataset NAME (or any folder PATH) before GPU time is spent."""
    from dataclasses import replace

    from kura.dataset.registry import inspect_target

    with state.out.progress("inspecting") as progress:
        inspected = inspect_target(
            state.workspace, target, resolution=parse_resolution(resolution), progress=progress
        )
    if run_id is not None:
        from kura.runs.buckets import run_dataset_buckets

        if inspected.name is None:
            raise UsageError(
                "--run needs a registered dataset's name, not a folder",
                hint=f"`kura dataset add NAME {target}` first",
            )
        buckets = run_dataset_buckets(state.workspace(), run_id, inspected.name)
        inspected = replace(inspected, trainer_buckets=buckets)
    from kura.cli.nexts import after_inspection, followed

    state.out.result(followed(inspected, after_inspection), and_next(_render_inspected))


def _render_inspected(console: Console, inspected: DatasetInspection) -> None:
    # The inspection's view is shared with `dataset add`, whose document nests it.
    render_inspection(console, inspected.to_dict())
    from kura.runs.buckets import RunBuckets

    if isinstance(inspected.trainer_buckets, RunBuckets):
        _render_trainer_buckets(console, inspected.trainer_buckets)


def _render_trainer_buckets(console: Console, found: RunBuckets) -> None:
    buckets = found.buckets
    width, height = buckets.resolution
    table = new_table(
        f"{found.title} bucket @ {width}x{height}",
        "items",
        "batches",
        box=None,
        title_justify="left",
    )
    for bucket in buckets.buckets:
        frames = f"x{bucket.frames}f" if bucket.frames > 1 else ""
        table.add_row(
            f"{bucket.width}x{bucket.height}{frames}", str(bucket.items), str(bucket.batches)
        )
    console.print(table)
    console.print(
        f"run {found.run}: {buckets.batches} batches of {buckets.batch_size} an epoch "
        f"({buckets.step}-pixel step)"
    )
    console.print(f"[dim]{buckets.rule}[/]")


@dataset_group.command("set")
@click.argument("name")
@click.argument("assignments", nargs=-1, required=True)
@click.pass_obj
def set_command(state: AppState, name: str, assignments: tuple[str, ...]) -> None:
    """Record intent, e.g. `kura dataset set myaku intent.task=character intent.trigger=myaku`."""
    from kura.cli.nexts import after_dataset_set, followed
    from kura.dataset.registry import set_dataset_values

    changed = set_dataset_values(state.workspace(), name, list(assignments))
    state.out.result(followed(changed, after_dataset_set), and_next(_render_set))


def _render_set(console: Console, changed: DatasetSet) -> None:
    for key, value in changed.changed.items():
        console.print(f"{changed.name}: {key} = {value}")


@dataset_group.command("validate")
@click.argument("name")
@click.pass_context
def validate_command(ctx: click.Context, name: str) -> None:
    """Exit 1 when a problem would break or silently damage training; list the fixes."""
    from kura.dataset.registry import validate_dataset

    state: AppState = ctx.obj
    with state.out.progress("validating") as progress:
        checked = validate_dataset(state.workspace(), name, progress=progress)
    state.out.result(checked.to_dict(), _render_validation)
    if not checked.ok:
        ctx.exit(1)


def _render_validation(console: Console, doc: dict[str, Any]) -> None:
    if doc["ok"]:
        console.print(
            f"[green]ok[/] dataset [bold]{doc['name']}[/] is ready "
            f"({len(doc['warnings'])} warnings)"
        )
    else:
        console.print(
            f"[red]not ready[/]: {len(doc['blocking'])} problems in [bold]{doc['name']}[/] "
            "would break or damage training"
        )
    _problem_table(console, doc["blocking"] + doc["warnings"])


@dataset_group.command("list")
@click.pass_obj
def list_command(state: AppState) -> None:
    """List the datasets registered in this workspace."""
    from kura.cli.nexts import after_dataset_list, followed
    from kura.dataset.registry import list_datasets

    listing = followed(list_datasets(state.workspace()), after_dataset_list)
    state.out.result(listing, and_next(_render_list))


def _render_list(console: Console, listing: DatasetList) -> None:
    if not listing.datasets:
        console.print("no datasets yet; add one with `kura dataset add NAME PATH`")
        return
    table = new_table("name", "images", "videos", "task", "trigger", "blocking", box=None)
    for item in listing.datasets:
        counts = item.counts or {}
        table.add_row(
            item.name,
            str(counts.get("images", "?")),
            str(counts.get("videos", "?")),
            str(item.intent.task or "-"),
            str(item.intent.trigger or "-"),
            str(item.blocking_problems),
        )
    console.print(table)


def render_inspection(console: Console, doc: dict[str, Any]) -> None:
    """The human view of a `dataset-inspection` document."""
    counts = doc["counts"]
    console.print(
        f"[bold]{doc.get('name') or doc['root']}[/]: {counts.get('images', 0)} images, "
        f"{counts.get('videos', 0)} videos, {counts.get('captions', 0)} captions, "
        f"{counts.get('controls', 0)} controls  [dim]{doc['digest'][:19]}…[/]"
    )
    trigger = doc.get("trigger")
    if trigger:
        console.print(
            f"trigger: [bold]{trigger['word']}[/] appears in {trigger['count']} of "
            f"{trigger['total']} captions"
        )
        missing = trigger.get("missing") or []
        if missing:
            shown = ", ".join(missing[:10]) + (
                f" (+{len(missing) - 10} more)" if len(missing) > 10 else ""
            )
            console.print(f"  without it: {shown}")
        if trigger.get("case_variants"):
            spelled = ", ".join(f"{w!r} ×{n}" for w, n in trigger["case_variants"].items())
            console.print(f"  [yellow]spelled differently:[/] {spelled} (different tokens)")
    else:
        console.print("trigger: none found")
    suggestion = doc.get("task_suggestion") or {}
    console.print(f"task: {suggestion.get('task') or 'unknown'} — {suggestion.get('evidence', '')}")
    if doc.get("buckets"):
        width, height = doc["resolution"]
        table = new_table(
            f"bucket @ {width}x{height}",
            "items",
            "upscaled",
            "cropped",
            box=None,
            title_justify="left",
        )
        for bucket in doc["buckets"]:
            table.add_row(
                f"{bucket['width']}x{bucket['height']}",
                str(bucket["count"]),
                str(bucket.get("upscaled", "")),
                str(bucket.get("cropped", "")),
            )
        console.print(table)
    for group in doc.get("duplicates", []):
        console.print(f"[yellow]duplicates[/]: {', '.join(group)}")
    _problem_table(console, doc.get("problems", []))
    questions = doc.get("questions", [])
    if questions:
        console.print("[bold]Questions only you can answer[/] (record with `kura dataset set`):")
        for question in questions:
            options = " | ".join(str(o) for o in question.get("options", []))
            console.print(f"  {question['key']}: {question['question']} [{options}]")


def _problem_table(console: Console, problems: list[dict[str, Any]]) -> None:
    if not problems:
        return
    table = new_table("code", "path", "problem", "fix", box=None)
    for problem in problems[:50]:
        table.add_row(problem["code"], problem["path"], problem["message"], problem["fix"])
    console.print(table)
    if len(problems) > 50:
        console.print(f"… and {len(problems) - 50} more (use --json for all)")
