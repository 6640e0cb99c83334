"""Musubi's sample-prompt line syntax: how its trainer reads one line of ``--sample_prompts``.

Read from ``training/sampling_prompts.py`` (Musubi Tuner 0.3.4):

- ``load_prompts`` (:103-107) strips each line and drops empty lines and lines whose first
  character is ``#`` (a comment);
- ``line_to_prompt_dict`` (:14-100) splits the line at ``" --"``; the first piece is the
  prompt, and **every** piece, the first one too (``for parg in prompt_args``), is matched
  against the option patterns in :data:`OPTIONS` order with ``re.match`` (at the start,
  case-insensitive), the first match winning; a later piece overwrites an earlier value,
  except ``ci``, which appends (several control images).

So caption text becomes options wherever it holds ``" --"``, and also when it *starts* with
an option pattern (``i am …`` is an image path, ``n 5 dogs`` a negative prompt). A drafted
prompt is text only (:func:`drafted_line`): its ``" --"`` runs are escaped to ``" -"`` and a
text the trainer would still read as an option is refused. The image options
(:data:`PATH_OPTIONS`) name files the trainer opens: compile maps them to the paths the step
sees (:func:`with_paths`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kura.errors import SpecError

__all__ = [
    "OPTIONS",
    "PATH_OPTIONS",
    "Piece",
    "drafted_line",
    "paths",
    "pieces",
    "read_options",
    "text_only",
    "with_paths",
]

SEPARATOR = " --"
OPTIONS: tuple[tuple[str, str, re.Pattern[str]], ...] = tuple(
    (flag, key, re.compile(pattern, re.IGNORECASE))
    for flag, key, pattern in (
        ("w", "width", r"w (\d+)"),
        ("h", "height", r"h (\d+)"),
        ("f", "frame_count", r"f (\d+)"),
        ("d", "seed", r"d (\d+)"),
        ("s", "sample_steps", r"s (\d+)"),
        ("g", "guidance_scale", r"g ([\d\.]+)"),
        ("fs", "discrete_flow_shift", r"fs ([\d\.]+)"),
        ("l", "cfg_scale", r"l ([\d\.]+)"),
        ("n", "negative_prompt", r"n (.+)"),
        ("i", "image_path", r"i (.+)"),
        ("ei", "end_image_path", r"ei (.+)"),
        ("cn", "control_video_path", r"cn (.+)"),
        ("ci", "control_image_path", r"ci (.+)"),
        ("of", "one_frame", r"of (.+)"),
    )
)
"""``line_to_prompt_dict``'s patterns in its order: (flag, prompt-dict key, pattern)."""
PATH_OPTIONS = frozenset({"i", "ei", "cn", "ci"})
"""Options whose value is a file the trainer opens (``.strip()``-ed, as Musubi does)."""
_STRIPPED = frozenset({"i", "ei", "cn", "ci", "of"})
_FLOATS = frozenset({"g", "fs", "l"})


@dataclass(frozen=True)
class Piece:
    """One ``" --"``-separated piece of a line and the option Musubi reads from it (None:
    plain text). ``value`` is the option's value as Musubi keeps it (None: matched but
    refused, so the piece sets nothing)."""

    text: str
    flag: str | None = None
    key: str | None = None
    value: str | None = None


def pieces(line: str) -> list[Piece]:
    """The line as ``line_to_prompt_dict`` reads it, piece by piece (after ``strip()``)."""
    out: list[Piece] = []
    for text in line.strip().split(SEPARATOR):
        piece = Piece(text)
        for flag, key, pattern in OPTIONS:
            match = pattern.match(text)
            if match:
                piece = Piece(text, flag, key, _value(flag, match.group(1)))
                break
        out.append(piece)
    return out


def _value(flag: str, raw: str) -> str | None:
    """The value Musubi keeps: stripped for the text options, None for a number its
    ``float()`` refuses (``1.2.3`` matches ``[\\d\\.]+``: it logs the error and skips it)."""
    if flag in _STRIPPED:
        return raw.strip()
    if flag in _FLOATS:
        try:
            float(raw)
        except ValueError:
            return None
    return raw


def read_options(line: str) -> dict[str, str | list[str]]:
    """The options of one line, by prompt-dict key (``control_image_path``: every value)."""
    found: dict[str, str | list[str]] = {}
    for piece in pieces(line):
        if piece.key is None or piece.value is None:
            continue
        if piece.flag == "ci":
            previous = found.get(piece.key, [])
            assert isinstance(previous, list)
            found[piece.key] = [*previous, piece.value]
        else:
            found[piece.key] = piece.value
    return found


def paths(line: str) -> list[tuple[str, str]]:
    """``(flag, path)`` of every file the line asks the trainer to open, in line order."""
    return [
        (p.flag, p.value)
        for p in pieces(line)
        if p.flag in PATH_OPTIONS and p.flag is not None and p.value is not None
    ]


def with_paths(line: str, mapped: Callable[[str], str]) -> str:
    """The line with each file option's path replaced by ``mapped(path)``; the rest is kept
    byte for byte (only the pieces that name a file are rewritten)."""
    out = []
    for piece in pieces(line):
        if piece.flag in PATH_OPTIONS and piece.value is not None:
            out.append(f"{piece.text[: len(piece.flag or '')]} {mapped(piece.value)}")
        else:
            out.append(piece.text)
    return SEPARATOR.join(out)


def text_only(text: str) -> str:
    """``text`` as a prompt Musubi reads as text alone: one line, every ``" --"`` run
    escaped to ``" -"``, a leading ``#`` (a comment line) dropped. SpecError when the text
    still starts with an option pattern (``i am …`` is read as ``--i am …``)."""
    line = " ".join(text.split())
    line = re.sub(r" -{2,}", " -", line)
    line = line.lstrip("# ").strip()
    if not line:
        raise SpecError(
            f"the caption {text!r} holds no text for a sample prompt",
            hint="write the sample prompt yourself in training.sample_prompts",
        )
    first = pieces(line)[0]
    if first.flag is not None:
        raise SpecError(
            f"the caption {text!r} starts with {line[: len(first.flag) + 1]!r}, which Musubi "
            f"reads as the sample-prompt option --{first.flag} "
            "(training/sampling_prompts.py matches the prompt text itself too)",
            hint="reword the caption, or write the sample prompts yourself in "
            "training.sample_prompts",
        )
    return line


def drafted_line(text: str, *, width: int, height: int) -> str:
    """A drafted sample prompt: ``text`` as text only (:func:`text_only`) at
    ``width``×``height``; the line Musubi reads back has exactly these three things."""
    line = f"{text_only(text)} --w {width} --h {height}"
    options: Mapping[str, object] = read_options(line)
    assert options == {"width": str(width), "height": str(height)}, (line, options)
    return line
