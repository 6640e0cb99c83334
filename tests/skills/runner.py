"""Run a document's `kura …` commands the way an agent would, in-process.

Each command goes through Kura's own entry point (:func:`kura.cli.main.main`) with
``--json``, in the folder the document's ``cd`` lines lead to (first: the demo workspace),
and must exit 0. A command that would launch, train, rent, download, install, build or
serve is parsed instead: every command of its group gets a callback that does nothing, so
Click still checks the command, every option and every typed value (a choice, a number, a
path that must exist), and a misspelt one fails; a free-text argument the command itself
would check (the NAME of `kura backend install NAME`) is not checked there.
``RUN`` is the run the document's latest `kura run new` printed (before any: the demo's
drafted run), except for commands that need a trained run (``FINISHED``).
"""

from __future__ import annotations

import io
import json
import shlex
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
import pytest

from kura.cli.main import COMMANDS, cli, main, split_global_flags
from tests.skills.demo import DemoWorkspace
from tests.skills.documented import DocCommand, fill, placeholders_in

__all__ = ["PARSED_ONLY", "Outcome", "Session"]

PARSED_ONLY = frozenset(
    {
        "backend install",
        "demo",
        "doctor",
        "image build",
        "model fetch",
        "run cancel",
        "run collect",
        "run launch",
        "run relaunch",
        "run resume",
        "run watch",
        "serve",
        "sweep worker",
    }
)
"""Commands that start a trainer, a download, an install, a build, a server or a machine
check: parsed, never run."""

FINISHED = frozenset(
    {"export", "export merge-ema", "run logs", "run evaluate", "knowledge promote"}
)
"""Commands whose RUN is the demo's finished run (they read a trained LoRA or its log, or
judge and promote a run that ran)."""


@dataclass(frozen=True)
class Outcome:
    command: DocCommand
    argv: tuple[str, ...]
    code: int
    document: Any
    parsed_only: bool

    @property
    def ok(self) -> bool:
        return self.code == 0

    def describe(self) -> str:
        how = "parsed" if self.parsed_only else "ran"
        detail = self.document.get("error") if isinstance(self.document, dict) else ""
        argv = shlex.join(self.argv)
        return f"{self.command.where()}\n  {how} `kura {argv}`: exit {self.code} {detail}"


def command_path(argv: tuple[str, ...]) -> str:
    """``run plan`` for ``--workspace W run plan RUN``: the group and its sub-command."""
    args, _ = split_global_flags(list(argv))
    words = []
    skip = False
    for word in args:
        if skip:
            skip = False
            continue
        if word in ("-w", "--workspace"):
            skip = True
            continue
        if word.startswith("-"):
            continue
        words.append(word)
        if len(words) == 2 or words[0] not in COMMANDS:
            break
    if not words:
        return ""
    top = cli.get_command(click.Context(cli), words[0])
    if isinstance(top, click.Group) and len(words) == 2 and words[1] in top.commands:
        return " ".join(words)
    return words[0]


@contextmanager
def _callbacks_do_nothing(top_name: str) -> Iterator[None]:
    """Every leaf command under ``kura TOP`` with a callback that does nothing."""
    with pytest.MonkeyPatch.context() as patch:
        top = cli.get_command(click.Context(cli), top_name)
        stack = [top] if top is not None else []
        while stack:
            command = stack.pop()
            if isinstance(command, click.Group):
                stack.extend(command.commands.values())
            if command.callback is not None:
                patch.setattr(command, "callback", _nothing)
        yield


def _nothing(*args: object, **kwargs: object) -> None:
    return None


@dataclass
class Session:
    """One document's walk through the demo workspace."""

    demo: DemoWorkspace
    document: str
    monkeypatch: pytest.MonkeyPatch
    lazy: dict[str, Callable[[], str]] = field(default_factory=dict)
    cwd: Path = field(init=False)
    run: str = field(init=False)
    values: dict[str, str] = field(init=False)

    def __post_init__(self) -> None:
        self.cwd = self.demo.workspace.root
        self.run = self.demo.drafted
        self.values = dict(self.demo.fixed)
        # Names registered by this document (unique per document: the workspace is shared).
        self.values["NAME"] = f"added-{self.document}"
        self.values["EDITS"] = f"edits-{self.document}"

    def value(self, name: str, path: str) -> str:
        if name == "RUN":
            return self.demo.finished if path in FINISHED else self.run
        if name not in self.values and name in self.lazy:
            self.values[name] = self.lazy[name]()
        if name not in self.values:
            raise KeyError(f"unknown placeholder {name} (see src/kura/data/skills/README.md)")
        return self.values[name]

    def filled(self, command: DocCommand) -> tuple[str, ...]:
        path = command_path(command.argv)
        names = {n for word in command.argv for n in placeholders_in(word)}
        values = {n: self.value(n, path) for n in names}
        return tuple(fill(word, values) for word in command.argv)

    def step(self, command: DocCommand) -> Outcome | None:
        """Run (or parse) one command; follow a ``cd``; other shell commands are skipped."""
        if command.is_cd:
            self.cwd = (self.cwd / Path(command.words[1]).expanduser()).resolve()
            return None
        if not command.is_kura:
            return None
        argv = self.filled(command)
        path = command_path(argv)
        self.monkeypatch.chdir(self.cwd)
        out = io.StringIO()
        elsewhere = self.cwd.resolve() != self.demo.workspace.root.resolve()
        if path in PARSED_ONLY or not path or (path in FINISHED and elsewhere):
            # (a command on a trained run, in a workspace the document made: none ran there)
            with _callbacks_do_nothing(path.split(" ")[0] if path else ""):
                code = main([*argv, "--json"], stdout=out)
            return Outcome(command, argv, code, _parsed(out.getvalue()), parsed_only=True)
        code = main([*argv, "--json"], stdout=out)
        document = _parsed(out.getvalue())
        if code == 0 and path == "run new" and isinstance(document, dict):
            self.run = str(document["run"])
        return Outcome(command, argv, code, document, parsed_only=False)


def _parsed(text: str) -> Any:
    text = text.strip()
    if not text:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return json.loads(text.splitlines()[-1])
