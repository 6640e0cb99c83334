"""Exit codes: one meaning each, and the README's table lists every one Kura returns."""

from __future__ import annotations

import re
from pathlib import Path

from kura import errors

README = Path(__file__).resolve().parents[1] / "README.md"
CLI_CODES = {0: "success", 130: "interrupted", 141: "broken pipe"}
"""Codes ``kura.cli.main.main`` returns itself, not through an error class."""


def _error_classes() -> list[type[errors.KuraError]]:
    return [
        value
        for value in vars(errors).values()
        if isinstance(value, type) and issubclass(value, errors.KuraError)
    ]


def _readme_codes() -> dict[int, str]:
    text = README.read_text(encoding="utf-8")
    table = text.split("### Exit codes", 1)[1].split("\n## ", 1)[0]
    return {int(m[1]): m[2] for m in re.finditer(r"^\| (\d+) \| (.+) \|$", table, re.M)}


def test_each_exit_code_belongs_to_one_error_kind() -> None:
    """A subclass may share its parent's code (SpecError is invalid input); two unrelated
    classes may not: the base KuraError is the generic check failure."""
    owners: dict[int, type[errors.KuraError]] = {}
    for cls in _error_classes():
        if cls is errors.KuraError:
            continue
        owner = owners.setdefault(cls.exit_code, cls)
        assert issubclass(cls, owner) or issubclass(owner, cls), (cls, owner)
    assert errors.KuraError.exit_code == errors.CheckFailed.exit_code


def test_the_readme_table_lists_every_exit_code() -> None:
    codes = {cls.exit_code for cls in _error_classes()} | set(CLI_CODES)
    assert sorted(_readme_codes()) == sorted(codes)


def test_a_state_conflict_and_a_network_failure_have_their_own_codes() -> None:
    assert errors.StateConflict.exit_code not in (1, 2, 5)
    assert errors.NetworkError.exit_code != errors.CheckFailed.exit_code
    assert errors.StateConflict("x").type_name == "state-conflict"
