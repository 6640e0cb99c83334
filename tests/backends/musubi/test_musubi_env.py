"""Musubi's own environment without installing it: the source check, the install commands
and record, the host executor's checkout and executables, and `backend install`'s refusals."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest

from kura.backends.musubi.env import (
    PINS,
    REMOVED,
    check_source,
    env_record,
    host_trainer,
    install_commands,
    musubi_env,
)
from kura.backends.registry import get_backend
from kura.backends.trainer_env import EnvLocation, write_env_record
from kura.errors import InvalidInput, NotFound, SpecError
from kura.initialize import init_workspace
from kura.workspace import Workspace


def fake_checkout(folder: Path, version: str = "0.3.4") -> Path:
    (folder / "src" / "musubi_tuner").mkdir(parents=True)
    (folder / "pyproject.toml").write_text(
        f'[project]\nname = "musubi-tuner"\nversion = "{version}"\n', encoding="utf-8"
    )
    return folder


def fake_env(folder: Path) -> EnvLocation:
    location = EnvLocation(folder, "test")
    location.python.parent.mkdir(parents=True)
    location.python.write_text("")
    return location


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    monkeypatch.setenv("KURA_MUSUBI_ENV", str(tmp_path / "env"))
    workspace, _ = init_workspace(tmp_path / "ws")
    return workspace


def set_checkout(workspace: Workspace, value: str) -> None:
    text = workspace.config_path.read_text()
    workspace.config_path.write_text(
        text.replace("[executor]", f'[executor]\nmusubi_checkout = "{value}"', 1)
    )


def test_a_checkout_at_the_pinned_release_is_the_source(tmp_path: Path) -> None:
    checkout = fake_checkout(tmp_path / "musubi")
    assert check_source(checkout) == checkout.resolve()


def test_a_source_that_is_not_the_pinned_musubi_is_refused_naming_the_folder(
    tmp_path: Path,
) -> None:
    with pytest.raises(NotFound, match="is not a folder"):
        check_source(tmp_path / "nowhere")
    (tmp_path / "plain").mkdir()
    with pytest.raises(InvalidInput, match=r"plain has no src/musubi_tuner"):
        check_source(tmp_path / "plain")
    older = fake_checkout(tmp_path / "older", version="0.3.3")
    with pytest.raises(InvalidInput, match=r"is Musubi Tuner 0\.3\.3") as info:
        check_source(older)
    assert "git -C" in info.value.hint and "checkout v0.3.4" in info.value.hint
    other = tmp_path / "other"
    (other / "src" / "musubi_tuner").mkdir(parents=True)
    (other / "pyproject.toml").write_text('[project]\nname = "other"\nversion = "0.3.4"\n')
    with pytest.raises(InvalidInput, match="not Musubi Tuner's"):
        check_source(other)


def test_the_install_is_four_argv_lists_and_the_record_names_the_checkout(
    tmp_path: Path,
) -> None:
    location = EnvLocation(tmp_path / "env", "test")
    checkout = fake_checkout(tmp_path / "musubi")
    venv, torch, musubi, uninstall = install_commands(location, checkout, "/usr/bin/python3")
    assert venv == ("/usr/bin/python3", "-m", "venv", str(location.path))
    assert torch[:4] == (str(location.python), "-m", "pip", "install")
    assert torch[-2:] == ("torch==2.14.1", "torchvision==0.29.1")
    assert str(checkout) in musubi and "-e" not in musubi  # non-editable: nothing written
    assert "tensorboard==2.21.0" in musubi
    assert uninstall[-2:] == ("-y", REMOVED.requirement)
    assert all(pin.reason for pin in (*PINS, REMOVED))
    record = env_record(checkout)
    assert (record.backend, record.release, record.checkout) == (
        "musubi-tuner",
        "0.3.4",
        str(checkout),
    )
    assert record.packages[:3] == [pin.requirement for pin in PINS]


def test_setup_installs_from_source_or_kura_toml_and_lists_without_either(
    ws: Workspace, tmp_path: Path
) -> None:
    backend = get_backend("musubi-tuner")
    listed = backend.setup(ws)
    assert listed.install == () and listed.present is False
    assert "--source DIR" in listed.how and "no checkout named" in listed.how
    assert listed.path == tmp_path / "env" and listed.source == "KURA_MUSUBI_ENV"
    checkout = fake_checkout(tmp_path / "musubi")
    given = backend.setup(ws, source=checkout)
    assert given.checkout == checkout and len(given.install) == 4
    assert given.record is not None and given.record.checkout == str(checkout)
    set_checkout(ws, "../musubi")  # relative to the workspace
    assert backend.setup(ws).checkout == checkout


def test_a_bad_source_is_refused_but_a_bad_kura_toml_checkout_only_reported(
    ws: Workspace, tmp_path: Path
) -> None:
    backend = get_backend("musubi-tuner")
    with pytest.raises(InvalidInput, match="not a Musubi Tuner checkout"):
        backend.setup(ws, source=tmp_path)
    set_checkout(ws, str(tmp_path))
    listed = backend.setup(ws)  # `kura backend list` still lists every backend
    assert listed.install == ()
    assert "kura.toml's executor.musubi_checkout" in listed.how


FAKE_PYTHON = """#!/bin/sh
# Stands in for the interpreter that makes a venv: `-m venv DIR` makes DIR/bin/python, which
# logs the pip commands it is given and exits 0.
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
  mkdir -p "$3/bin" && printf '#!/bin/sh\\necho "$*" >> "$(dirname "$0")/../pip.log"\\n' \\
    > "$3/bin/python" && chmod +x "$3/bin/python"
  exit 0
