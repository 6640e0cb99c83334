"""The agent contract's acceptance test (issue 26): every ``next`` of every document, walked.

An agent that only follows ``next`` must get from a fresh workspace to an exported LoRA, and
back to one from each failure state (cancelled, failed, out of memory, model files missing,
not approved, changed since its plan), without a dead end: no ``next`` command, run, is
refused as a state conflict (exit 9) or as a malformed command line (exit 2), and none is
refused with the error its own document's state already had (a loop).

The trainer is the tests' toy (``tests/backends/toy``), run by the host executor; the model
files are header-only stand-ins. The walk makes the choices an agent makes: the placeholders
(``NAME``, ``BUNDLE``, ``GPU`` …) get this workspace's values, a drafted run picks the toy
trainer, and ``kura model fetch`` (a download) installs the stand-ins instead. Commands that
leave this machine or never end are not run; :data:`NOT_RUN` says why for each.
"""

from __future__ import annotations

import io
import json
import os
import shlex
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from tests.cli.vocabulary import synonyms

from kura.cli.main import main
from kura.models.bundles import get_bundle

REPO = Path(__file__).resolve().parents[2]
TOY_MODE = REPO / "tests" / "backends" / "toy" / "mode"
BUNDLE = "zimage-base"
GPU = "h100-pcie"
TRAINER = ("--backend", "toy-trainer", "--set", "execution.executor=host")

NOT_RUN = {
    "cp ": "copies the LoRA out of the workspace (the person's folder)",
    "kura serve": "a server that runs until stopped",
    "kura backend install": "a pip install",
    "kura sweep collect": "needs another machine's workspace",
}
ANSWERS = {"intent.task": "character", "intent.trigger": "myaku"}
PLACEHOLDERS = {"NAME": "myaku", "BUNDLE": BUNDLE, "GPU": GPU, "N": "4", "TASK": "character"}
SMALL = ("--set", "backend.config.shrink_activations=true")
"""After the out-of-memory the toy's plans use its memory aid, or do not fit."""
REFUSED = {2: "a malformed command line", 9: "a state conflict"}


