from __future__ import annotations

import pytest

from kura.errors import SpecError, UsageError
from kura.schema import DatasetSpec, validate_spec
from kura.schema.base import parse_value, set_dotted
from kura.yamlio import parse_yaml


def test_unknown_key_is_named_with_its_path_and_file() -> None:
    with pytest.raises(SpecError) as info:
        validate_spec(
            DatasetSpec,
            {"name": "a", "media": "m", "intent": {"taks": "style"}},
            source="datasets/a/dataset.yaml",
        )
    assert "unknown key `intent.taks`" in info.value.message
    assert "datasets/a/dataset.yaml" in info.value.message


def test_bad_value_is_named() -> None:
    with pytest.raises(SpecError, match=r"`intent\.task`"):
        validate_spec(DatasetSpec, {"name": "a", "media": "m", "intent": {"task": "x"}}, source="f")


def test_set_dotted_creates_sections_and_keeps_comments() -> None:
    document = parse_yaml("name: a  # keep me\n", source="t")
    set_dotted(document, "intent.task", "style")
    from kura.yamlio import dump_yaml

    assert dump_yaml(document) == "name: a  # keep me\nintent:\n  task: style\n"


def test_set_dotted_refuses_to_descend_into_a_value() -> None:
    document = parse_yaml("name: a\n", source="t")
    with pytest.raises(UsageError, match="holds a value"):
        set_dotted(document, "name.first", "x")


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ("32", 32),
        ("1e-4", 1e-4),
        ("true", True),
        ("style", "style"),
        ("[1, 2]", [1, 2]),
        ("", None),
    ],
)
def test_values_parse_as_yaml_scalars(raw: str, value: object) -> None:
    assert parse_value(raw) == value


@pytest.mark.parametrize("key", ["datasets.1.repeats", "datasets[1].repeats"])
def test_set_dotted_addresses_a_list_item_by_index(key: str) -> None:
    document = parse_yaml("datasets:\n- name: a\n- name: b  # second\n", source="t")
    set_dotted(document, key, 3)
    from kura.yamlio import dump_yaml

    written = dump_yaml(document)
    assert "# second" in written
    items = parse_yaml(written, source="t")["datasets"]
    assert items == [{"name": "a"}, {"name": "b", "repeats": 3}]


def test_set_dotted_refuses_an_index_past_the_end() -> None:
    document = parse_yaml("datasets:\n- name: a\n", source="t")
    with pytest.raises(UsageError, match="1 item") as info:
        set_dotted(document, "datasets.4.repeats", 3)
    assert "from 0 to 0" in (info.value.hint or "")


def test_set_dotted_refuses_a_key_inside_a_list() -> None:
    document = parse_yaml("datasets:\n- name: a\n", source="t")
    with pytest.raises(UsageError, match="inside a list"):
        set_dotted(document, "datasets.repeats", 3)
