"""The safetensors header reader: what it accepts, what it rejects, and what it reads."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import struct
import threading
from pathlib import Path

import pytest

from kura.errors import InvalidInput
from kura.models import header as header_module
from kura.models.header import HEADER_CAP, MAX_TENSORS, parse_header, read_header
from kura.models.layouts import write_sparse_safetensors


def write_raw(
    path: Path, header: dict | bytes, data_len: int, *, length: int | None = None
) -> Path:
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw) if length is None else length))
        f.write(raw)
        f.truncate(8 + len(raw) + data_len)
    return path


def entry(dtype: str, shape: list[int], start: int, end: int) -> dict:
    return {"dtype": dtype, "shape": shape, "data_offsets": [start, end]}


def test_reads_tensors_metadata_and_digest(tmp_path: Path) -> None:
    path = write_sparse_safetensors(
        tmp_path / "a.safetensors",
        {"w": ("BF16", [4, 8]), "b": ("F32", [8]), "s": ("F8_E4M3", [])},
        {"format": "pt"},
    )
    header = read_header(path)
    assert header.tensors["w"].shape == (4, 8)
    assert header.tensors["w"].nbytes == 64
    assert header.tensors["s"].shape == ()
    assert header.metadata == {"format": "pt"}
    assert len(header.header_digest) == 64
    assert header.size == path.stat().st_size


def test_agrees_with_the_reference_reader(tmp_path: Path) -> None:
    safetensors = pytest.importorskip("safetensors")
    tensors = {"a": ("F16", [3, 5]), "b": ("I64", [2]), "c": ("U8", [7]), "d": ("BF16", [0, 4])}
    path = write_sparse_safetensors(tmp_path / "ref.safetensors", tensors, {"k": "v"})
    ours = read_header(path)
    with safetensors.safe_open(str(path), framework="numpy") as handle:
        assert set(handle.keys()) == set(ours.tensors)
        assert handle.metadata() == dict(ours.metadata)


@pytest.mark.parametrize(
    ("dtype", "shape", "nbytes"),
    [("F4", [4, 2], 4), ("F6_E2M3", [4], 3), ("F8_E8M0", [5], 5), ("C64", [2], 16)],
)
def test_sub_byte_and_new_dtypes(tmp_path: Path, dtype: str, shape: list[int], nbytes: int) -> None:
    path = write_raw(tmp_path / "x.safetensors", {"t": entry(dtype, shape, 0, nbytes)}, nbytes)
    assert read_header(path).tensors["t"].nbytes == nbytes


def test_leading_and_trailing_whitespace_accepted(tmp_path: Path) -> None:
    raw = b"  " + json.dumps({"t": entry("U8", [2], 0, 2)}).encode() + b"    "
    assert read_header(write_raw(tmp_path / "x.safetensors", raw, 2)).tensors["t"].shape == (2,)


def test_reading_costs_the_header_not_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_sparse_safetensors(
        tmp_path / "big.safetensors", {"w": ("BF16", [100_000, 120_000])}
    )
    assert path.stat().st_size > 24_000_000_000
    reads: list[int] = []
    real_fdopen = os.fdopen

    class Spy:
        def __init__(self, handle):
            self.handle = handle

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

        def read(self, n: int = -1) -> bytes:
            reads.append(n)
            return self.handle.read(n)

        def fileno(self) -> int:
            return self.handle.fileno()

    monkeypatch.setattr(header_module.os, "fdopen", lambda fd, mode: Spy(real_fdopen(fd, mode)))
    header = read_header(path)
    assert header.tensors["w"].numel == 12_000_000_000
    assert sum(reads) == 8 + header.header_length
    assert all(n >= 0 for n in reads)


@pytest.mark.parametrize(
    ("tensors", "data_len", "fragment"),
    [
        ({"a": entry("U8", [4], 0, 4), "b": entry("U8", [4], 6, 10)}, 10, "leaves a gap"),
        ({"a": entry("U8", [4], 0, 4), "b": entry("U8", [4], 2, 6)}, 6, "overlaps"),
        ({"a": entry("U8", [4], 1, 5)}, 5, "leaves a gap"),
        ({"a": entry("F32", [4], 0, 8)}, 8, "needs 16"),
        ({"a": entry("U8", [4], 0, 4)}, 6, "bytes follow the last tensor"),
        ({"a": entry("U8", [4], 0, 4)}, 2, "the tensors need 4 data bytes"),
        ({"a": entry("F4", [3], 0, 2)}, 2, "whole bytes"),
        ({"a": entry("F8_E4M3FN", [4], 0, 4)}, 4, "unknown dtype"),
        ({"a": entry("f32", [1], 0, 4)}, 4, "unknown dtype"),
        ({"a": {"dtype": "U8", "shape": [-1], "data_offsets": [0, 0]}}, 0, "shape"),
        ({"a": {"dtype": "U8", "shape": [True], "data_offsets": [0, 1]}}, 1, "shape"),
        ({"a": {"dtype": "U8", "shape": [1], "data_offsets": [0]}}, 1, "data_offsets"),
        ({"a": {"dtype": "U8", "shape": [1], "data_offsets": [1, 0]}}, 1, "before it begins"),
        ({"a": "nope"}, 0, "not an object"),
        ({"__metadata__": {"k": 1}}, 0, "not a string"),
        ({"__metadata__": ["x"]}, 0, "__metadata__"),
        ({"a": {"dtype": "U8", "shape": [2**40, 2**40], "data_offsets": [0, 1]}}, 1, "2^64"),
    ],
)
def test_rejections(tmp_path: Path, tensors: dict, data_len: int, fragment: str) -> None:
    path = write_raw(tmp_path / "bad.safetensors", tensors, data_len)
    with pytest.raises(InvalidInput) as info:
        read_header(path)
    assert fragment in info.value.message
    assert str(path) in info.value.message
    assert info.value.hint


def test_metadata_null_and_empty_header_accepted(tmp_path: Path) -> None:
    assert (
        read_header(write_raw(tmp_path / "a.safetensors", {"__metadata__": None}, 0)).metadata == {}
    )
    assert read_header(write_raw(tmp_path / "b.safetensors", {}, 0)).tensors == {}


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}, '
        b'"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}}',
        b'{"a": {"dtype": "U8", "dtype": "U8", "shape": [1], "data_offsets": [0, 1]}}',
        b'{"__metadata__": {"k": "1", "k": "2"}}',
    ],
)
def test_duplicate_keys_rejected(tmp_path: Path, raw: bytes) -> None:
    with pytest.raises(InvalidInput, match="repeats the key"):
        read_header(
            write_raw(tmp_path / "dup.safetensors", raw, 1 if b"data_offsets" in raw else 0)
        )


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        (b"\xff\xfe{}", "not UTF-8"),
        (b"[1, 2]", "not a JSON object"),
        (b'{"a": NaN}', "not valid JSON"),
        (b"{}\x00\x00", "not valid JSON"),
        (b"{" * 5000, "JSON"),
    ],
)
def test_malformed_json(tmp_path: Path, raw: bytes, fragment: str) -> None:
    with pytest.raises(InvalidInput, match=fragment):
        read_header(write_raw(tmp_path / "j.safetensors", raw, 0))


def test_header_length_over_the_cap(tmp_path: Path) -> None:
    path = write_raw(tmp_path / "x.safetensors", b"{}", 0, length=HEADER_CAP + 1)
    with pytest.raises(InvalidInput, match="over the 100000000-byte limit"):
        read_header(path)


def test_header_length_beyond_the_file(tmp_path: Path) -> None:
    path = write_raw(tmp_path / "x.safetensors", b"{}", 0, length=500)
    with pytest.raises(InvalidInput, match="the file has only 10 bytes"):
        read_header(path)


def test_too_short_and_empty(tmp_path: Path) -> None:
    for data in (b"", b"\x01\x02"):
        path = tmp_path / "short.safetensors"
        path.write_bytes(data)
        with pytest.raises(InvalidInput, match="8-byte header length"):
            read_header(path)


def test_gguf_named(tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors"
    path.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\x00" * 64)
    with pytest.raises(InvalidInput, match="GGUF file"):
        read_header(path)


def test_torch_zip_named(tmp_path: Path) -> None:
    path = tmp_path / "model.pt"
    path.write_bytes(b"PK\x03\x04" + b"\x00" * 64)
    with pytest.raises(InvalidInput, match="PyTorch zip checkpoint"):
        read_header(path)


def test_legacy_pickle_named(tmp_path: Path) -> None:
    path = tmp_path / "model.pth"
    path.write_bytes(b"\x80\x02}q\x00(X\x01\x00\x00\x00aq\x01K\x01u." + b"\x00" * 40)
    with pytest.raises(InvalidInput, match="pickle protocol 2"):
        read_header(path)


def test_header_length_that_starts_like_a_pickle_is_still_safetensors(tmp_path: Path) -> None:
    # a 1152-byte header has the length bytes 80 04 …, the same as pickle protocol 4
    raw = json.dumps({"t": entry("U8", [1], 0, 1)}).encode()
    raw += b" " * (1152 - len(raw))
    path = write_raw(tmp_path / "x.safetensors", raw, 1)
    assert path.read_bytes()[:2] == b"\x80\x04"
    assert read_header(path).tensors["t"].shape == (1,)


def test_shard_index_names_its_shards(tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors.index.json"
    index = {
        "metadata": {"total_size": 10},
        "weight_map": {
            "a": "model-00001-of-00002.safetensors",
            "b": "model-00002-of-00002.safetensors",
        },
    }
    path.write_text(json.dumps(index, indent=2))
    with pytest.raises(InvalidInput) as info:
        read_header(path)
    assert (
        "model-00001-of-00002.safetensors, model-00002-of-00002.safetensors" in info.value.message
    )
    assert "model-00001-of-00002.safetensors" in info.value.hint


def test_missing_file_and_folder(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="does not exist"):
        read_header(tmp_path / "nope.safetensors")
    with pytest.raises(InvalidInput, match="is a folder"):
        read_header(tmp_path)


def test_parse_header_checks_the_file_size() -> None:
    raw = json.dumps({"t": entry("U8", [4], 0, 4)}).encode()
    assert parse_header(raw, 8 + len(raw) + 4).tensors["t"].numel == 4
    with pytest.raises(InvalidInput):
        parse_header(raw, 8 + len(raw) + 3)


def _tiny_tensors(count: int) -> tuple[bytes, int]:
    header = {f"t{i}": entry("U8", [1], i, i + 1) for i in range(count)}
    return json.dumps(header).encode(), count


def test_a_header_listing_too_many_tensors_is_refused_quickly() -> None:
    import time

    raw, data_len = _tiny_tensors(MAX_TENSORS * 5)
    assert len(raw) < HEADER_CAP
    started = time.process_time()
    with pytest.raises(InvalidInput, match=f"more than the {MAX_TENSORS:,}"):
        parse_header(raw, 8 + len(raw) + data_len)
    assert time.process_time() - started < 1


def test_the_parsed_tensor_count_is_checked_too(monkeypatch: pytest.MonkeyPatch) -> None:
    raw, data_len = _tiny_tensors(11)
    escaped = raw.replace(b'"data_offsets"', b'"data\\u005foffsets"')  # hides from the byte count
    monkeypatch.setattr(header_module, "MAX_TENSORS", 10)
    with pytest.raises(InvalidInput, match="more than the 10"):
        parse_header(escaped, 8 + len(escaped) + data_len)
    assert len(parse_header(*_sized(_tiny_tensors(10))).tensors) == 10


def _sized(pair: tuple[bytes, int]) -> tuple[bytes, int]:
    raw, data_len = pair
    return raw, 8 + len(raw) + data_len


def test_deep_or_huge_numbers_in_a_header_are_invalid_input() -> None:
    for raw in (
        b'{"a":' * 3000 + b"1" + b"}" * 3000,
        b'{"__metadata__": {"a": ' + b"1" * 5000 + b"}}",
    ):
        with pytest.raises(InvalidInput, match="not a valid safetensors file"):
            parse_header(raw, 8 + len(raw))


def test_a_fifo_is_refused_before_it_is_opened(tmp_path: Path) -> None:
    """A FIFO named .safetensors would block the open forever: refused from its stat."""
    fifo = tmp_path / "model.safetensors"
    os.mkfifo(fifo)
    # Should the reader open it after all, a writer arriving later ends the wait (the test
    # then fails on the message instead of hanging).
    unblock = threading.Timer(5, _connect_and_close_writer, args=(fifo,))
    unblock.start()
    try:
        with pytest.raises(InvalidInput, match="is not a regular file") as info:
            read_header(fifo)
    finally:
        unblock.cancel()
    assert info.value.hint == "name the .safetensors file itself"


def _connect_and_close_writer(fifo: Path) -> None:
    with contextlib.suppress(OSError):  # ENXIO: no reader opened it, as it should be
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))


@pytest.mark.skipif(not Path("/proc/self/mem").exists(), reason="no /proc on this system")
def test_proc_self_mem_is_refused_without_reading_it() -> None:
    """Regular but size 0 (reading it raises EIO): refused as too short, a clean error."""
    with pytest.raises(InvalidInput, match="only 0 bytes long"):
        read_header("/proc/self/mem")


def test_a_read_error_is_a_clean_error_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_raw(tmp_path / "m.safetensors", {"a": entry("F32", [1], 0, 4)}, 4)
    real_fdopen = os.fdopen

    class FailingRead:
        def __init__(self, fd: int) -> None:
            self.handle = real_fdopen(fd, "rb")

        def __enter__(self) -> FailingRead:
            return self

        def __exit__(self, *exc: object) -> None:
            self.handle.close()

        def fileno(self) -> int:
            return self.handle.fileno()

        def read(self, n: int) -> bytes:
            raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(header_module.os, "fdopen", lambda fd, mode: FailingRead(fd))
    with pytest.raises(InvalidInput, match=r"m\.safetensors cannot be read: Input/output error"):
        read_header(path)
