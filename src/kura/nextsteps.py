"""The agent contract's ``next``: what to run after a command, and why.

Every ``--json`` document with a natural next action carries ``next``, a list of
``{command, why}`` (most useful first). The human renderers print the same lines.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["NextStep", "next_list"]


@dataclass(frozen=True)
class NextStep:
    command: str
    why: str


def next_list(*steps: NextStep | None) -> list[dict[str, str]]:
    """The ``next`` value: the given steps (None ones dropped) as JSON objects."""
    return [{"command": s.command, "why": s.why} for s in steps if s is not None]
