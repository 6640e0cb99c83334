"""Entry point: global flags, the command table, error mapping and exit codes.

``--json`` is global: it is taken out of argv wherever it stands (before ``--``), so every
command accepts it before or after its name without declaring it. Commands are listed in
:data:`COMMANDS` with their one-line help and imported only when they run, so ``kura
--help`` and every command pay only for their own imports.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import TextIO

import click

from kura import __version__
from kura.cli._output import Output
from kura.cli.state import AppState
from kura.constants import debug_enabled
from kura.errors import KuraError, UsageError, file_system_error

__all__ = ["COMMANDS", "AppState", "cli", "main"]

COMMANDS: dict[str, tuple[str, str]] = {
    "backend": ("kura.cli.backend:backend_group", "Trainer backends and their environments."),
    "dataset": ("kura.cli.dataset:dataset_group", "Register, inspect and validate datasets."),
    "demo": ("kura.cli.demo:demo_command", "Build a demo workspace and walk the real commands."),
    "doctor": ("kura.cli.doctor:doctor_command", "Check this machine and a trainer's setup."),
    "estimate": (
        "kura.cli.planning:estimate_command",
        "What-if calculator: peak memory, step time and fit (Musubi).",
    ),
    "export": ("kura.cli.export:export_group", "Export a run's LoRA for ComfyUI or diffusers."),
    "gpus": ("kura.cli.planning:gpus_command", "GPU classes Kura can plan for, and this one's."),
    "image": ("kura.cli.doctor:image_group", "Container images Kura runs trainers in."),
    "init": ("kura.cli.workspace:init_command", "Create a workspace."),
    "knowledge": ("kura.cli.knowledge:knowledge_group", "Knowledge cards, preferences, regrets."),
    "model": ("kura.cli.model:model_group", "Check, list, find, download, verify, lock models."),
    "run": ("kura.cli.run:run_group", "Draft, compile, plan, approve and follow runs."),
    "schema": ("kura.cli.workspace:schema_command", "Print the JSON Schema of a Kura file."),
    "serve": ("kura.cli.serve:serve_command", "Serve the web page on loopback."),
    "skills": ("kura.cli.skills:skills_group", "The agent skills Kura ships; install them."),
    "sweep": ("kura.cli.sweep:sweep_group", "Hyperparameter sweeps over a run's recipe."),
}
"""Top-level command → (``module:attribute``, one-line help shown by ``kura --help``)."""


class LazyGroup(click.Group):
    """A group whose commands are imported on first use (their help lines are in the table)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        module, _, attribute = entry[0].partition(":")
        command: click.Command = getattr(importlib.import_module(module), attribute)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, help_line) for name, (_, help_line) in sorted(COMMANDS.items())]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(
    cls=LazyGroup,
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
    except OSError as exc:  # a write outside Kura's writers (a copy, a mkdir) refused
        if debug_enabled():
            raise
        refused = file_system_error(exc)
        out.error(refused)
        return refused.exit_code
    # With standalone_mode=False, click returns ctx.exit(N)'s code instead of raising.
    return returned if isinstance(returned, int) else 0
