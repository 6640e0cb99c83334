"""The output layer: user text never acts as Rich markup, and --json is strict JSON."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from kura.cli._output import CONTRACT, Output, escape_markup
from kura.errors import InvalidInput

HOSTILE = ["[/x]", "[bold red]LOUD[/bold red]", "a[/]b", "back\\[/x]slash"]


def _human(document: dict[str, Any], render: Any) -> str:
    stdout = io.StringIO()
    Output(json_mode=False, stdout=stdout, stderr=io.StringIO()).result(document, render)
    return stdout.getvalue()


@pytest.mark.parametrize("text", HOSTILE)
def test_user_text_prints_as_written_in_human_output(text: str) -> None:
    def render(console: Any, d: dict[str, Any]) -> None:
        key = next(k for k in d if k not in ("kind", "name", "rows"))
        console.print(f"[bold]{d['name']}[/] {d['rows'][0]['path']} {key}")

    printed = _human({"kind": "k", "name": text, "rows": [{"path": text}], text: 1}, render)
    assert printed.rstrip("\n") == f"{text} {text} {text}"


def test_escaping_keeps_plain_values_and_types() -> None:
    document = {"kind": "x", "ok": True, "n": 3, "items": ("a", None), "status": "ok"}
    assert escape_markup(document) == {**document, "items": ["a", None]}


def test_error_messages_and_hints_are_not_markup() -> None:
    stderr = io.StringIO()
    out = Output(json_mode=False, stdout=io.StringIO(), stderr=stderr)
    out.error(InvalidInput("cannot read /data/[/x]/[bold red]a.yaml", hint="see [/]"))
    assert "cannot read /data/[/x]/[bold red]a.yaml" in stderr.getvalue()
    assert "see [/]" in stderr.getvalue()


def test_knowledge_regret_with_markup_is_recorded_once_and_printed(
    kura, workspace: Path, tmp_path: Path
) -> None:
    source = tmp_path / "src"
    source.mkdir()
    Image.new("RGB", (64, 64)).save(source / "0.png")
    (source / "0.txt").write_text("myaku\n")
    assert kura("-w", workspace, "dataset", "add", "myaku", source).exit_code == 0
    new = kura(
        "-w", workspace, "--json", "run", "new", "--dataset", "myaku", "--base", "zimage-base"
    )
    run_id = new.json()["run"]
    result = kura("-w", workspace, "knowledge", "regret", run_id, "[/x] fp8 -> [bold red]check")
    assert result.exit_code == 0, result.stderr
    assert "regret recorded: [/x] fp8" in result.stdout
    regrets = (workspace / "knowledge" / "regrets.md").read_text()
    assert regrets.count("[/x] fp8 -> [bold red]check") == 1


def test_a_dataset_folder_named_like_markup_is_shown_as_named(
    kura, workspace: Path, tmp_path: Path
) -> None:
    source = tmp_path / "[" / "x][bold red]photos"  # the path holds "[/x]"
    source.mkdir(parents=True)
    Image.new("RGB", (64, 64)).save(source / "[b].png", format="PNG")
    (source / "[b].txt").write_text("x")
    (source / "broken [red].png").write_bytes(b"\x89PNG not really")
    result = kura("-w", workspace, "dataset", "inspect", str(source))
    assert result.exit_code == 0, result.stderr
    assert "[/x][bold red]photos" in result.stdout.replace("\n", "")
    assert "broken [red].png" in result.stdout


def _strict(text: str) -> Any:
    def refuse(name: str) -> None:
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


def test_non_finite_floats_are_null_in_json_output() -> None:
    stdout = io.StringIO()
    document = {"kind": "x", "alpha": math.nan, "rows": [math.inf, -math.inf, 1.5], "t": (1.0,)}
    Output(json_mode=True, stdout=stdout).result(document, lambda c, d: None)
    assert _strict(stdout.getvalue()) == {
        "kind": "x",
        "contract": CONTRACT,
        "alpha": None,
        "rows": [None, None, 1.5],
        "t": [1.0],
    }


CONTROL_NAMES = ["\x1b]0;pwned\x07", "\x1b[2J\x1b[H", "\x9b31m", "bell\x07\x7f"]
"""An OSC title sequence, clear-screen, an 8-bit CSI and BEL/DEL: each would act on a
terminal if printed raw."""


def _raw_control(text: str) -> list[str]:
    return [c for c in text if (ord(c) < 0x20 and c not in "\t\n") or 0x7F <= ord(c) < 0xA0]


def test_control_characters_in_file_names_are_shown_escaped_by_several_commands(
    kura, workspace: Path, tmp_path: Path
) -> None:
    """Every human rendering (a result, a table, an error, a note) goes through the console
    that escapes control characters: `dataset inspect` listing broken files, `model check`
    naming a missing one, and `knowledge regret` echoing its text."""
    source = tmp_path / "photos"
    source.mkdir()
    Image.new("RGB", (64, 64)).save(source / "ok.png")
    for name in CONTROL_NAMES:
        (source / f"{name}.png").write_bytes(b"\x89PNG not really")
    inspected = kura("-w", workspace, "dataset", "inspect", str(source))
    assert inspected.exit_code == 0, inspected.stderr
    printed = inspected.stdout.replace("\n", "")
    assert _raw_control(inspected.stdout + inspected.stderr) == []
    assert "\\x1b]0;pwned\\x07" in printed and "\\x9b31m.png" in printed

    missing = kura("model", "check", str(tmp_path / "\x1b[2Jdit.safetensors"))
    assert missing.exit_code != 0
    assert _raw_control(missing.stdout + missing.stderr) == []
    assert "\\x1b[2Jdit.safetensors" in (missing.stdout + missing.stderr).replace("\n", "")

    assert kura("-w", workspace, "dataset", "add", "myaku", source).exit_code in (0, 1)
    new = kura(
        "-w", workspace, "--json", "run", "new", "--dataset", "myaku", "--base", "zimage-base"
    )
    regret = kura("-w", workspace, "knowledge", "regret", new.json()["run"], "fp8 \x1b[2J -> broke")
    assert regret.exit_code == 0, regret.stderr
    assert _raw_control(regret.stdout + regret.stderr) == []
    assert "regret recorded: fp8 \\x1b[2J" in regret.stdout


def test_a_note_under_json_is_escaped_too() -> None:
    stderr = io.StringIO()
    Output(json_mode=True, stdout=io.StringIO(), stderr=stderr).note("copied \x1b]0;t\x07.png")
    assert stderr.getvalue() == "copied \\x1b]0;t\\x07.png\n"


def test_every_document_and_error_names_its_contract_version() -> None:
    results, errors = io.StringIO(), io.StringIO()
    Output(json_mode=True, stdout=results).result({"kind": "x", "run": "r1"}, lambda c, d: None)
    Output(json_mode=True, stdout=errors).error(InvalidInput("bad"))
    assert json.loads(results.getvalue()) == {"kind": "x", "contract": CONTRACT, "run": "r1"}
    assert json.loads(errors.getvalue())["contract"] == CONTRACT
