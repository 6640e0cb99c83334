"""Every `kura …` command in every skill and in README.md runs in a demo workspace.

The commands are read from the documents' fenced shell blocks (:mod:`tests.skills.documented`),
their placeholders filled from the demo workspace (:mod:`tests.skills.demo`), and each is
run through Kura's entry point, or parsed where it would launch or install
(:mod:`tests.skills.runner`). A command, option, value or key that does not exist makes the
command exit non-zero, and this test fails naming the document's line.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kura.skills import load_skills
from tests.backends.trainer_required import missing
from tests.skills.demo import DemoWorkspace, build_demo, toy_env
from tests.skills.documented import DocCommand, shell_commands
from tests.skills.runner import Session

REPO = Path(__file__).resolve().parents[2]
DOCUMENTS = {skill.name: skill.text for skill in load_skills()} | {
    "README": (REPO / "README.md").read_text(encoding="utf-8")
}
README_PATHS = {
    "~/photos/myaku": "FOLDER",
    "~/src/ai-toolkit": "DIR",
    "~/src/musubi-tuner": "DIR",
    "~/.claude/skills": "DIR",
}
"""README.md's example paths, standing for the placeholders the skills spell."""


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoWorkspace]:
    root = tmp_path_factory.mktemp("skills-demo")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KURA_CACHE_DIR", str(root / "kura-cache"))
        toy_env(patch, root / "hf-cache")
        yield build_demo(root)


def _tiny_moss_root(tmp: Path) -> str:
    """MOSS_ROOT: a tiny MOSS-Image pipeline root made by KohakuMoss's own builder."""
    from kura.backends.kohakumoss.env import locate_env
    from kura.backends.kohakumoss.queries import build_tiny

    location = locate_env()
    if not location.present:
        missing(f"MOSS_ROOT needs the KohakuMoss environment ({location.path})")
    return str(build_tiny(location, tmp / "moss-root"))


STANDIN_SETS = {"MOSS_ROOT": ("--set", "backend.config.SAMPLE_SKIP_LAYERS=[]")}
"""What a `kura run new` naming a stand-in adds: the tiny MOSS DiT has 2 blocks, so the
sampler must skip none of the released model's 42 (the kohakumoss skill says so)."""


def _with_standin_sets(command: DocCommand) -> DocCommand:
    if command.argv[:2] != ("run", "new"):
        return command
    extra = [
        w
        for name, sets in STANDIN_SETS.items()
        if any(name in a for a in command.argv)
        for w in sets
    ]
    return DocCommand(command.source, command.line, (*command.words, *extra))


def _readme_command(command: DocCommand) -> DocCommand:
    words = tuple(README_PATHS.get(word, word) for word in command.words)
    return DocCommand(command.source, command.line, words)


def commands_of(name: str) -> list[DocCommand]:
    found = [_with_standin_sets(c) for c in shell_commands(DOCUMENTS[name], name)]
    return [_readme_command(c) for c in found] if name == "README" else found


def test_every_new_skill_exists_and_gives_commands() -> None:
    expected = {"ai-toolkit-backend", "kohakumoss-backend", "dataset-prep", "sweeps"}
    expected |= {"rented-gpus", "musubi-tuner-backend", "training-parameter-planning"}
    assert expected <= set(DOCUMENTS)
    assert all(any(c.is_kura for c in commands_of(name)) for name in DOCUMENTS)


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_every_documented_command_runs(
    name: str,
    demo: DemoWorkspace,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("KURA_CACHE_DIR", str(demo.workspace.root.parent / "kura-cache"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # a `~/…` a document names stays here
    session = Session(
        demo, name, monkeypatch, lazy={"MOSS_ROOT": lambda: _tiny_moss_root(tmp_path)}
    )
    failed = [
        outcome.describe()
        for command in commands_of(name)
        if (outcome := session.step(command)) is not None and not outcome.ok
    ]
    assert failed == [], "\n".join(failed)


MISSPELT = [
    ("kura run plan RUN --gpuu GPU", 2, "kura run plan RUN --gpu GPU"),
    ("kura run plann RUN --gpu GPU", 2, "kura run plan RUN --gpu GPU"),
    ("kura dataset set DATASET intnt.task=style", 2, "kura dataset set DATASET intent.task=style"),
    ("kura dataset set DATASET intent.tsak=style", 5, "kura dataset set DATASET intent.task=style"),
    (
        "kura run new --dataset DATASET --base BUNDLE --set training.lerning_rate=1e-4",
        5,
        "kura run new --dataset DATASET --base BUNDLE --set training.learning_rate=1e-4",
    ),
    ("kura run launch RUN --foregrund", 2, "kura run launch RUN --foreground"),
    ("kura run launch RUN --gpu GPU", 2, "kura run launch RUN"),
    ("kura sweep worker SWEEP --max-trial 2", 2, "kura sweep worker SWEEP --max-trials 2"),
    ("kura export RUN --format comfy", 2, "kura export RUN --format comfyui"),
]
"""A misspelt line, the exit code it gets, and the line spelt right (which must pass)."""


def _one(line: str) -> DocCommand:
    (command,) = shell_commands(f"```bash\n{line}\n```\n", "probe")
    return command


@pytest.mark.parametrize(("line", "code", "right"), MISSPELT)
def test_a_misspelling_fails(
    line: str, code: int, right: str, demo: DemoWorkspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcome = Session(demo, "probe", monkeypatch).step(_one(line))
    assert outcome is not None and outcome.code == code, outcome and outcome.describe()
    fixed = Session(demo, "probe", monkeypatch).step(_one(right))
    assert fixed is not None and fixed.ok, fixed and fixed.describe()


def test_placeholders_after_a_dot_are_names(
    demo: DemoWorkspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``backend.config.SAVE_EVERY`` is a KohakuMoss knob, never a placeholder to fill."""
    command = _one("kura run new --dataset DATASET --base BUNDLE --set backend.config.SAVE_EVERY=5")
    filled = Session(demo, "probe", monkeypatch).filled(command)
    assert filled[-1] == "backend.config.SAVE_EVERY=5" and filled[3] == "myaku"


def test_commands_are_read_across_continuations_and_chains() -> None:
    text = (
        "```bash\nkura init ws && cd ws   # comment\nkura run new --dataset a \\\n"
        "  --base b\n```\n```yaml\nkura: not a command\n```\n"
    )
    commands = shell_commands(text, "doc")
    assert [c.words for c in commands] == [
        ("kura", "init", "ws"),
        ("cd", "ws"),
        ("kura", "run", "new", "--dataset", "a", "--base", "b"),
    ]
    assert [c.line for c in commands] == [2, 2, 3]
