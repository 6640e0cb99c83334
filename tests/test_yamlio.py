from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kura.errors import InvalidInput
from kura.schema.base import plain
from kura.yamlio import load_yaml, parse_plain_yaml, parse_yaml, read_yaml, write_yaml

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


# The fast reader (read_yaml, libyaml) refuses what the round-trip reader refuses and reads
# what it reads the same.

REFUSED = {
    "alias": BILLION_LAUGHS,
    "duplicate key": "a: 1\na: 2\n",
    "not a mapping": "- 1\n- 2\n",
    "too deep": "a: " + "[" * 80 + "]" * 80 + "\n",
    "long integer": "a: " + "9" * 80 + "\n",
    "lone surrogate": 'a: "\\ud800"\n',
    "syntax": "a: [1,\n",
}


@pytest.mark.parametrize("text", REFUSED.values(), ids=REFUSED.keys())
def test_both_readers_refuse_the_same_files(tmp_path: Path, text: str) -> None:
    path = tmp_path / "f.yaml"
    path.write_text(text)
    with pytest.raises(InvalidInput, match=r"f\.yaml"):
        load_yaml(path)
    with pytest.raises(InvalidInput, match=r"f\.yaml"):
        read_yaml(path)


@settings(max_examples=100, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
        lambda children: (
            st.lists(children, max_size=4)
            | st.dictionaries(st.text(min_size=1, max_size=8), children, max_size=4)
        ),
        max_leaves=20,
    )
)
def test_the_fast_reader_reads_what_kura_writes_the_same(
    tmp_path_factory: pytest.TempPathFactory, value: object
) -> None:
    path = tmp_path_factory.mktemp("fast") / "v.yaml"
    write_yaml(path, {"value": value})
    assert read_yaml(path) == plain(load_yaml(path))


TRICKY_SCALARS = (
    "no",
    "yes",
    "on",
    "off",
    "y",
    "NO",
    "010",
    "0o17",
    "0x1F",
    "0b101",
    "1_000",
    "1e3",
    "1.5e-3",
    ".5",
    "-.inf",
    "~",
    "null",
    "True",
    "2026-12-01",
    "2026-12-01 10:00:00",
    "12:30",
    "+5",
    "-0",
    "1.",
    "3.0",
    "1:20",
    "1e",
    "e3",
    "1.2.3",
    "",
)


@pytest.mark.parametrize("scalar", TRICKY_SCALARS)
def test_both_readers_resolve_a_plain_scalar_alike(scalar: str) -> None:
    """YAML 1.1 (PyYAML's default) reads `no` as False and `010` as 8; Kura's files are
    YAML 1.2 as the round-trip reader has them, and the fast reader must agree."""
    slow = plain(parse_yaml(f"v: {scalar}\n", source="x.yaml"))
    fast = parse_plain_yaml(f"v: {scalar}\n", source="x.yaml")
    assert isinstance(slow, dict)
    assert (fast["v"], type(fast["v"])) == (slow["v"], type(slow["v"]))


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


def test_the_fast_reader_parses_a_file_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import kura.yamlio as yamlio

    made: list[object] = []
    original = yamlio._FastLoader

    def counted(*args: object) -> object:
        made.append(args)
        return original(*args)

    monkeypatch.setattr(yamlio, "_FastLoader", counted)
    assert parse_plain_yaml(RUN_LIKE, source="run.yaml")["nested"] == {"a": [1, 2]}
    assert len(made) == 1


@pytest.mark.parametrize("text", REFUSED.values(), ids=REFUSED.keys())
def test_a_refusal_names_the_file_and_its_reason_in_both_readers(text: str) -> None:
    reasons = []
    for reader in (parse_yaml, parse_plain_yaml):
        with pytest.raises(InvalidInput, match=r"f\.yaml") as caught:
            reader(text, source="f.yaml")
        reasons.append(caught.value.message.split(" ", 1)[1][:12])
    assert reasons[0] == reasons[1]


def test_a_text_read_again_is_not_parsed_again_and_each_reader_gets_its_own_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import kura.yamlio as yamlio

    parsed: list[str] = []
    real = yamlio._parse_plain_yaml

    def counted(text: str, *, source: str) -> dict[str, object]:
        parsed.append(source)
        return real(text, source=source)

    monkeypatch.setattr(yamlio, "_parse_plain_yaml", counted)
    path = tmp_path / "run.yaml"
    path.write_text("id: r1\ntraining: {max_steps: 10, tags: [a, b]}\n")
    first = read_yaml(path)
    first["training"]["tags"].append("changed by its reader")
    second = read_yaml(path)
    assert second == {"id": "r1", "training": {"max_steps": 10, "tags": ["a", "b"]}}
    assert parsed == [str(path)]
    path.write_text("id: r1\ntraining: {max_steps: 20, tags: [a, b]}\n")
    assert read_yaml(path)["training"]["max_steps"] == 20
    assert parsed == [str(path), str(path)]
