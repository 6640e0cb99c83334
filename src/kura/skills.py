"""The agent skills Kura ships: list them, show one, install them where an agent tool reads.

A skill is a folder ``<name>/SKILL.md`` whose front matter (a YAML block between ``---``
lines) holds ``name`` (the folder's name) and ``description`` (when an agent should read
it): the form agent tools such as Claude Code load from ``.claude/skills/`` or
``~/.claude/skills/``. They ship as package data (``kura/data/skills/``; the checkout's
``skills/`` is a link to it), so an installed Kura carries them.

``install`` is all or nothing: every target is checked before anything is written, a file
that differs from the shipped one is refused (named) unless ``force``, and each file is
replaced atomically, so an agent never reads half a skill.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import ClassVar, Literal

import yaml

from kura.errors import CheckFailed, InvalidInput, NotFound
from kura.fsutil import atomic_write_text
from kura.nextsteps import NextStep, next_list

__all__ = [
    "SKILL_FILE",
    "Skill",
    "SkillInstall",
    "SkillList",
    "SkillShown",
    "install_skills",
    "list_skills",
    "load_skills",
    "show_skill",
]

SKILL_FILE = "SKILL.md"
_FRONT_MATTER = re.compile(r"\A---\n(.*?)\n---\n", re.DOTALL)

InstallAction = Literal["created", "updated", "unchanged"]


@dataclass(frozen=True)
class Skill:
    """One shipped skill: its ``name``, ``description`` and the whole ``text`` of SKILL.md."""

    name: str
    description: str
    text: str

    @property
    def body(self) -> str:
        """The text after the front matter."""
        return _FRONT_MATTER.sub("", self.text, count=1)


@dataclass(frozen=True)
class SkillList:
    """``kura skills list``."""

    skills: tuple[Skill, ...]
    next: tuple[NextStep, ...] = ()

    kind: ClassVar[str] = "skill-list"

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "skills": [{"name": s.name, "description": s.description} for s in self.skills],
            "next": next_list(*self.next),
        }


@dataclass(frozen=True)
class SkillShown:
    """``kura skills show NAME``: the skill's front matter and its whole SKILL.md (a
    reference document: no ``next``)."""

    skill: Skill

    kind: ClassVar[str] = "skill"

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "name": self.skill.name,
            "description": self.skill.description,
            "text": self.skill.text,
        }


@dataclass(frozen=True)
class InstalledFile:
    skill: str
    path: str
    action: InstallAction


@dataclass(frozen=True)
class SkillInstall:
    """``kura skills install DIR``: each skill's file there and what was done to it (no
    ``next``: the agent tool reads the folder itself)."""

    directory: str
    files: tuple[InstalledFile, ...]

    kind: ClassVar[str] = "skills-install"

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "directory": self.directory,
            "files": [{"skill": f.skill, "path": f.path, "action": f.action} for f in self.files],
        }


def _skills_root() -> Traversable:
    return resources.files("kura").joinpath("data", "skills")


def _parse(folder: str, text: str) -> Skill:
    """A SKILL.md's front matter, checked: ``name`` is the folder's, ``description`` given."""
    match = _FRONT_MATTER.match(text)
    meta = yaml.safe_load(match.group(1)) if match else None
    if not isinstance(meta, dict):
        raise InvalidInput(
            f"skill {folder}: {SKILL_FILE} has no front matter",
            hint="start it with ---, `name:` and `description:` lines, then ---",
        )
    name, description = meta.get("name"), meta.get("description")
    if name != folder or not isinstance(description, str) or not description.strip():
        raise InvalidInput(
            f"skill {folder}: front matter needs name: {folder} and a description",
            hint=f"found name {name!r}, description {description!r}",
        )
    return Skill(name=folder, description=description.strip(), text=text)


def load_skills() -> tuple[Skill, ...]:
    """Every shipped skill, sorted by name."""
    root = _skills_root()
    found = []
    for entry in root.iterdir():
        skill_file = entry.joinpath(SKILL_FILE)
        if entry.is_dir() and skill_file.is_file():
            found.append(_parse(entry.name, skill_file.read_text(encoding="utf-8")))
    return tuple(sorted(found, key=lambda s: s.name))


def _find(name: str) -> Skill:
    skills = load_skills()
    for skill in skills:
        if skill.name == name:
            return skill
    raise NotFound(
        f"no skill named {name!r}",
        hint="skills: " + ", ".join(s.name for s in skills) + " (`kura skills list`)",
    )


def list_skills() -> SkillList:
    first = NextStep("kura skills show training-parameter-planning", "how to plan a run")
    install = NextStep(
        "kura skills install ~/.claude/skills", "put them where an agent tool reads skills"
    )
    return SkillList(load_skills(), next=(first, install))


def show_skill(name: str) -> SkillShown:
    return SkillShown(_find(name))


def _action(target: Path, text: str) -> InstallAction:
    if not target.exists():
        return "created"
    try:
        same = target.read_text(encoding="utf-8") == text
    except UnicodeDecodeError:
        same = False
    return "unchanged" if same else "updated"


def install_skills(directory: Path, *, force: bool = False) -> SkillInstall:
    """Copy every skill to ``directory/<name>/SKILL.md``; refuse to replace a file that
    differs from the shipped one unless ``force`` (then nothing at all is written)."""
    directory = directory.expanduser()
    skills = load_skills()
    plan = [(s, directory / s.name / SKILL_FILE) for s in skills]
    actions = [_action(target, skill.text) for skill, target in plan]
    changed = [str(t) for (_, t), a in zip(plan, actions, strict=True) if a == "updated"]
    if changed and not force:
        raise CheckFailed(
            f"{len(changed)} installed skill file(s) differ from Kura's: {', '.join(changed)}",
            hint="keep your edits elsewhere, or pass --force to replace them with Kura's",
            path=changed[0],
        )
    for (skill, target), action in zip(plan, actions, strict=True):
        if action != "unchanged":
            atomic_write_text(target, skill.text)  # a failure: FileSystemError, exit 8
    files = tuple(
        InstalledFile(skill.name, str(target), action)
        for (skill, target), action in zip(plan, actions, strict=True)
    )
    return SkillInstall(str(directory), files)
