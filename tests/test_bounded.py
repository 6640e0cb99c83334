"""Config files that would crash or stall a reader are refused before parsing, naming the
file: size, nesting depth and integer length, for YAML, TOML and JSON alike."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from kura.bounded import (
    MAX_CONFIG_BYTES,
    MAX_INTEGER_DIGITS,
    MAX_NESTING_DEPTH,
    load_json,
    parse_json,
    read_limited,
)
from kura.errors import InvalidInput
from kura.workspace import Workspace, load_toml
from kura.yamlio import load_yaml, parse_yaml
from tests.conftest import CliResult

DEEP = 3000
HUGE_INT = "1" * 5000

YAML_BOMBS = {
    "flow lists": "a: " + "[" * DEEP + "]" * DEEP + "\n",
    "flow mappings": "a: " + "{b: " * DEEP + "1" + "}" * DEEP + "\n",
    "block mappings": "a:\n" + "".join(" " * (i + 1) + "b:\n" for i in range(2000)),
    "block lists": "a:\n" + "- " * DEEP + "x\n",
    "long integer": f"a: {HUGE_INT}\n",
    "long integer with underscores": "a: " + "1_" * 100 + "1\n",
}


@pytest.mark.parametrize("text", YAML_BOMBS.values(), ids=YAML_BOMBS.keys())
def test_yaml_bombs_are_refused_quickly_naming_the_file(text: str) -> None:
    started = time.process_time()
    with pytest.raises(InvalidInput, match=r"run\.yaml (nests|holds an integer)"):
        parse_yaml(text, source="run.yaml")
    assert time.process_time() - started < 3


def test_yaml_at_the_bounds_is_read() -> None:
    nested = "a: " + "[" * (MAX_NESTING_DEPTH - 1) + "]" * (MAX_NESTING_DEPTH - 1) + "\n"
    assert parse_yaml(nested)["a"] == parse_yaml(nested)["a"]
    assert parse_yaml(f"a: {'9' * MAX_INTEGER_DIGITS}\n")["a"] == int("9" * MAX_INTEGER_DIGITS)
    assert parse_yaml(f"a: '{HUGE_INT}'\n")["a"] == HUGE_INT  # a quoted string is text


def test_an_oversized_file_is_refused_without_reading_it(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    with path.open("wb") as handle:
        handle.truncate(1024 * 1024 * 1024)  # sparse: 1 GB that costs nothing
    with pytest.raises(InvalidInput, match=r"run\.yaml is larger than the 4 MiB"):
        load_yaml(path)


def test_read_limited_reads_at_most_one_byte_past_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "f.json"
    path.write_bytes(b"x" * 11)
    assert read_limited(path, limit=11) == b"x" * 11
    with pytest.raises(InvalidInput, match="larger than the 10 bytes"):
        read_limited(path, limit=10)
    assert MAX_CONFIG_BYTES == 4 * 1024 * 1024


def test_special_files_are_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "run.yaml"
    os.mkfifo(fifo)
    with pytest.raises(InvalidInput, match="not a regular file"):
        load_yaml(fifo)
    with pytest.raises(InvalidInput, match="not a regular file"):
        read_limited(Path("/dev/zero"))
    with pytest.raises(InvalidInput, match="not a regular file"):
        load_json(tmp_path)


JSON_BOMBS = {
    "deep": "[" * DEEP + "]" * DEEP,
    "deep below the C limit": '{"a":' * (MAX_NESTING_DEPTH + 5)
    + "1"
    + "}" * (MAX_NESTING_DEPTH + 5),
    "long integer": f'{{"a": {HUGE_INT}}}',
    "over the digit bound": f'{{"a": {"9" * (MAX_INTEGER_DIGITS + 1)}}}',
    "NaN": '{"a": NaN}',
    "bad syntax": '{"a": ',
}


@pytest.mark.parametrize("text", JSON_BOMBS.values(), ids=JSON_BOMBS.keys())
def test_json_bombs_are_refused_naming_the_file(tmp_path: Path, text: str) -> None:
    path = tmp_path / "approval.json"
    path.write_text(text)
    with pytest.raises(InvalidInput, match=r"approval\.json"):
        load_json(path)


def test_json_within_bounds_is_read() -> None:
    assert parse_json('{"a": [1, 2.5, "x", null]}', "f.json") == {"a": [1, 2.5, "x", None]}


TOML_BOMBS = {
    "deep arrays": "a = " + "[" * DEEP + "]" * DEEP + "\n",
    "deep inline tables": "a = " + "{b = " * DEEP + "1" + "}" * DEEP + "\n",
    "deep dotted key": "a" + ".a" * DEEP + " = 1\n",
    "long integer": f"a = {HUGE_INT}\n",
    "over the digit bound": f"a = {'9' * (MAX_INTEGER_DIGITS + 1)}\n",
}


@pytest.mark.parametrize("text", TOML_BOMBS.values(), ids=TOML_BOMBS.keys())
def test_toml_bombs_are_refused_naming_the_file(tmp_path: Path, text: str) -> None:
    path = tmp_path / "kura.toml"
    path.write_text(text)
    with pytest.raises(InvalidInput, match=r"kura\.toml"):
        load_toml(path)


@pytest.mark.parametrize(
    ("target", "text", "command"),
    [
        ("kura.toml", TOML_BOMBS["deep arrays"], ("init", ".")),
        ("kura.toml", TOML_BOMBS["long integer"], ("init", ".")),
        ("datasets/d/dataset.yaml", YAML_BOMBS["flow lists"], ("dataset", "list")),
        ("datasets/d/dataset.yaml", YAML_BOMBS["long integer"], ("dataset", "list")),
    ],
)
def test_the_cli_reports_a_bomb_as_invalid_input(
    workspace: Path,
    kura: Callable[..., CliResult],
    monkeypatch: pytest.MonkeyPatch,
    target: str,
    text: str,
    command: tuple[str, str],
) -> None:
    path = workspace / target
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    monkeypatch.chdir(workspace)
    result = kura("--json", "-w", workspace, *command)
    assert result.exit_code == InvalidInput.exit_code
    error = result.json()["error"]
    assert error["type"] == "invalid-input"
    assert error["path"] == str(path)


def test_workspace_config_uses_the_bounded_reader(tmp_path: Path) -> None:
    (tmp_path / "kura.toml").write_text(TOML_BOMBS["deep inline tables"])
    with pytest.raises(InvalidInput, match="deeper than"):
        Workspace(tmp_path).config()
