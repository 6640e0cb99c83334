"""Warm start: the configs every sweep tries first, each with where it came from.

1. the **baseline**: the base run's own values of the axes;
2. **curated** configs from the base run's trainer's card of the architecture, in the task's section
   then ``all``: lines ``- sweep.curated.<name>: {"training.learning_rate": 5e-5, …} —
   source: …`` (keys not searched are taken from the baseline);
3. **past winners**: the best trial of earlier sweeps on the same trainer × architecture × task
   (``sweeps/<id>/winner.json``, written by ``kura sweep report``).

A config whose value lies outside the space is left out with a note (never clamped
silently); a duplicate is tried once, its sources joined.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kura.errors import InvalidInput
from kura.knowledge.baselines import card_path
from kura.knowledge.cards import parse_card, read_card
from kura.schema.run import RunSpec
from kura.sweep.space import CheckedSpace
from kura.sweep.values import Winner
from kura.workspace import Workspace

__all__ = ["CURATED_PREFIX", "WarmConfig", "recipe_value", "warm_start"]

CURATED_PREFIX = "sweep.curated."


@dataclass(frozen=True)
class WarmConfig:
    """One config to enqueue: the axes' values, named, with where they came from.
    ``problem`` says why a candidate cannot be one (a card line that is not a mapping of
    recipe keys) before the space is asked."""

    name: str
    params: dict[str, object]
    source: str
    problem: str | None = None

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "params": self.params, "source": self.source}


def recipe_value(spec: RunSpec, key: str) -> Any:
    node: Any = spec
    for part in key.split("."):
        node = getattr(node, part)
    return node


def warm_start(
    workspace: Workspace,
    space: CheckedSpace,
    base: RunSpec,
    *,
    architecture: str,
    task: str | None,
    exclude_sweep: str | None = None,
) -> tuple[list[WarmConfig], list[str]]:
    """(configs in the order they are enqueued, notes on what was left out and why)."""
    baseline = {key: recipe_value(base, key) for key in space.keys}
    candidates = [WarmConfig("baseline", baseline, f"run {base.id} (the base run)")]
    entries, _ = parse_card(read_card(card_path(workspace, base.backend.name, architecture)))
    sections = [s for s in (task, "all") if s]
    for section in sections:
        for entry in entries:
            if entry.section != section or not entry.key.startswith(CURATED_PREFIX):
                continue
            name = entry.key.removeprefix(CURATED_PREFIX)
            if not isinstance(entry.value, dict):
                why = "its card value is not a mapping of recipe keys"
                candidates.append(WarmConfig(name, {}, entry.source, why))
                continue
            candidates.append(
                WarmConfig(
                    name,
                    {**baseline, **entry.value},
                    f"card {base.backend.name} {architecture} × {section}: {entry.source}",
                )
            )
    candidates += _past_winners(
        workspace, base.backend.name, architecture, task, exclude_sweep, baseline
    )
    configs: list[WarmConfig] = []
    notes: list[str] = []
    seen: dict[str, int] = {}
    for config in candidates:
        found = _problem(config, space)
        if found:
            notes.append(f"{config.name} ({config.source}) left out: {found}")
            continue
        params = {key: config.params[key] for key in space.keys}
        identity = json.dumps(params, sort_keys=True, default=str)
        if identity in seen:
            index = seen[identity]
            first = configs[index]
            configs[index] = WarmConfig(
                first.name, first.params, f"{first.source}; also {config.name}: {config.source}"
            )
            notes.append(f"{config.name} ({config.source}) is the same config as {first.name}")
            continue
        seen[identity] = len(configs)
        configs.append(WarmConfig(config.name, params, config.source))
    return configs, notes


def _problem(config: WarmConfig, space: CheckedSpace) -> str | None:
    if config.problem is not None:
        return config.problem
    extra = sorted(set(config.params) - set(space.keys))
    if extra:
        return f"it sets {', '.join(extra)}, which the space does not search"
    for axis in space.axes:
        value = config.params.get(axis.key)
        if not axis.contains(value):
            return f"{axis.key} {value!r} is outside the space (widen the axis to try it)"
    return None


def _past_winners(
    workspace: Workspace,
    backend: str,
    architecture: str,
    task: str | None,
    exclude: str | None,
    baseline: dict[str, object],
) -> list[WarmConfig]:
    from kura.sweep.records import list_sweeps, sweep_dir

    found = []
    for sweep_id in list_sweeps(workspace):
        path = sweep_dir(workspace, sweep_id) / "winner.json"
        if sweep_id == exclude or not path.is_file():
            continue
        winner = _read_winner(path)
        if winner.architecture != architecture or winner.task != task:
            continue
        if (winner.backend or backend) != backend:
            continue  # another trainer's winner (a file without the field is checked by the space)
        params = {k: v for k, v in winner.params.items() if k in baseline}
        found.append(
            WarmConfig(
                f"winner of {sweep_id}",
                {**baseline, **params},
                f"sweep {sweep_id} (trial {winner.number})",
            )
        )
    return found


def _read_winner(path: Path) -> Winner:
    """``winner.json`` as its model; InvalidInput naming the file when it is not one."""
    from pydantic import ValidationError

    from kura.bounded import load_json

    try:
        return Winner.model_validate(load_json(path))
    except ValidationError as error:
        raise InvalidInput(
            f"{path} is damaged or was edited by hand: {error}",
            hint="Kura writes it at `kura sweep report`; run that again for its sweep",
            path=path,
        ) from None
