"""The read-only YAML reader (libyaml, plain data): it refuses what the round-trip reader
refuses, reads what it reads the same, and its quick path (data built straight from
libyaml's events) answers only where the full path gives the same answer."""

from __future__ import annotations

import contextlib
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kura.plainyaml as plainyaml
from kura.errors import InvalidInput
from kura.plainyaml import UNUSUAL, full_load, parse_plain_yaml, quick_build, read_yaml
from kura.schema.base import plain
from kura.yamlio import dump_yaml, load_yaml, parse_yaml, write_yaml

BILLION_LAUGHS = """
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
e: [*c,*c,*c,*c,*c,*c,*c,*c,*c]
"""

REFUSED = {
    "alias": BILLION_LAUGHS,
    "duplicate key": "a: 1\na: 2\n",
    "duplicate key by value": "a: {1: x, 0x1: y}\n",
    "not a mapping": "- 1\n- 2\n",
    "too deep": "a: " + "[" * 80 + "]" * 80 + "\n",
    "long integer": "a: " + "9" * 80 + "\n",
    "long integer after a sign and underscore": "a: +_" + "9" * 80 + "\n",
    "tagged long integer": "a: !!int " + "9" * 80 + "\n",
    "number without digits": "a: +_\n",
    "octal without digits": "a: 0o_\n",
    "fraction without digits": "a: ._\n",
    "lone surrogate": 'a: "\\ud800"\n',
    "syntax": "a: [1,\n",
    "two documents": "a: 1\n---\nb: 2\n",
}


@pytest.mark.parametrize("text", REFUSED.values(), ids=REFUSED.keys())
def test_both_readers_refuse_the_same_files(tmp_path: Path, text: str) -> None:
    path = tmp_path / "f.yaml"
    path.write_text(text)
    with pytest.raises(InvalidInput, match=r"f\.yaml"):
        load_yaml(path)
    with pytest.raises(InvalidInput, match=r"f\.yaml"):
        read_yaml(path)


@pytest.mark.parametrize("text", REFUSED.values(), ids=REFUSED.keys())
def test_a_refusal_names_the_file_and_its_reason_in_both_readers(text: str) -> None:
    reasons = []
    for reader in (parse_yaml, parse_plain_yaml):
        with pytest.raises(InvalidInput, match=r"f\.yaml") as caught:
            reader(text, source="f.yaml")
        reasons.append(caught.value.message.split(" ", 1)[1][:12])
    assert reasons[0] == reasons[1]


def test_a_number_without_digits_is_refused_with_its_line_not_a_traceback() -> None:
    with pytest.raises(InvalidInput, match=r"'0b_' \(line 2\), which YAML reads as a number"):
        parse_plain_yaml("a: 1\nb: 0b_\n", source="f.yaml")
    assert parse_plain_yaml("a: _\nb: '+_'\n", source="f.yaml") == {"a": "_", "b": "+_"}


@settings(max_examples=100, deadline=None)
@given(
    st.recursive(
        st.none()
        | st.booleans()
        | st.integers(min_value=-(10**30), max_value=10**30)
        | st.floats(allow_nan=False)
        | st.text(),
        lambda children: (
            st.lists(children, max_size=4)
            | st.dictionaries(st.text(min_size=1, max_size=8), children, max_size=4)
        ),
        max_leaves=20,
    )
)
def test_what_kura_writes_is_read_alike_and_by_the_quick_path(value: object) -> None:
    text = dump_yaml({"value": value})
    quick = quick_build(text)
    assert quick is not UNUSUAL
    assert quick == plain(parse_yaml(text, source="v.yaml"))


def test_a_file_kura_writes_is_parsed_once_without_the_full_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refused(text: str, *, source: str) -> object:
        raise AssertionError(f"the full path read {source}")

    monkeypatch.setattr(plainyaml, "full_load", refused)
    text = dump_yaml(
        {
            "id": "r1",
            "model": {"base": "flux2-klein-base-4b"},
            "training": {"rank": 32, "learning_rate": 1e-4, "max_steps": None, "seed": 42},
            "reasons": {"attention": "adapter default (docs/flux_2.md training example; " * 3},
            "prompts": ["a fox --w 1024 --h 1024", "2026-12-01", "no", "010"],
        }
    )
    data = parse_plain_yaml(text, source="run.yaml")
    assert data["training"] == {"rank": 32, "learning_rate": 1e-4, "max_steps": None, "seed": 42}
    assert data["prompts"][1:] == ["2026-12-01", "no", "010"]


