"""A trainer environment's location rules and its ``kura-env.json`` record, which
``kura backend install`` writes only after every install command succeeded."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from kura.backends.trainer_env import (
    EnvLocation,
    EnvRecord,
    locate_env,
    read_env_record,
    write_env_record,
)
from kura.errors import InvalidInput

FAKE_PYTHON = """#!/bin/sh
# Stands in for the interpreter that makes a venv: `-m venv DIR` makes DIR/bin/python,
# which accepts anything (the pip commands), prints as pip does and exits 0.
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
  mkdir -p "$3/bin"
  printf '#!/bin/sh\\necho "pip $*" >> "$(dirname "$0")/../pip.log"\\necho Collecting\\n' \\
    > "$3/bin/python" && chmod +x "$3/bin/python"
  exit 0
fi
exit 1
"""


def _location(tmp_path: Path) -> EnvLocation:
    return EnvLocation(tmp_path / "env", "test")


def test_the_variable_wins_over_kura_toml_and_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KURA_MUSUBI_ENV", str(tmp_path / "from-variable"))
    found = locate_env(
        variable="KURA_MUSUBI_ENV",
        toml_value="envs/musubi",
        workspace_root=tmp_path,
        default_name="musubi-tuner-0.3.4",
    )
    assert (found.path, found.source) == ((tmp_path / "from-variable").resolve(), "KURA_MUSUBI_ENV")


def test_kura_toml_is_relative_to_the_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KURA_AITK_ENV", raising=False)
    found = locate_env(
        variable="KURA_AITK_ENV",
        toml_value="envs/aitk",
        workspace_root=tmp_path,
        default_name="ai-toolkit-27a03a9",
    )
    assert (found.path, found.source) == ((tmp_path / "envs" / "aitk").resolve(), "kura.toml")


def test_the_default_is_under_the_user_data_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KURA_AITK_ENV", raising=False)
    found = locate_env(
        variable="KURA_AITK_ENV", toml_value=None, workspace_root=None, default_name="x-1"
    )
    assert found.source == "default" and found.path.parts[-2:] == ("envs", "x-1")


def test_an_unknown_variable_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="KURA_NOPE"):
        locate_env(variable="KURA_NOPE", toml_value=None, workspace_root=None, default_name="x")


def test_the_record_round_trips(tmp_path: Path) -> None:
    location = _location(tmp_path)
    location.path.mkdir()
    record = EnvRecord(
        backend="musubi-tuner", release="0.3.4", checkout="/src/musubi", packages=["torch==2.14.1"]
    )
    write_env_record(location, record)
    assert read_env_record(location) == record


def test_no_record_is_none_and_a_damaged_one_names_the_file(tmp_path: Path) -> None:
    location = _location(tmp_path)
    location.path.mkdir()
    assert read_env_record(location) is None
    location.record_path.write_text('{"backend": "musubi-tuner"}')
    with pytest.raises(InvalidInput, match=r"kura-env\.json is damaged") as caught:
        read_env_record(location)
    assert "--force" in caught.value.hint
    location.record_path.write_text("{not json")
    with pytest.raises(InvalidInput, match="not valid JSON"):
        read_env_record(location)


def test_an_install_writes_the_record_after_its_commands(tmp_path: Path) -> None:
    """As a separate process, so the commands' own output is seen where it really goes:
    pip prints to stderr, stdout stays the one JSON document."""
    env = tmp_path / "moss-env"
    python = tmp_path / "python-maker"
    python.write_text(FAKE_PYTHON)
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    argv = [sys.executable, "-m", "kura", "backend", "install", "kohakumoss"]
    done = subprocess.run(
        [*argv, "--python", str(python), "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "KURA_KOHAKUMOSS_ENV": str(env)},
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["installed"] is True and "Collecting" in done.stderr
    assert len((env / "pip.log").read_text().splitlines()) == 2  # torch, then the rest
    record = json.loads((env / "kura-env.json").read_text())
    assert record["backend"] == "kohakumoss" and record["checkout"] is None
    assert record["packages"][0].startswith("torch==")


def test_a_failed_install_leaves_no_record(kura, tmp_path: Path, monkeypatch) -> None:
    env = tmp_path / "moss-env"
    monkeypatch.setenv("KURA_KOHAKUMOSS_ENV", str(env))
    result = kura("backend", "install", "kohakumoss", "--python", "/bin/false", "--json")
    assert result.exit_code != 0
    assert not (env / "kura-env.json").exists()


def test_kohakumoss_refuses_a_source_folder(kura, tmp_path: Path) -> None:
    result = kura("backend", "install", "kohakumoss", "--source", str(tmp_path), "--json")
    assert result.exit_code == 2
    assert "package registry" in result.json()["error"]["message"]
