"""`kura model …`: check, bundles, resolve, fetch, verify, lock.

Each command parses its arguments, calls one library function in :mod:`kura.models`, and
prints the result document (or its Rich rendering). Heavy imports stay inside functions.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from kura.cli._output import and_next, new_table
from kura.cli.state import AppState

if TYPE_CHECKING:
    from rich.console import Console

    from kura.models.bundle_list import BundleList
    from kura.models.fetch import FetchResult
    from kura.models.filecheck import ModelCheck
    from kura.models.lockdoc import LockWritten
    from kura.models.verify import Verification
from kura.errors import CheckFailed, InvalidInput, WorkspaceNotFound

__all__ = ["model_group"]

_ROLE_CHOICES = ("dit", "vae", "text_encoder", "image_encoder", "lora")
_STATUS_STYLE = {
    "ok": "green",
    "warning": "yellow",
    "unverified": "yellow",
    "skipped": "dim",
    "refused": "bold red",
    "invalid": "bold red",
    "missing": "red",
    "mismatch": "bold red",
}


@click.group("model")
def model_group() -> None:
    """Check, list, find, download, verify and lock model files."""


@model_group.command("check")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--arch",
    "architecture",
    default=None,
    help="Kura architecture id the files are for (see `kura model bundles`).",
)
@click.option(
    "--role", type=click.Choice(_ROLE_CHOICES), default=None, help="Role the files must play."
)
@click.pass_context
def check_command(
    ctx: click.Context, files: tuple[Path, ...], architecture: str | None, role: str | None
) -> None:
    """Identify FILES by their safetensors header and say whether they can serve.

    Exits 1 when a file is refused for the role or the files do not match, 5 when a file is
    malformed or not safetensors (it takes precedence)."""
    from kura.models.filecheck import check_files
    from kura.models.signatures import ARCHITECTURES

    if architecture is not None and architecture not in ARCHITECTURES:
        raise click.BadParameter(
            f"{architecture!r}; choose one of {', '.join(ARCHITECTURES)}", param_hint="--arch"
        )
    state: AppState = ctx.obj
    from kura.cli.nexts import after_model_check, followed

    checked = check_files(list(files), architecture=architecture, role=role)
    checked = followed(checked, after_model_check)
    state.out.result(checked, and_next(_render_check))
    if checked.unreadable:
        ctx.exit(InvalidInput.exit_code)  # a file is malformed or not safetensors at all
    if not checked.ok:
        ctx.exit(CheckFailed.exit_code)  # files were read and refused, or do not match


def _render_check(console: Console, checked: ModelCheck) -> None:
    for entry in checked.files:
        verdict = entry.verdict
        style = _STATUS_STYLE.get(verdict.status, "")
        console.print(f"[bold]{entry.path}[/]  [{style}]{verdict.status}[/]")
        report = entry.report
        if report is None:
            console.print(f"  {(entry.error or {}).get('message')}")
            continue
        arch = ", ".join(report.architectures) or "no Kura architecture"
        console.print(
            f"  {report.title} — component [cyan]{report.component}[/], role "
            f"{report.role}, serves: {arch}"
        )
        detail = (
            f"  {report.params:,} parameters, {report.dtype}, quantization "
            f"{report.quantization}, {report.size:,} bytes"
        )
        if report.key_prefix:
            detail += f", key prefix {report.key_prefix!r}"
        if report.lora_format:
            detail += f", LoRA format {report.lora_format}, rank {report.rank}"
        console.print(detail)
        if verdict.rules:
            console.print(f"  file rules applied: {verdict.rules}'s")
        for line in verdict.refusals:
            console.print(f"  [red]refused:[/] {line}")
        for line in verdict.warnings:
            console.print(f"  [yellow]warning:[/] {line}")
    for check in checked.cross_checks:
        style = _STATUS_STYLE.get(check.status, "green")
        console.print(f"[{style}]{check.status}[/] {check.check}: {check.message}")


@model_group.command("bundles")
@click.option("--arch", "architecture", default=None, help="Only bundles of this architecture.")
@click.pass_obj
def bundles_command(state: AppState, architecture: str | None) -> None:
    """List the known bundles: architecture, trainer setting and the file for each role."""
    from kura.models.bundle_list import bundle_list

    state.out.result(bundle_list(architecture), _render_bundles)


def _render_bundles(console: Console, listed: BundleList) -> None:
    table = new_table("bundle", "architecture", "backends", "trainer", "roles", box=None)
    for entry in listed.bundles:
        bundle = entry.bundle
        trainer = " ".join(f"{k}={v}" for k, v in bundle.trainer.items())
        name = bundle.id if bundle.supported else f"{bundle.id} (unsupported)"
        backends = ", ".join(entry.backends) or "none"
        table.add_row(name, bundle.architecture, backends, trainer, ", ".join(bundle.slots))
    console.print(table)


def _models_dir(state: AppState) -> Path | None:
    try:
        return state.workspace().models_dir
    except WorkspaceNotFound:
        return None


@model_group.command("resolve")
@click.argument("bundle_id", metavar="BUNDLE")
@click.option(
    "--path", "paths", multiple=True, metavar="ROLE=FILE", help="Use FILE for ROLE (repeatable)."
)
@click.pass_context
def resolve_command(ctx: click.Context, bundle_id: str, paths: tuple[str, ...]) -> None:
    """Find each role's file (given paths, workspace models/, Hugging Face cache) and check it."""
    from kura.models.bundles import get_bundle
    from kura.models.resolve import parse_path_overrides, resolve_bundle

    state: AppState = ctx.obj
    bundle = get_bundle(bundle_id)
    resolution = resolve_bundle(
        bundle, models_dir=_models_dir(state), paths=parse_path_overrides(paths, bundle)
    )
    doc = resolution.to_dict()
    state.out.result(doc, _render_resolve)
    if any(r["status"] in ("refused", "invalid") for r in doc["roles"]) or any(
        c["status"] == "mismatch" for c in doc["cross_checks"]
    ):
        ctx.exit(1)


