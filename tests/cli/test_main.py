from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kura.cli.main import split_global_flags


def test_json_flag_is_taken_from_anywhere_before_the_terminator() -> None:
    assert split_global_flags(["--json", "init", "x"]) == (["init", "x"], True)
    assert split_global_flags(["init", "x", "--json"]) == (["init", "x"], True)
    assert split_global_flags(["init", "--", "--json"]) == (["init", "--", "--json"], False)


@pytest.mark.parametrize("position", ["before", "after"])
def test_json_before_or_after_the_command_gives_one_document(
    kura, tmp_path: Path, position: str
) -> None:
    args = ["init", tmp_path / "ws"]
    result = kura(*(["--json", *args] if position == "before" else [*args, "--json"]))
    assert result.exit_code == 0
    document = result.json()
    assert document["kind"] == "workspace-init"


def test_no_workspace_is_exit_3_with_json_error(kura, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = kura("dataset", "list", "--json")
    assert result.exit_code == 3
    error = result.json()["error"]
    assert error["type"] == "workspace-not-found"
    assert "kura init" in error["hint"]


def test_usage_error_is_exit_2_and_json(kura) -> None:
    result = kura("--json", "dataset", "inspect")
    assert result.exit_code == 2
    assert result.json()["error"]["type"] == "usage-error"


def test_human_error_has_no_traceback(kura, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = kura("dataset", "list")
    assert result.exit_code == 3
    assert "Traceback" not in result.stderr
    assert "error:" in result.stderr
    assert result.stdout == ""


def test_schema_commands_print_json_schema(kura) -> None:
    for name in ("approval", "dataset", "lock", "plan", "run", "workspace"):
        result = kura("schema", name, "--json")
        assert result.exit_code == 0
        assert result.json()["schema"]["additionalProperties"] is False


def test_help_does_not_import_heavy_libraries() -> None:
    code = (
        "import sys; from kura.cli.main import main; rc = main(['--help']); "
        "heavy = [m for m in ('torch','optuna','fastapi','av','numpy','huggingface_hub',"
        "'PIL','safetensors','pydantic','ruamel') if m in sys.modules]; print(json.dumps(heavy))"
    )
    completed = subprocess.run(
        [sys.executable, "-c", "import json; " + code], capture_output=True, text=True, check=True
    )
    assert json.loads(completed.stdout.strip().splitlines()[-1]) == []
