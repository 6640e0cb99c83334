from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kura.errors import InvalidInput
from kura.schema.base import plain
from kura.yamlio import load_yaml, parse_yaml, write_yaml

BILLION_LAUGHS = """
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: [*d,*d,*d,*d,*d,*d,*d,*d,*d]
"""


def test_alias_bomb_is_refused_naming_the_file() -> None:
    with pytest.raises(InvalidInput, match=r"run\.yaml uses a YAML alias \(line 3\)"):
        parse_yaml(BILLION_LAUGHS, source="run.yaml")


def test_duplicate_keys_are_an_error() -> None:
    with pytest.raises(InvalidInput, match="not valid YAML"):
        parse_yaml("a: 1\na: 2\n", source="x.yaml")


def test_top_level_must_be_a_mapping() -> None:
    with pytest.raises(InvalidInput, match="mapping"):
        parse_yaml("- 1\n- 2\n", source="x.yaml")


def test_round_trip_keeps_comments_and_order(tmp_path: Path) -> None:
    path = tmp_path / "f.yaml"
    path.write_text("# top comment\nzeta: 1  # why one\nalpha:\n  beta: 2\n")
    data = load_yaml(path)
    data["alpha"]["beta"] = 3
    write_yaml(path, data)
    assert path.read_text() == "# top comment\nzeta: 1  # why one\nalpha:\n  beta: 3\n"


def test_non_utf8_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "latin.yaml"
    path.write_bytes("name: café\n".encode("latin-1"))
    with pytest.raises(InvalidInput, match="not UTF-8"):
        load_yaml(path)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_any_text_gives_data_or_invalid_input(text: str) -> None:
    with contextlib.suppress(InvalidInput):
        parse_yaml(text, source="fuzz.yaml")


@settings(max_examples=100, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=20),
        lambda children: (
            st.lists(children, max_size=4)
            | st.dictionaries(st.text(min_size=1, max_size=8), children, max_size=4)
        ),
        max_leaves=20,
    )
)
def test_written_values_read_back_equal(
    tmp_path_factory: pytest.TempPathFactory, value: object
) -> None:
    path = tmp_path_factory.mktemp("rt") / "v.yaml"
    write_yaml(path, {"value": value})
    assert _plain(load_yaml(path)) == {"value": value}


def _plain(data: object) -> object:
    if isinstance(data, dict):
        return {k: _plain(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_plain(v) for v in data]
    return data


RUN_LIKE = "id: r1\ntraining:\n  rank: 32\n  prompts:\n    - a\n    - b\nnested: {a: [1, 2]}\n"


def test_the_round_trip_reader_parses_a_file_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bounds are checked on the events the composer takes, not in a parse of their own."""
    from ruamel.yaml.parser import Parser

    starts: list[object] = []
    original = Parser.parse_stream_start

    def counted(self: Parser) -> object:
        starts.append(self)
        return original(self)

    monkeypatch.setattr(Parser, "parse_stream_start", counted)
    assert plain(parse_yaml(RUN_LIKE, source="run.yaml"))["training"]["rank"] == 32
    assert len(starts) == 1