def _render_resolve(console: Console, doc: dict[str, Any]) -> None:
    console.print(f"[bold]{doc['bundle']}[/] ({doc['architecture']}, {doc['backend']})")
    for role in doc["roles"]:
        style = _STATUS_STYLE.get(role["status"], "")
        where = role["path"] or f"{role['expected']['repo']}/{role['expected']['filename'] or ''}"
        console.print(f"  {role['slot']:<16} [{style}]{role['status']:<10}[/] {where}")
        for line in role["problems"]:
            console.print(f"      [red]{line}[/]")
        for line in role["warnings"]:
            console.print(f"      [yellow]{line}[/]")
    for check in doc["cross_checks"]:
        if check["status"] == "mismatch":
            console.print(f"  [red]mismatch[/] {check['message']}")
    download = doc["download"]
    if download["files"]:
        size = f"{download['bytes_known']:,} bytes known" + (
            f", {download['sizes_unknown']} of unknown size" if download["sizes_unknown"] else ""
        )
        console.print(
            f"missing: {', '.join(doc['missing'])} ({size}); `kura model fetch {doc['bundle']}` "
            "downloads them"
        )


@model_group.command("fetch")
@click.argument("bundle_id", metavar="BUNDLE")
@click.option("--role", "slots", multiple=True, help="Only this role (repeatable).")
@click.option(
    "--dest",
    type=click.Choice(["cache", "models"]),
    default="cache",
    show_default=True,
    help="Hugging Face cache or the workspace models/ folder.",
)
@click.pass_context
def fetch_command(ctx: click.Context, bundle_id: str, slots: tuple[str, ...], dest: str) -> None:
    """Download a bundle's files from the Hugging Face hub (token from HF_TOKEN only)."""
    from kura.models.fetch import fetch_bundle

    state: AppState = ctx.obj
    models_dir = state.workspace().models_dir if dest == "models" else _models_dir(state)
    from kura.cli.nexts import after_model_fetch, followed

    fetched = fetch_bundle(bundle_id, slots=slots, dest=dest, models_dir=models_dir)
    fetched = followed(fetched, after_model_fetch)
    state.out.result(fetched, and_next(_render_fetch))
    if not fetched.ok:
        ctx.exit(1)


def _render_fetch(console: Console, fetched: FetchResult) -> None:
    for entry in fetched.files:
        style = _STATUS_STYLE.get(entry.status, "")
        console.print(f"{entry.slot:<16} [{style}]{entry.status:<10}[/] {entry.path or entry.repo}")
        for line in entry.problems:
            console.print(f"    [red]{line}[/]")


@model_group.command("verify")
@click.argument("target", metavar="FILE|BUNDLE")
@click.pass_context
def verify_command(ctx: click.Context, target: str) -> None:
    """Re-hash a file (or every found file of a bundle) and compare with known digests."""
    from kura.models.verify import verify_target

    state: AppState = ctx.obj
    from kura.cli.nexts import after_model_verify, followed

    with state.out.progress("hashing", in_bytes=True) as progress:
        checked = verify_target(target, models_dir=_models_dir(state), progress=progress)
    verified = followed(checked, after_model_verify)
    state.out.result(verified, and_next(_render_verify))
    if not verified.ok:
        ctx.exit(1)


def _render_verify(console: Console, verified: Verification) -> None:
    for entry in verified.files:
        style = _STATUS_STYLE.get(entry.status, "")
        console.print(f"[{style}]{entry.status:<8}[/] {entry.sha256 or '-'}  {entry.path}")
        for line in entry.problems:
            console.print(f"    [red]{line}[/]")


@model_group.command("lock")
@click.argument("bundle_id", metavar="BUNDLE")
@click.option(
    "--path", "paths", multiple=True, metavar="ROLE=FILE", help="Use FILE for ROLE (repeatable)."
)
@click.pass_obj
def lock_command(state: AppState, bundle_id: str, paths: tuple[str, ...]) -> None:
    """Write models/<BUNDLE>.lock.json: each role's path, size, sha256 and header digest."""
    from kura.cli.nexts import after_model_lock, followed
    from kura.models.lockdoc import lock_bundle

    with state.out.progress("hashing", in_bytes=True) as progress:
        written = lock_bundle(state.workspace(), bundle_id, paths, progress=progress)
    locked = followed(written, after_model_lock)
    state.out.result(locked, and_next(_render_lock))


def _render_lock(console: Console, locked: LockWritten) -> None:
    verb = "wrote" if locked.written else "unchanged:"
    console.print(f"{verb} {locked.lock_path}")
    for slot, entry in locked.lock["roles"].items():
        console.print(f"  {slot:<16} {entry['sha256']}  {entry['path'] or '(not downloaded)'}")
