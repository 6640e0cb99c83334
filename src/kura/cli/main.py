"""Entry point: global flags, command registration, error mapping and exit codes.

``--json`` is global: it is taken out of argv wherever it stands (before ``--``), so every
command accepts it before or after its name without declaring it.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import click

from kura import __version__
from kura.cli._output import Output
from kura.constants import debug_enabled
from kura.errors import KuraError, UsageError

if TYPE_CHECKING:
    from kura.workspace import Workspace

__all__ = ["AppState", "cli", "main"]


@dataclass
class AppState:
    out: Output
    workspace_path: Path | None

    def workspace(self) -> Workspace:
        from kura.workspace import find_workspace

        return find_workspace(explicit=self.workspace_path)


@click.group(
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog="Every command takes --json (before or after its name) for one JSON document on stdout.",
)
@click.option(
    "--workspace",
    "-w",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Workspace folder (default: the nearest kura.toml at or above the current folder).",
)
@click.version_option(__version__, prog_name="kura")
@click.pass_context
def cli(ctx: click.Context, workspace: Path | None) -> None:
    """Kura: plan, check, launch and follow LoRA training of large diffusion models."""
    out = ctx.obj.out if isinstance(ctx.obj, AppState) else Output(json_mode=False)
    ctx.obj = AppState(out=out, workspace_path=workspace)


def _register() -> None:
    from kura.cli import (
        backend,
        dataset,
        demo,
        doctor,
        export,
        knowledge,
        model,
        planning,
        run,
        serve,
        sweep,
        workspace,
    )

    modules = (
        workspace, dataset, model, run, sweep, planning, knowledge, export, serve, doctor,
        backend, demo,
    )
    for module in modules:
        module.register(cli)


def split_global_flags(argv: list[str]) -> tuple[list[str], bool]:
    """Remove ``--json`` from argv (up to a ``--`` terminator); say whether it was there."""
    out: list[str] = []
    json_mode = False
    for index, arg in enumerate(argv):
        if arg == "--":
            out.extend(argv[index:])
            break
        if arg == "--json":
            json_mode = True
            continue
        out.append(arg)
    return out, json_mode


def main(argv: list[str] | None = None, *, stdout: TextIO | None = None) -> int:
    """Run one command; return its exit code. ``stdout`` redirects results (used by demo)."""
    args, json_mode = split_global_flags(list(sys.argv[1:] if argv is None else argv))
    out = Output(json_mode=json_mode, stdout=stdout)
    _register()
    try:
        returned = cli.main(
            args=args, prog_name="kura", standalone_mode=False, obj=AppState(out, None)
        )
    except KuraError as error:
        if debug_enabled():
            raise
        out.error(error)
        return error.exit_code
    except click.exceptions.Exit as done:
        return int(done.exit_code or 0)
    except click.Abort:
        out.err.print("aborted")
        return 130
    except click.ClickException as exc:
        usage = UsageError(exc.format_message(), hint="see `kura --help` or `kura COMMAND --help`")
        out.error(usage)
        return 2
    except KeyboardInterrupt:
        out.err.print("interrupted")
        return 130
    except BrokenPipeError:
        return 141
    # With standalone_mode=False, click returns ctx.exit(N)'s code instead of raising.
    return returned if isinstance(returned, int) else 0