@dataclass
class Walk:
    """Every command the walk ran, the documents it reached, and what went wrong."""

    root: Path
    folder: Path
    ran: dict[str, tuple[int, dict[str, Any]]] = field(default_factory=dict)
    dead_ends: list[str] = field(default_factory=list)

    def kura(self, *argv: str) -> tuple[int, dict[str, Any]]:
        out = io.StringIO()
        code = main(["--json", "-w", str(self.root / "ws"), *argv], stdout=out)
        text = out.getvalue()
        if argv[:2] == ("run", "watch"):  # JSON lines: the final state is the last line
            text = [line for line in text.splitlines() if line.strip()][-1]
        return code, json.loads(text)

    def follow(self, start: dict[str, Any], *, limit: int = 40) -> list[dict[str, Any]]:
        """Run every ``next`` reachable from ``start``, breadth first; the documents."""
        reached = [start]
        queue = deque(("", start, step) for step in start.get("next") or [])
        edges: set[tuple[str, str]] = set()
        while queue and limit:
            came_from, parent, step = queue.popleft()
            argv = self._argv(step["command"])
            if argv is None:
                continue
            key = shlex.join(argv)
            if (came_from, key) in edges or (key in self.ran and not _repeats(argv)):
                continue
            edges.add((came_from, key))
            limit -= 1
            code, doc = self._run(argv)
            self.ran[key] = (code, doc)
            error = doc.get("error")
            if code in REFUSED:
                self.dead_ends.append(
                    f"`{step['command']}` (next of {parent.get('kind')}) was refused as "
                    f"{REFUSED[code]}: {error and error['message']}"
                )
                continue
            if error is not None:
                if error["message"] == (parent.get("error") or {}).get("message"):
                    self.dead_ends.append(f"`{step['command']}` loops on {error['message']}")
                continue
            reached.append(doc)
            queue.extend((key, doc, s) for s in doc.get("next") or [])
        return reached

    def _run(self, argv: list[str]) -> tuple[int, dict[str, Any]]:
        if argv[:2] == ["model", "fetch"]:  # the download, offline: the stand-in files
            from kura.models.standins import install_bundle_in_hub_cache

            install_bundle_in_hub_cache(get_bundle(argv[2]), Path(os.environ["HF_HUB_CACHE"]))
        if argv[:2] == ["run", "new"] and "--backend" not in argv:
            argv = [*argv, *TRAINER]
        return self.kura(*argv)

    def _argv(self, command: str) -> list[str] | None:
        """The command with the agent's values for its placeholders; None: not run here."""
        if any(command.startswith(prefix) for prefix in NOT_RUN):
            return None
        words = shlex.split(command)
        assert words[0] == "kura", command
        words = words[1:]
        if words[:1] == ["--workspace"]:
            assert Path(words[1]).resolve() == (self.root / "ws").resolve(), command
            words = words[2:]
        filled = [self._fill(word, command) for word in words]
        if filled[:2] == ["dataset", "add"] and "myaku" in self._datasets():
            return None  # the walk's dataset is registered; a second add is a new name
        return filled

    def _fill(self, word: str, command: str) -> str:
        if word in PLACEHOLDERS:
            return PLACEHOLDERS[word]
        if word == "PATH":
            return str(self.folder)
        if word == "…":
            return "looked at the samples"
        if word.endswith("=…"):
            key = word.removesuffix("=…")
            assert key in ANSWERS, f"an unanswered question {key!r} in `{command}`"
            return f"{key}={ANSWERS[key]}"
        assert not (word.isupper() and word.isalpha()), f"a placeholder {word!r} in `{command}`"
        return word

    def _datasets(self) -> set[str]:
        folder = self.root / "ws" / "datasets"
        return {p.name for p in folder.iterdir()} if folder.is_dir() else set()

    def exported(self) -> list[str]:
        return [doc["run"] for _, doc in self.ran.values() if doc.get("kind") == "lora-export"]


def _repeats(argv: list[str]) -> bool:
    """A command whose answer depends on what happened since it last ran (plan again after
    a download, status after a launch): run again when another document points at it."""
    return argv[:2] in (["run", "plan"], ["run", "status"], ["run", "approve"])


