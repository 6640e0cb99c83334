"""The output layer: one JSON document on stdout under ``--json``, Rich for people.

Results, logs and progress never mix: stdout holds the result only; progress bars, notes and
warnings go to stderr.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.markup import escape

from kura.errors import KuraError

__all__ = ["Output", "ProgressFn", "escape_markup", "finite_json"]

ProgressFn = Callable[[int, int], None]
Renderer = Callable[[Console, dict[str, Any]], None]


class Output:
    def __init__(self, *, json_mode: bool, stdout: Any = None, stderr: Any = None) -> None:
        self.json_mode = json_mode
        self._stdout = stdout if stdout is not None else sys.stdout
        self.console = Console(file=self._stdout, highlight=False, soft_wrap=False)
        self.err = Console(file=stderr if stderr is not None else sys.stderr, highlight=False)

    def result(self, document: dict[str, Any], render: Renderer) -> None:
        """Print a command's result: the document itself, or its human rendering."""
        if "kind" not in document:
            raise ValueError("every result document carries a 'kind'")
        if self.json_mode:
            self._stdout.write(
                json.dumps(
                    finite_json(document),
                    indent=2,
                    ensure_ascii=False,
                    allow_nan=False,
                    default=str,
                )
            )
            self._stdout.write("\n")
            self._stdout.flush()
        else:
            render(self.console, escape_markup(document))

    def error(self, error: KuraError) -> None:
        if self.json_mode:
            self._stdout.write(json.dumps({"error": error.to_dict()}, ensure_ascii=False) + "\n")
            self._stdout.flush()
        else:
            self.err.print(f"[bold red]error:[/] {escape(error.message)}", highlight=False)
            if error.hint:
                self.err.print(f"[dim]hint:[/] {escape(error.hint)}")

    def note(self, text: str) -> None:
        """A line for people, always on stderr (never spoils JSON on stdout)."""
        self.err.print(text)

    @contextmanager
    def progress(self, description: str) -> Iterator[ProgressFn]:
        """A progress callback ``(done, total)``; draws a bar only on an interactive stderr."""
        if not self.err.is_terminal:
            yield _no_progress
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

        with Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=self.err,
            transient=True,
        ) as bar:
            task = bar.add_task(description, total=None)

            def update(done: int, total: int) -> None:
                bar.update(task, completed=done, total=total)

            yield update


def finite_json(value: Any) -> Any:
    """``value`` with NaN and ±Infinity as ``None``: JSON has no such numbers, and
    ``json.dumps`` would write the non-standard ``NaN``/``Infinity`` that strict parsers
    (``jq``, JavaScript's ``JSON.parse``) refuse. Tuples become lists, as JSON has them."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite_json(item) for item in value]
    return value


def escape_markup(value: Any) -> Any:
    """``value`` with every string (keys included) escaped for Rich markup.

    Renderers build markup around values from files and users (paths, captions, notes): a
    ``[/x]`` in one would crash the print (``MarkupError``) and ``[bold red]`` would restyle
    the line. Renderers receive the escaped document, so any value they interpolate prints
    as written; strings without tag-like brackets are unchanged, so lookups still work."""
    if isinstance(value, str):
        return escape(value)
    if isinstance(value, dict):
        return {escape_markup(k): escape_markup(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [escape_markup(item) for item in value]
    return value


def _no_progress(done: int, total: int) -> None:
    return None
