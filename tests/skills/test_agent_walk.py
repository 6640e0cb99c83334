"""An agent with only the skills and each document's `next` gets from a folder of pictures
to a sweep's winner promoted into the card, on the toy trainer, without a failed command.

Every command the walk runs is either the first `next` of the document before it, its
placeholders filled with the agent's choices, or a command a skill's fenced blocks give
(same command path); every option it adds is one a skill names. The agent's choices are
what a person would answer or an agent decide: the dataset's name, the trigger word and
task the inspection asks for, the bundle, a GPU class, the toy trainer for a quick sweep.
"""

from __future__ import annotations

import io
import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from kura.cli.main import main
from kura.skills import load_skills
from tests.skills.demo import skill_space, toy_env
from tests.skills.documented import fill, shell_commands
from tests.skills.runner import command_path
from tests.sweep.conftest import write_folder

CHOICES = {
    "NAME": "myaku",
    "BUNDLE": "zimage-base",
    "GPU": "h100-pcie",
    "TASK": "character",
}
ANSWERS = {"intent.trigger": "myaku", "intent.task": "character"}
"""The person's answers to the inspection's questions."""
QUICK = ("--backend", "toy-trainer", "--set", "execution.executor=host")
QUICK += ("--set", "training.epochs=", "--set", "training.max_steps=8")
"""The agent's additions to `run new` (the planning skill names `--backend` and `--set`)."""


def _skill_commands() -> set[str]:
    return {
        command_path(c.argv)
        for skill in load_skills()
        for c in shell_commands(skill.text, skill.name)
        if c.is_kura
    }


def _skill_options() -> set[str]:
    return {m for skill in load_skills() for m in re.findall(r"--[a-z][a-z-]+", skill.text)}


class Agent:
    """Runs commands in the current folder (`cd` as a skill says) and keeps the last
    document's `next`."""

    def __init__(self, start: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.cwd = start
        self.monkeypatch = monkeypatch
        self.last: dict[str, Any] = {}
        self.walked: list[str] = []
        self.documented = _skill_commands()
        self.options = _skill_options()

    def run(self, *argv: str) -> dict[str, Any]:
        path = command_path(argv)
        assert path in self.documented, f"`kura {shlex.join(argv)}`: no skill gives {path}"
        unknown = {a.split("=")[0] for a in argv if a.startswith("--")} - self.options
        assert not unknown, f"`kura {shlex.join(argv)}`: no skill names {unknown}"
        self.monkeypatch.chdir(self.cwd)
        out = io.StringIO()
        code = main([*argv, "--json"], stdout=out)
        document: dict[str, Any] = json.loads(out.getvalue())
        assert code == 0, (argv, document)
        self.walked.append(shlex.join(argv))
        self.last = document
        return document

    def cd(self, folder: str) -> None:
        self.cwd = (self.cwd / folder).resolve()

    def follow(self, *extra: str, step: int = 0) -> dict[str, Any]:
        """Run the last document's `next[step]`, placeholders filled, ``extra`` appended."""
        command = self.last["next"][step]["command"]
        words = shlex.split(command)
        assert words[0] == "kura", command
        filled = [_answer(fill(word, CHOICES)) for word in words[1:]]
        return self.run(*filled, *extra)

    def from_skill(self, skill: str, path: str, **values: str) -> dict[str, Any]:
        """Run the first command of ``skill`` whose path is ``path``, filled from ``values``."""
        text = next(s.text for s in load_skills() if s.name == skill)
        command = next(
            c for c in shell_commands(text, skill) if c.is_kura and command_path(c.argv) == path
        )
        return self.run(*(fill(word, CHOICES | values) for word in command.argv))


def _answer(word: str) -> str:
    key, sep, value = word.partition("=")
    return f"{key}={ANSWERS[key]}" if sep and value == "…" else word


def test_from_a_folder_to_a_promoted_sweep_winner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    toy_env(monkeypatch, tmp_path / "hf-cache")
    folder = write_folder(tmp_path / "photos", 5)
    (tmp_path / "space.yaml").write_text(skill_space())  # the sweeps skill's space file
    agent = Agent(tmp_path, monkeypatch)

    agent.from_skill("dataset-prep", "init")
    agent.cd("ws")  # the skill's `kura init ws && cd ws`
    added = agent.from_skill("dataset-prep", "dataset add", FOLDER=str(folder))
    assert {q["key"] for q in added["inspection"]["questions"]} == set(ANSWERS)
    agent.follow()  # kura dataset set myaku intent.trigger=… intent.task=…
    agent.follow()  # kura dataset validate myaku
    run = agent.follow(*QUICK)["run"]  # kura run new --dataset myaku --base BUNDLE
    agent.follow()  # kura run plan RUN --gpu GPU: the base run fits
    assert agent.last["fits"] is True

    sweep = agent.from_skill("sweeps", "sweep new", RUN=run, SPACE=str(tmp_path / "space.yaml"))
    assert sweep["base_run"] == run
    agent.follow()  # kura sweep plan SWEEP --gpu GPU
    agent.follow()  # kura sweep approve SWEEP
    worker = agent.follow("--gpu", CHOICES["GPU"], "--max-trials", "2")  # kura sweep worker
    # the skill's space stops weak trials early: the follower reports every step the toy
    # trainer logs, so the second trial may be pruned at a rung; the first always completes
    statuses = [t["status"] for t in worker["trials"]]
    assert statuses[0] == "complete" and set(statuses) <= {"complete", "pruned"}, worker
    agent.follow(step=1)  # kura sweep report SWEEP
    assert agent.last["best"] is not None
    promoted = agent.follow()  # kura sweep promote SWEEP
    assert promoted["source"].startswith(f"sweep {sweep['sweep']}")

    card = agent.from_skill("sweeps", "knowledge show", ARCH="zimage", BACKEND="toy-trainer")
    assert any(e["source"].startswith(f"sweep {sweep['sweep']}") for e in card["entries"])
    assert len(agent.walked) == 13, agent.walked