NUMBERISH = st.text(alphabet="0179_-+.:eEoxbnNaiItT~", max_size=8)
YAMLISH = st.text(alphabet="ab01789_-+.:eoxn~[]{},&*!#|>'\"?\n \t", max_size=60) | st.lists(
    st.tuples(st.sampled_from(["a", "b", "1", "a b", "- a", "? a"]), NUMBERISH), max_size=4
).map(lambda lines: "".join(f"{key}: {value}\n" for key, value in lines))
"""Short texts of the characters YAML's syntax and implicit types turn on, and mappings of
scalars that look like numbers, booleans and nulls or nearly so."""


@settings(max_examples=400, deadline=None)
@given(YAMLISH)
def test_where_the_quick_path_answers_the_full_path_gives_the_same_data(text: str) -> None:
    quick = quick_build(text)
    if quick is UNUSUAL:
        return
    assert _typed(quick) == _typed(full_load(text, source="fuzz.yaml"))


@settings(max_examples=400, deadline=None)
@given(YAMLISH)
def test_any_yamlish_text_gives_data_or_invalid_input_in_both_readers(text: str) -> None:
    for reader in (parse_yaml, parse_plain_yaml):
        with contextlib.suppress(InvalidInput):
            reader(text, source="fuzz.yaml")


def _typed(data: object) -> object:
    """``data`` with each scalar's type beside it (``1``, ``1.0`` and ``True`` are equal in
    Python) and NaN comparable."""
    if isinstance(data, dict):
        return {_typed(k): _typed(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_typed(v) for v in data]
    if isinstance(data, float) and math.isnan(data):
        return (float, "nan")
    return (type(data), data)


QUICK_PATH_GIVES_UP = {
    "tag": "a: !!str 1\n",
    "alias": "a: &x 1\nb: *x\n",
    "collection as a key": "? [a]\n: 1\n",
    "timestamp": "a: 2026-12-01\n",
    "underscored number": "a: 1_000\n",
    "duplicate key": "a: 1\na: 2\n",
    "second document": "a: 1\n---\nb: 2\n",
    "syntax error": "a: [1,\n",
}


@pytest.mark.parametrize("text", QUICK_PATH_GIVES_UP.values(), ids=QUICK_PATH_GIVES_UP.keys())
def test_the_quick_path_leaves_unusual_texts_to_the_full_path(text: str) -> None:
    assert quick_build(text) is UNUSUAL


def test_texts_the_quick_path_leaves_are_still_read() -> None:
    import datetime

    assert parse_plain_yaml("a: !!str 1\nb: 2026-12-01\nc: 1_000\n", source="f.yaml") == {
        "a": "1",
        "b": datetime.date(2026, 12, 1),
        "c": 1000,
    }


@settings(max_examples=100, deadline=None)
@given(
    st.recursive(
        st.none()
        | st.booleans()
        | st.integers(min_value=-(10**30), max_value=10**30)
        | st.floats(allow_nan=False)
        | st.text(),
        lambda children: (
            st.lists(children, max_size=4)
            | st.dictionaries(st.text(min_size=1, max_size=8), children, max_size=4)
        ),
        max_leaves=20,
    )
)
def test_the_plain_reader_reads_what_kura_writes_the_same(
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
    "0x_f",
    "1_000",
    "1__",
    "_1",
    "1e3",
    "1.5e-3",
    ".5",
    "._5",
    "-.inf",
    ".NaN",
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
    YAML 1.2 as the round-trip reader has them, and the plain reader must agree."""
    slow = plain(parse_yaml(f"v: {scalar}\n", source="x.yaml"))
    fast = parse_plain_yaml(f"v: {scalar}\n", source="x.yaml")
    assert isinstance(slow, dict)
    assert _typed(fast["v"]) == _typed(slow["v"])


def test_a_text_read_again_is_not_parsed_again_and_each_reader_gets_its_own_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed: list[str] = []
    real = plainyaml._parse

    def counted(text: str, *, source: str) -> dict[str, object]:
        parsed.append(source)
        return real(text, source=source)

    monkeypatch.setattr(plainyaml, "_parse", counted)
    path = tmp_path / "run.yaml"
    path.write_text("id: r1\ntraining: {max_steps: 10, tags: [a, b]}\n")
    first = read_yaml(path)
    first["training"]["tags"].append("changed by its reader")
    second = read_yaml(path)
    assert second == {"id": "r1", "training": {"max_steps": 10, "tags": ["a", "b"]}}
    second["training"]["max_steps"] = 99
    assert read_yaml(path)["training"]["max_steps"] == 10
    assert parsed == [str(path)]
    path.write_text("id: r1\ntraining: {max_steps: 20, tags: [a, b]}\n")
    assert read_yaml(path)["training"]["max_steps"] == 20
    assert parsed == [str(path), str(path)]
