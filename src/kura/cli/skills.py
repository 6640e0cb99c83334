"""`kura skills list|show|install`: the agent skills shipped with Kura."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from kura.cli._output import and_next
from kura.cli.state import AppState

if TYPE_CHECKING:
    from rich.console import Console

    from kura.skills import SkillInstall, SkillList, SkillShown

__all__ = ["skills_group"]


@click.group("skills")
def skills_group() -> None:
    """The agent skills Kura ships (SKILL.md files an agent tool loads)."""


@skills_group.command("list")
@click.pass_obj
def list_command(state: AppState) -> None:
    """Every skill with the description that tells an agent when to read it."""
    from kura.skills import list_skills

    state.out.result(list_skills(), and_next(_render_list))


def _render_list(console: Console, listed: SkillList) -> None:
    for skill in listed.skills:
        console.print(f"[bold]{skill.name}[/]: {skill.description}", soft_wrap=True)


@skills_group.command("show")
@click.argument("name")
@click.pass_obj
def show_command(state: AppState, name: str) -> None:
    """Print one skill's SKILL.md."""
    from kura.skills import show_skill

    state.out.result(show_skill(name), _render_show)


def _render_show(console: Console, shown: SkillShown) -> None:
    from rich.markdown import Markdown

    console.print(f"[bold]{shown.skill.name}[/]: {shown.skill.description}", soft_wrap=True)
    console.print(Markdown(shown.skill.body))


@skills_group.command("install")
@click.argument("directory", type=click.Path(path_type=Path, dir_okay=True, file_okay=False))
@click.option("--force", is_flag=True, help="Replace installed skill files that were changed.")
@click.pass_obj
def install_command(state: AppState, directory: Path, force: bool) -> None:
    """Copy every skill to DIRECTORY/<name>/SKILL.md (e.g. ~/.claude/skills)."""
    from kura.skills import install_skills

    state.out.result(install_skills(directory, force=force), _render_install)


def _render_install(console: Console, installed: SkillInstall) -> None:
    for file in installed.files:
        console.print(f"{file.action:9} {file.path}")
