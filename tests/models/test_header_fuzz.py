"""Fuzzing the header reader: random and mutated headers raise only Kura's own error."""

from __future__ import annotations

import contextlib
import json
import struct
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kura.errors import InvalidInput
from kura.models.header import DTYPE_BITS, parse_header, read_header
from kura.models.layouts import header_bytes

DTYPES = st.sampled_from([*DTYPE_BITS, "F8_E4M3FN", "bf16", "", "U8 "])
SHAPES = st.lists(st.integers(min_value=-2, max_value=2**40), max_size=4)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


def _valid_header() -> tuple[bytes, int]:
    return header_bytes(
        {"a.weight": ("BF16", [4, 4]), "b": ("F4", [8]), "c": ("U8", [3])}, {"k": "v"}
    )


@settings(max_examples=300, deadline=None)
@given(raw=st.binary(max_size=512), extra=st.integers(min_value=0, max_value=64))
def test_random_bytes(raw: bytes, extra: int) -> None:
    with contextlib.suppress(InvalidInput):
        parse_header(raw, 8 + len(raw) + extra)


@settings(max_examples=300, deadline=None)
@given(
    entries=st.dictionaries(
        st.text(max_size=12),
        st.fixed_dictionaries(
            {
                "dtype": DTYPES,
                "shape": SHAPES,
                "data_offsets": st.lists(st.integers(min_value=-5, max_value=2**70), max_size=3),
            }
        )
        | JSON_VALUES,
        max_size=5,
    ),
    data_len=st.integers(min_value=0, max_value=2**20),
)
def test_random_structured_headers(entries: dict, data_len: int) -> None:
    raw = json.dumps(entries).encode()
    try:
        header = parse_header(raw, 8 + len(raw) + data_len)
    except InvalidInput:
        return
    covered = sum(t.nbytes for t in header.tensors.values())
    assert covered == data_len


@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_mutated_valid_headers(data: st.DataObject) -> None:
    raw, data_len = _valid_header()
    mutated = bytearray(raw)
    for _ in range(data.draw(st.integers(min_value=1, max_value=4))):
        action = data.draw(st.sampled_from(["flip", "delete", "insert"]))
        position = data.draw(st.integers(min_value=0, max_value=max(len(mutated) - 1, 0)))
        if action == "flip" and mutated:
            mutated[position] = data.draw(st.integers(min_value=0, max_value=255))
        elif action == "delete" and mutated:
            del mutated[position]
        else:
            mutated[position:position] = data.draw(st.binary(min_size=1, max_size=4))
    size_delta = data.draw(st.integers(min_value=-3, max_value=3))
    with contextlib.suppress(InvalidInput):
        parse_header(bytes(mutated), max(0, 8 + len(mutated) + data_len + size_delta))


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    prefix=st.binary(min_size=0, max_size=16),
    length=st.integers(min_value=0, max_value=2**64 - 1),
    body=st.binary(max_size=64),
)
def test_random_files(prefix: bytes, length: int, body: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "f.safetensors"
        path.write_bytes(prefix[:8] + struct.pack("<Q", length) + body)
        with contextlib.suppress(InvalidInput):
            read_header(path)
        path.write_bytes(prefix)
        with contextlib.suppress(InvalidInput):
            read_header(path)


@settings(max_examples=300, deadline=None)
@given(
    entries=st.dictionaries(
        st.text(max_size=6),
        st.fixed_dictionaries(
            {
                "dtype": DTYPES,
                "shape": st.lists(
                    st.integers(min_value=-1, max_value=9) | st.booleans(), max_size=3
                ),
                "data_offsets": st.lists(st.integers(min_value=-1, max_value=200), max_size=3),
            }
        ),
        max_size=4,
    )
)
def test_bulk_path_agrees_with_the_per_entry_path(entries: dict) -> None:
    from kura.models.header import _parse_entries, _parse_entry

    bulk = _parse_entries(entries)
    if bulk is None:
        return
    assert bulk == {name: _parse_entry(Path("x"), name, entry) for name, entry in entries.items()}