fi
exit 1
"""


def test_backend_install_runs_the_commands_then_writes_the_record(
    kura: Any, ws: Workspace, tmp_path: Path
) -> None:
    refused = kura("--workspace", ws.root, "backend", "install", "musubi", "--json")
    assert refused.exit_code != 0
    assert "--source DIR" in refused.json()["error"]["hint"]
    python = tmp_path / "python-maker"
    python.write_text(FAKE_PYTHON)
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    checkout = fake_checkout(tmp_path / "musubi")
    argv = ["--workspace", ws.root, "backend", "install", "musubi", "--python", python]
    done = kura(*argv, "--source", checkout, "--json")
    assert done.exit_code == 0, done.stderr
    pip = (tmp_path / "env" / "pip.log").read_text().splitlines()
    assert [line.split()[2] for line in pip] == ["install", "install", "uninstall"]
    assert str(checkout) in pip[1]
    record = json.loads((tmp_path / "env" / "kura-env.json").read_text())
    assert record["checkout"] == str(checkout)
    again = kura(*argv, "--source", checkout, "--json").json()
    assert again["installed"] is False  # there, and finished: nothing to do


def test_the_host_executor_runs_the_recorded_checkout_with_the_environments_bin(
    ws: Workspace, tmp_path: Path
) -> None:
    backend = get_backend("musubi-tuner")
    with pytest.raises(SpecError, match="no Musubi Tuner environment is installed") as info:
        backend.trainer_dir(ws, in_container=False)
    assert "kura backend install musubi --source DIR" in info.value.hint
    location = fake_env(tmp_path / "env")
    with pytest.raises(SpecError, match=r"has no kura-env\.json"):
        backend.trainer_bin(ws, in_container=False)
    checkout = fake_checkout(tmp_path / "musubi")
    write_env_record(location, env_record(checkout))
    assert backend.trainer_dir(ws, in_container=False) == str(checkout)
    assert backend.trainer_bin(ws, in_container=False) == str(location.bin_dir)
    assert backend.trainer_dir(ws, in_container=True) == "/opt/musubi-tuner"
    assert backend.trainer_bin(ws, in_container=True) is None
    assert backend.setup(ws).present is True
    (checkout / "src" / "musubi_tuner").rmdir()
    with pytest.raises(SpecError, match="is gone"):
        host_trainer(ws)


def test_a_record_of_another_trainer_is_refused(ws: Workspace, tmp_path: Path) -> None:
    location = fake_env(tmp_path / "env")
    record = env_record(fake_checkout(tmp_path / "musubi")).model_copy(
        update={"backend": "ai-toolkit"}
    )
    write_env_record(location, record)
    with pytest.raises(SpecError, match="holds ai-toolkit"):
        host_trainer(ws)
    assert get_backend("musubi-tuner").setup(ws).present is False


def test_the_doctor_warns_without_the_environment_and_fails_on_a_broken_one(
    ws: Workspace, tmp_path: Path
) -> None:
    from kura.backends.musubi.doctor import environment_findings

    (finding,) = environment_findings(ws)
    assert (finding.check, finding.status) == ("musubi environment", "warn")
    assert "kura backend install musubi" in finding.fix
    fake_env(tmp_path / "env")
    (finding,) = environment_findings(ws)
    assert finding.status == "fail" and "kura-env.json" in finding.detail
    assert musubi_env(ws).path == tmp_path / "env"