@pytest.fixture
def walk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Walk]:
    """A folder of captioned images and no workspace yet; the toy trainer, no model files."""
    monkeypatch.setenv("KURA_BACKEND_MODULES", "toy-trainer=tests.backends.toy.backend")
    monkeypatch.setenv("PYTHONPATH", f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    folder = tmp_path / "photos"
    folder.mkdir()
    for index in range(4):
        Image.new("RGB", (768, 512), (60 * index, 80, 120)).save(folder / f"{index}.png")
        (folder / f"{index}.txt").write_text(f"myaku, picture {index}\n")
    TOY_MODE.unlink(missing_ok=True)
    try:
        yield Walk(tmp_path, folder)
    finally:
        TOY_MODE.unlink(missing_ok=True)


def _fresh(walk: Walk) -> None:
    """From nothing to an exported LoRA; the model files are missing until the walk fetches."""
    out = io.StringIO()
    assert main(["--json", "init", str(walk.root / "ws")], stdout=out) == 0
    walk.follow(json.loads(out.getvalue()))
    assert walk.dead_ends == []
    assert walk.exported(), f"no LoRA was exported; the walk ran {list(walk.ran)}"
    spoken = {k: synonyms(doc) for k, (_, doc) in walk.ran.items() if "error" not in doc}
    assert {k: found for k, found in spoken.items() if found} == {}, "one name per concept"


def _drafted(walk: Walk, *sets: str) -> str:
    code, doc = walk.kura("run", "new", "--dataset", "myaku", "--base", BUNDLE, *TRAINER, *sets)
    assert code == 0, doc
    return str(doc["run"])


def _approved(walk: Walk, *sets: str) -> str:
    run = _drafted(walk, *sets)
    assert walk.kura("run", "plan", run, "--gpu", GPU)[0] == 0
    code, approval = walk.kura("run", "approve", run)
    assert code == 0, approval
    return run


def _back_from(walk: Walk, run: str) -> None:
    """From the run's status in its failure state to an exported LoRA of some run."""
    before = set(walk.exported())
    code, status = walk.kura("run", "status", run)
    assert code == 0 and status["next"], status
    walk.follow(status)
    assert walk.dead_ends == []
    assert set(walk.exported()) - before, f"no LoRA exported from {run}: ran {list(walk.ran)}"


def test_a_fresh_workspace_reaches_an_exported_lora_by_next_alone(walk: Walk) -> None:
    _fresh(walk)
    kinds = {doc.get("kind") for _, doc in walk.ran.values()}
    assert {"dataset-add", "run-new", "run-plan", "run-approval", "run-launch"} <= kinds
    fetched = [key for key in walk.ran if key.startswith("model fetch")]
    assert fetched, "the plan without model files pointed at the download"


def test_each_failure_state_leads_back_to_an_exported_lora(walk: Walk) -> None:
    _fresh(walk)

    TOY_MODE.write_text("oom")
    oom = _approved(walk)
    assert walk.kura("run", "launch", oom, "--foreground")[1]["state"]["status"] == "failed"
    _back_from(walk, oom)
    assert f"run relaunch {oom}" in walk.ran, "an out-of-memory is relaunched"

    TOY_MODE.write_text("crash")
    crashed = _approved(walk, *SMALL)
    assert walk.kura("run", "launch", crashed, "--foreground")[1]["state"]["status"] == "failed"
    TOY_MODE.unlink()
    _back_from(walk, crashed)
    assert f"run new --from {crashed} {shlex.join(TRAINER)}" not in walk.ran
    assert any(key.startswith(f"run new --from {crashed}") for key in walk.ran)

    slow = _approved(walk, *SMALL, "--set", "backend.config.step_sleep=0.2")
    walk.kura("run", "launch", slow)
    _wait_for_training(walk, slow)
    code, cancelled = walk.kura("run", "cancel", slow)
    assert code == 0 and cancelled["state"]["status"] == "cancelled", cancelled
    walk.follow(cancelled)
    assert walk.dead_ends == []
    assert any(key.startswith(f"run new --from {slow}") for key in walk.ran)

    planned = _drafted(walk)
    assert walk.kura("run", "plan", planned, "--gpu", GPU)[0] == 0
    code, refused = walk.kura("run", "launch", planned)
    assert code == 9 and f"kura run approve {planned}" in refused["error"]["hint"], refused
    _back_from(walk, planned)

    changed = _drafted(walk)
    assert walk.kura("run", "plan", changed, "--gpu", GPU)[0] == 0
    run_yaml = walk.root / "ws" / "runs" / changed / "run.yaml"
    run_yaml.write_text(run_yaml.read_text().replace("rank: ", "rank: 1", 1))
    code, refused = walk.kura("run", "approve", changed)
    assert code == 1 and f"kura run plan {changed} --gpu {GPU}" in refused["error"]["hint"]
    _back_from(walk, changed)


def test_a_plan_without_its_model_files_points_at_the_download_not_at_approval(
    walk: Walk,
) -> None:
    out = io.StringIO()
    assert main(["--json", "init", str(walk.root / "ws")], stdout=out) == 0
    assert walk.kura("dataset", "add", "myaku", str(walk.folder))[0] == 0
    run = _drafted(walk)
    code, plan = walk.kura("run", "plan", run, "--gpu", GPU)
    assert code == 0 and plan["downloads"]["files"], plan
    assert [s["command"] for s in plan["next"]] == [
        f"kura model fetch {BUNDLE}",
        f"kura run plan {run} --gpu {GPU}",
    ]


def _wait_for_training(walk: Walk, run: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        state = walk.kura("run", "status", run)[1]["state"]
        if state is not None and state["status"] == "training":
            return
        time.sleep(0.2)
    raise AssertionError(f"run {run} never started training")
