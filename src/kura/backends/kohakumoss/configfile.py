"""Render kogine config files: a docstring naming the script, ``use_config`` lines, knobs.

KohakuMoss's validator finds a config's target script by the first ``scripts/<…>.py`` in
its docstring, so the train config says ``scripts/train/moss.py`` and the data config names
the three data scripts. Values are written as Python literals (``repr`` of checked values:
strings, numbers, booleans, None, lists, tuples, dicts), in sorted knob order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from kura.backends.kohakumoss.knobs import KnobValue

__all__ = ["DATA_SCRIPTS", "TRAIN_SCRIPT", "literal", "render_config"]

TRAIN_SCRIPT = "scripts/train/moss.py"
DATA_SCRIPTS = (
    "scripts/data/inspect_data.py",
    "scripts/data/cache_text.py",
    "scripts/data/cache_latents.py",
)


def literal(value: KnobValue) -> str:
    """``value`` as a Python literal that reads back equal (``repr`` is exact for these)."""
    if isinstance(value, Mapping):
        inner = ", ".join(f"{k!r}: {literal(v)}" for k, v in value.items())
        return "{" + inner + "}"
    if isinstance(value, tuple):
        items = [literal(v) for v in value]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if isinstance(value, list):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    return repr(value)


def render_config(
    title: str,
    scripts: Sequence[str],
    uses: Sequence[Path],
    knobs: Mapping[str, KnobValue],
    notes: Sequence[str] = (),
) -> str:
    """One kogine config: a docstring ("<title> Drives <scripts>."), the layers, the knobs."""
    doc = [
        f"{title} Drives {', '.join(scripts)}.",
        "",
        "Written by Kura; edit run.yaml, not this file.",
    ]
    doc += list(notes)
    lines = ['"""' + "\n".join(doc) + '\n"""', "", "from kohakuengine import use_config", ""]
    lines += [f"use_config({path.as_posix()!r})" for path in uses]
    lines.append("")
    lines += [f"{name} = {literal(knobs[name])}" for name in sorted(knobs)]
    return "\n".join(lines) + "\n"
