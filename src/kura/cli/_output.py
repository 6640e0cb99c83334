"""The output layer: one JSON document on stdout under ``--json``, Rich for people.

Results, logs and progress never mix: stdout holds the result only; progress bars, notes and
warnings go to stderr.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import fields, is_dataclass, replace
from functools import cache
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast, overload

from kura.errors import KuraError

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from kura.nextsteps import NextStep

__all__ = [
    "CONTRACT",
    "Document",
    "Output",
    "ProgressFn",
    "and_next",
    "contracted",
    "escape_control",
    "escape_markup",
    "escape_value",
    "finite_json",
    "new_table",
]

_MARKUP_TAG = re.compile(r"\[/?(?:bold|dim|italic|red|green|yellow|cyan|magenta|blue)?[a-z ]*\]")
"""Rich style tags in a note, dropped when notes are written without Rich (``--json``)."""

_CONTROL = {
    code: f"\\x{code:02x}"
    for code in (*range(0x20), 0x7F, *range(0x80, 0xA0))
    if code not in (0x09, 0x0A)  # tab and newline lay text out
}
"""C0 and C1 control characters and DEL, each as its visible ``\\xNN``: ESC, BEL and the
8-bit CSI/OSC starters in a file name would otherwise clear the screen or set the title."""

CONTRACT = 2
"""The version of the JSON vocabulary, written as ``contract`` in every document: it changes
when a key is renamed or removed (2: the run is ``run`` and a bundle ``bundle`` everywhere)."""

ProgressFn = Callable[[int, int], None]
Renderer = Callable[["Console", dict[str, Any]], None]


class Document(Protocol):
    """A command's typed result: ``to_dict()`` is its JSON document (with a ``kind``)."""

    def to_dict(self) -> Mapping[str, object]: ...


D = TypeVar("D", bound=Document)
T = TypeVar("T")


class Output:
    """Where a command's result goes. Rich is imported only when a person reads the output:
    under ``--json`` the consoles are never built (a JSON run never imports Rich)."""

    def __init__(self, *, json_mode: bool, stdout: Any = None, stderr: Any = None) -> None:
        self.json_mode = json_mode
        self._stdout = stdout if stdout is not None else sys.stdout
        self._stderr = stderr if stderr is not None else sys.stderr
        self._console: Console | None = None
        self._err: Console | None = None

    @property
    def console(self) -> Console:
        if self._console is None:
            self._console = _terminal_console()(file=self._stdout, highlight=False, soft_wrap=False)
        return self._console

    @property
    def err(self) -> Console:
        if self._err is None:
            self._err = _terminal_console()(file=self._stderr, highlight=False)
        return self._err

    @overload
    def result(self, document: dict[str, Any], render: Renderer) -> None: ...

    @overload
    def result(self, document: D, render: Callable[[Console, D], None]) -> None: ...

    def result(self, document: Any, render: Callable[[Console, Any], None]) -> None:
        """Print a command's result: its JSON document, or its human rendering.

        ``document`` is a typed result (:class:`Document`; the renderer takes the value,
        its strings escaped) or, from commands not yet typed, the document itself."""
        typed = not isinstance(document, dict)
        data = dict(document.to_dict()) if typed else document
        if "kind" not in data:
            raise ValueError("every result document carries a 'kind'")
        if self.json_mode:
            self._stdout.write(
                json.dumps(
                    finite_json(contracted(data)),
                    indent=2,
                    ensure_ascii=False,
                    allow_nan=False,
                    default=str,
                )
            )
            self._stdout.write("\n")
            self._stdout.flush()
        else:
            render(self.console, escape_value(document) if typed else escape_markup(document))

    def error(self, error: KuraError) -> None:
        if self.json_mode:
            document = {"error": error.to_dict(), "contract": CONTRACT}
            self._stdout.write(json.dumps(document, ensure_ascii=False) + "\n")
            self._stdout.flush()
        else:
            from rich.markup import escape

            self.err.print(f"[bold red]error:[/] {escape(error.message)}", highlight=False)
            if error.hint:
                self.err.print(f"[dim]hint:[/] {escape(error.hint)}")

    def note(self, text: str) -> None:
        """A line for people, always on stderr (never spoils JSON on stdout)."""
        if self.json_mode:
            self._stderr.write(escape_control(_MARKUP_TAG.sub("", text)) + "\n")
            return
        self.err.print(text)

    @contextmanager
    def progress(self, description: str, *, in_bytes: bool = False) -> Iterator[ProgressFn]:
        """A progress callback ``(done, total)``; draws a bar only on an interactive stderr
        (never under ``--json``). ``in_bytes``: the counts are bytes, shown as sizes and
        a transfer rate (hashing gigabytes)."""
        if self.json_mode or not self._stderr.isatty():
            yield _no_progress
            return
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            MofNCompleteColumn,
            Progress,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )

        counts = (DownloadColumn(), TransferSpeedColumn()) if in_bytes else (MofNCompleteColumn(),)
        with Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            *counts,
            TimeRemainingColumn(),
            console=self.err,
            transient=True,
        ) as bar:
            task = bar.add_task(description, total=None)

            def update(done: int, total: int) -> None:
                bar.update(task, completed=done, total=total)

            yield update


