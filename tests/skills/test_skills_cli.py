"""`kura skills list|show|install`: the shipped skills, where agent tools read them."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import pytest

from kura.cli.main import main
from kura.skills import SKILL_FILE, load_skills

REPO = Path(__file__).resolve().parents[2]
SKILLS_DIR = REPO / "src" / "kura" / "data" / "skills"


def _json(*argv: str | Path) -> tuple[int, Any]:
    out = io.StringIO()
    code = main(["--json", *map(str, argv)], stdout=out)
    return code, json.loads(out.getvalue())


def test_list_names_every_skill_folder_with_its_description() -> None:
    code, listed = _json("skills", "list")
    folders = sorted(p.parent.name for p in SKILLS_DIR.glob(f"*/{SKILL_FILE}"))
    assert code == 0 and listed["kind"] == "skill-list"
    assert [s["name"] for s in listed["skills"]] == folders
    assert all(s["description"].startswith("Use when") for s in listed["skills"])
    assert [s["command"] for s in listed["next"]][-1] == "kura skills install ~/.claude/skills"


def test_show_prints_the_whole_file_and_refuses_an_unknown_name() -> None:
    code, shown = _json("skills", "show", "sweeps")
    assert code == 0 and shown["kind"] == "skill" and "next" not in shown
    assert shown["text"] == (SKILLS_DIR / "sweeps" / SKILL_FILE).read_text(encoding="utf-8")
    code, error = _json("skills", "show", "sweep")
    assert code == 6 and "sweeps" in error["error"]["hint"]


def test_the_checkout_skills_folder_is_the_shipped_one() -> None:
    assert (REPO / "skills").resolve() == SKILLS_DIR.resolve()


def test_install_copies_each_skill_and_is_idempotent(tmp_path: Path) -> None:
    target = tmp_path / ".claude" / "skills"
    code, first = _json("skills", "install", target)
    assert code == 0 and first["kind"] == "skills-install" and "next" not in first
    assert {f["action"] for f in first["files"]} == {"created"}
    for skill in load_skills():
        assert (target / skill.name / SKILL_FILE).read_text(encoding="utf-8") == skill.text
    code, again = _json("skills", "install", target)
    assert code == 0 and {f["action"] for f in again["files"]} == {"unchanged"}


def test_install_refuses_to_overwrite_an_edited_skill_without_force(tmp_path: Path) -> None:
    _json("skills", "install", tmp_path)
    edited = tmp_path / "sweeps" / SKILL_FILE
    edited.write_text("my own notes\n", encoding="utf-8")
    removed = tmp_path / "dataset-prep" / SKILL_FILE
    removed.unlink()
    code, error = _json("skills", "install", tmp_path)
    assert code == 1 and str(edited) in error["error"]["message"]
    assert "--force" in error["error"]["hint"]
    # all or nothing: the missing skill was not written either
    assert edited.read_text(encoding="utf-8") == "my own notes\n" and not removed.exists()
    code, forced = _json("skills", "install", tmp_path, "--force")
    actions = {f["skill"]: f["action"] for f in forced["files"]}
    assert code == 0 and actions["sweeps"] == "updated" and actions["dataset-prep"] == "created"
    shipped = {skill.name: skill.text for skill in load_skills()}
    assert edited.read_text(encoding="utf-8") == shipped["sweeps"]


def test_install_writes_atomically(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure while writing leaves no half-written SKILL.md and no temporary file, and is
    Kura's file-system error (exit 8) naming the cause."""
    import kura.fsutil

    def fail(handle: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(kura.fsutil.os, "fsync", fail)
    code, error = _json("skills", "install", tmp_path)
    assert code == 8 and "disk full" in error["error"]["message"]
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_skills_ship_in_the_wheel(tmp_path: Path) -> None:
    """pyproject's package data takes every SKILL.md into the built wheel."""
    data = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert "data/**/*" in data["tool"]["setuptools"]["package-data"]["kura"]
    source = tmp_path / "source"  # a copy: a build writes build/ and egg-info where it runs
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    shutil.copytree(REPO / "src", source / "src", ignore=ignore)
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(source)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = tmp_path.glob("kura-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for skill in load_skills():
        assert f"kura/data/skills/{skill.name}/{SKILL_FILE}" in names
