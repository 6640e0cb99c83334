from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
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


def test_every_command_in_the_table_is_the_command_of_that_name() -> None:
    from kura.cli.main import COMMANDS, LazyGroup, cli

    assert isinstance(cli, LazyGroup)
    for name in COMMANDS:
        command = cli.get_command(click.Context(cli), name)
        assert command is not None and command.name == name, name


def _modules_after(argv: list[str]) -> set[str]:
    code = (
        "import sys, json; from kura.cli.main import main; "
        f"main({argv!r}); print(json.dumps(sorted(sys.modules)), file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


def test_help_imports_no_command_module() -> None:
    loaded = _modules_after(["--help"])
    assert not {m for m in loaded if m.startswith("kura.cli.") and m not in CORE_CLI}


def test_a_json_command_never_imports_rich() -> None:
    loaded = _modules_after(["--json", "gpus"])
    assert "kura.cli.planning" in loaded
    assert not {m for m in loaded if m == "rich" or m.startswith("rich.")}


CORE_CLI = {"kura.cli.main", "kura.cli._output", "kura.cli.state"}