class Followed(Protocol):
    """A typed result with its ``next`` steps."""

    @property
    def next(self) -> tuple[NextStep, ...]: ...


F = TypeVar("F", bound=Followed)


@overload
def and_next(render: Renderer) -> Renderer: ...


@overload
def and_next(render: Callable[[Console, F], None]) -> Callable[[Console, F], None]: ...


def and_next(render: Callable[[Console, Any], None]) -> Callable[[Console, Any], None]:
    """``render``, then the result's ``next`` as people read it: one ``next:`` line per
    step (the command to run, and why), the same steps ``--json`` carries. ``render`` takes
    a document (its ``next`` a list of ``{command, why}``) or a typed result (a tuple of
    :class:`~kura.nextsteps.NextStep`)."""

    def both(console: Console, document: Any) -> None:
        render(console, document)
        if isinstance(document, dict):
            steps = [(s["command"], s["why"]) for s in document.get("next") or []]
        else:
            steps = [(s.command, s.why) for s in document.next]
        for command, why in steps:
            console.print(f"next: `{command}` — {why}", soft_wrap=True)

    return both


def contracted(document: Mapping[str, Any]) -> dict[str, Any]:
    """The document with the contract version right after its ``kind`` (a copy; the
    other keys keep their order)."""
    out: dict[str, Any] = {}
    for key, value in document.items():
        out[key] = value
        if key == "kind":
            out["contract"] = CONTRACT
    return out


def escape_control(text: str) -> str:
    """``text`` with every control character but tab and newline shown as ``\\xNN``."""
    return text.translate(_CONTROL)


@cache
def _terminal_console() -> type[Console]:
    """Rich's Console, every string it renders passed through :func:`escape_control`
    first: the one place all human output (results, tables, errors, notes) becomes text,
    so no value from a file or a name reaches the terminal as a control sequence."""
    from rich.console import Console

    class TerminalConsole(Console):
        def render_str(self, text: str, **options: Any) -> Any:
            return super().render_str(escape_control(text), **options)

    return TerminalConsole


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
    as written; strings without tag-like brackets are unchanged, so lookups still work.
    Control characters are shown as ``\\xNN`` (:func:`escape_control`), as the console
    shows them in any string it renders."""
    if isinstance(value, str):
        from rich.markup import escape

        return escape(escape_control(value))
    if isinstance(value, dict):
        return {escape_markup(k): escape_markup(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [escape_markup(item) for item in value]
    return value


def escape_value(value: T) -> T:
    """``value`` (a typed result) with every string in it escaped for Rich markup, as
    :func:`escape_markup` escapes a document, its types kept: dataclasses and pydantic
    models are copied with escaped fields, tuples stay tuples, mappings become dicts."""
    from rich.markup import escape

    return cast(T, _escaped(value, escape))


def _escaped(value: object, escape: Callable[[str], str]) -> object:
    if isinstance(value, str):
        return escape(escape_control(value))
    if is_dataclass(value) and not isinstance(value, type):
        init = [f.name for f in fields(value) if f.init]
        return replace(value, **{name: _escaped(getattr(value, name), escape) for name in init})
    model_fields = getattr(type(value), "model_fields", None)
    if isinstance(model_fields, dict) and hasattr(value, "model_copy"):
        update = {name: _escaped(getattr(value, name), escape) for name in model_fields}
        return value.model_copy(update=update)
    if isinstance(value, tuple):
        return tuple(_escaped(item, escape) for item in value)
    if isinstance(value, list):
        return [_escaped(item, escape) for item in value]
    if isinstance(value, Mapping):
        return {_escaped(k, escape): _escaped(v, escape) for k, v in value.items()}
    return value


def _no_progress(done: int, total: int) -> None:
    return None


def new_table(*headers: str, **options: Any) -> Table:
    """A Rich table, imported only when a person's output is drawn."""
    from rich.table import Table

    return Table(*headers, **options)
