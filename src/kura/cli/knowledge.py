"""`kura knowledge sync|show|promote|regret`: the cards Kura drafts runs from."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from kura.cli._output import and_next, new_table
from kura.cli.state import AppState

if TYPE_CHECKING:
    from rich.console import Console

    from kura.knowledge.baselines import KnowledgeSync
    from kura.knowledge.cards import KnowledgeCard
    from kura.knowledge.regrets import RegretRecorded
    from kura.runs.evidence import Promotion

__all__ = ["knowledge_group"]


@click.group("knowledge")
def knowledge_group() -> None:
    """Knowledge cards (per trainer × architecture × task), preferences and regrets."""


@knowledge_group.command("sync")
@click.argument("architectures", nargs=-1)
@click.pass_obj
def sync_command(state: AppState, architectures: tuple[str, ...]) -> None:
    """Write or refresh the upstream lines of every trainer's cards, from each trainer's own
    docs, examples and code (never owner or run lines)."""
    from kura.knowledge.baselines import sync_cards

    state.out.result(sync_cards(state.workspace(), list(architectures) or None), _render_sync)


def _render_sync(console: Console, synced: KnowledgeSync) -> None:
    for card in synced.cards:
        state = "created" if card.created else f"+{card.added} ~{card.updated}"
        console.print(f"{card.card}: {state}")


@knowledge_group.command("show")
@click.argument("architecture")
@click.option("--backend", help="The trainer whose card (default: the one that trains it).")
@click.pass_obj
def show_command(state: AppState, architecture: str, backend: str | None) -> None:
    """Show a trainer's card of an architecture: its values with their sources, and lines
    that lack one."""
    from kura.knowledge.baselines import show_card

    state.out.result(show_card(state.workspace(), architecture, backend), _render_card)


def _render_card(console: Console, card: KnowledgeCard) -> None:
    table = new_table(
        "section",
        "key",
        "value",
        "source",
        box=None,
        title=f"{card.architecture} on {card.backend}",
    )
    for entry in card.entries:
        table.add_row(entry.section, entry.key, str(entry.value), entry.source)
    console.print(table)
    for problem in card.problems:
        console.print(f"[yellow]{problem}[/]")


@knowledge_group.command("promote")
@click.argument("run_id")
@click.option(
    "--arch",
    "architecture",
    help="The run's architecture (the default; another is refused: a recipe belongs in the "
    "card of what it trained).",
)
@click.option("--task", help="Card section: character, style, concept, … (default: the run's).")
@click.option("--epoch", type=int, help="The epoch judged best (default: `run evaluate`'s).")
@click.option("--step", type=int, help="The step judged best, instead of an epoch.")
@click.pass_obj
def promote_command(
    state: AppState,
    run_id: str,
    architecture: str | None,
    task: str | None,
    epoch: int | None,
    step: int | None,
) -> None:
    """Add the run's recipe to its trainer's card as `source: run <id>` lines (never
    overwriting)."""
    from kura.cli.nexts import after_knowledge_promote, followed
    from kura.runs.evidence import promote_run

    promotion = promote_run(
        state.workspace(), run_id, architecture=architecture, task=task, epoch=epoch, step=step
    )
    state.out.result(followed(promotion, after_knowledge_promote), and_next(_render_promotion))


def _render_promotion(console: Console, promotion: Promotion) -> None:
    console.print(f"{promotion.card}: added {len(promotion.added)} values")


@knowledge_group.command("regret")
@click.argument("run_id")
@click.argument("line")
@click.pass_obj
def regret_command(state: AppState, run_id: str, line: str) -> None:
    """Append `trigger -> reminder` to knowledge/regrets.md, citing the run."""
    from kura.knowledge.regrets import record_regret
    from kura.runs.store import read_run

    workspace = state.workspace()
    read_run(workspace, run_id)
    state.out.result(record_regret(workspace, run_id, line), _render_regret)


def _render_regret(console: Console, recorded: RegretRecorded) -> None:
    console.print(f"regret recorded: {recorded.regret.trigger}")
