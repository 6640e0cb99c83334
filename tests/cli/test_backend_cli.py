"""`kura backend list|install` ask every registered backend's ``setup`` verb: a new backend
appears without a change to the command, and only a backend Kura installs is installed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KURA_BACKEND_MODULES", "toy-trainer=tests.backends.toy.backend")
    monkeypatch.setenv("PYTHONPATH", f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")


@pytest.fixture
def moss_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    env = tmp_path / "moss-env"
    monkeypatch.setenv("KURA_KOHAKUMOSS_ENV", str(env))
    return env


def test_the_list_names_every_registered_backend(kura, toy: None, moss_env: Path) -> None:
    rows = {row["name"]: row for row in kura("backend", "list", "--json").json()["backends"]}
    assert set(rows) == {"musubi-tuner", "ai-toolkit", "kohakumoss", "toy-trainer"}
    assert "kura image build ai-toolkit" in rows["ai-toolkit"]["environment"]
    assert rows["kohakumoss"]["present"] is False
    assert rows["kohakumoss"]["path"] == str(moss_env.resolve())
    assert rows["toy-trainer"]["present"] is True


def test_a_present_environment_is_not_installed_again(kura, moss_env: Path) -> None:
    (moss_env / "bin").mkdir(parents=True)
    (moss_env / "bin" / "python").write_text("")
    doc = kura("backend", "install", "kohakumoss", "--json").json()
    assert (doc["kind"], doc["installed"], doc["commands"]) == ("backend-install", False, [])
    assert doc["path"] == str(moss_env.resolve())


def test_a_failing_install_command_stops_with_its_exit_code(kura, moss_env: Path) -> None:
    result = kura("backend", "install", "kohakumoss", "--python", "/bin/false", "--json")
    assert result.exit_code != 0
    error = result.json()["error"]
    assert "/bin/false -m venv" in error["message"] and "exited 1" in error["message"]
    assert not (moss_env / "bin" / "python").exists()


@pytest.mark.parametrize(
    ("name", "how"),
    [("musubi", "kura image build musubi-tuner"), ("ai-toolkit", "kura image build ai-toolkit")],
)
def test_a_trainer_installed_from_source_asks_for_one_and_names_the_image(
    kura, name: str, how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in ("KURA_MUSUBI_ENV", "KURA_AITK_ENV"):
        monkeypatch.setenv(variable, str(tmp_path / "no-env"))
    result = kura("backend", "install", name, "--json")
    assert result.exit_code == 2
    error = result.json()["error"]
    assert "name one with --source" in error["message"]
    assert "--source DIR" in error["hint"] and how in error["hint"]


def test_an_unknown_backend_lists_the_registered_ones(kura) -> None:
    result = kura("backend", "install", "nope", "--json")
    assert result.exit_code != 0
    assert "kohakumoss" in result.json()["error"]["message"] + result.json()["error"]["hint"]
