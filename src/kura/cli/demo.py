"""`kura demo [DIR]`: a real end-to-end walk through a generated workspace."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, TextIO, cast

import click

from kura.cli._output import and_next
from kura.cli.state import AppState

if TYPE_CHECKING:
    from rich.console import Console

    from kura.demo import DemoLog

__all__ = ["demo_command"]


@click.command("demo")
@click.argument("directory", required=False, type=click.Path(path_type=Path), default=None)
@click.pass_context
def demo_command(ctx: click.Context, directory: Path | None) -> None:
    """Build a demo workspace in DIRECTORY (default ./kura-demo) and walk the path in it;
    with trainers installed, train a tiny LoRA with each (exit 1 when one of those
    trainings fails)."""
    from kura.cli.main import main
    from kura.cli.nexts import after_demo, followed
    from kura.demo import run_demo

    state: AppState = ctx.obj
    out = state.out

    def run_command(argv: list[str], note: str) -> int:
        if not out.json_mode:
            out.console.rule(f"[bold]$ kura {' '.join(_short(a) for a in argv[2:])}")
            out.console.print(f"[dim]{note}[/]")
        code = main(
            argv if not out.json_mode else [*argv, "--json"],
            stdout=cast("TextIO", out.err.file) if out.json_mode else None,
        )
        if not out.json_mode:
            out.console.print(f"[dim]exit code {code}[/]")
        return code

    walked = followed(run_demo(directory or Path("kura-demo"), run_command), after_demo)
    out.result(walked, and_next(_render_demo))
    if walked.trainers.failed:
        ctx.exit(1)


def _render_demo(console: Console, walked: DemoLog) -> None:
    trained = ", ".join(walked.trainers.trained) or "none"
    console.print(f"\nTrained for real on this machine with: [bold]{trained}[/]")
    if walked.trainers.failed:
        console.print(f"[red]Failed[/]: {', '.join(walked.trainers.failed)} (see the steps above)")
    if walked.trainers.not_installed:
        console.print(
            f"Not installed: {', '.join(walked.trainers.not_installed)} "
            "(`kura backend install NAME`, then run the demo again)"
        )
    console.print(
        f"\nDemo workspace: [bold]{walked.workspace}[/] — explore it with "
        f"`kura --workspace {walked.workspace} dataset list`"
    )


def _short(arg: str) -> str:
    cwd = str(Path.cwd())
    return arg.replace(cwd + "/", "") if arg.startswith(cwd) else arg
