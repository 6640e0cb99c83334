"""The TensorBoard reader on event files written by the tests' own encoder."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from tests.execution.tfevents_writer import EventWriter, crc32c_bitwise, record

from kura.backends.musubi.tensorboard import (
    crc32c,
    masked_crc32c,
    read_scalars,
    scalar_events,
    scalars_in_file,
)
from kura.errors import InvalidInput


def test_crc32c_known_vector() -> None:
    assert crc32c(b"123456789") == 0xE3069283 == crc32c_bitwise(b"123456789")


def test_reads_simple_values(tmp_path: Path) -> None:
    writer = EventWriter(tmp_path / "logs" / "20250101120000" / "network_train")
    writer.add(1, {"loss/current": 0.5, "loss/average": 0.5, "lr/unet": 1e-4})
    writer.add(2, {"loss/current": 0.25, "loss/average": 0.375, "lr/unet": 1e-4})
    scalars = read_scalars(tmp_path / "logs")
    assert scalars["loss/current"] == [(1, 0.5), (2, 0.25)]
    assert scalars["loss/average"] == [(1, 0.5), (2, 0.375)]
    assert scalars["lr/unet"][0][1] == pytest.approx(1e-4)


def test_reads_tensor_scalars(tmp_path: Path) -> None:
    writer = EventWriter(tmp_path)
    writer.add(7, {"loss/epoch": 0.125}, as_tensor=True)
    assert scalars_in_file(writer.path) == {"loss/epoch": [(7, 0.125)]}


def test_reads_each_events_wall_time(tmp_path: Path) -> None:
    before = time.time()
    writer = EventWriter(tmp_path)
    writer.add(3, {"loss/current": 0.5})
    ((step, value, wall),) = scalar_events(writer.path)["loss/current"]
    assert (step, value) == (3, 0.5)
    assert wall is not None and before - 1 <= wall <= time.time() + 1


def test_merges_files_sorted_by_step(tmp_path: Path) -> None:
    first = EventWriter(tmp_path / "a", suffix="h.1.0")
    second = EventWriter(tmp_path / "b", suffix="h.2.0")
    second.add(3, {"loss/current": 3.0})
    first.add(1, {"loss/current": 1.0})
    assert read_scalars(tmp_path)["loss/current"] == [(1, 1.0), (3, 3.0)]


def test_partial_last_record_is_skipped(tmp_path: Path) -> None:
    writer = EventWriter(tmp_path)
    writer.add(1, {"loss/current": 1.0})
    with open(writer.path, "ab") as handle:
        handle.write(record(b"\x08\x02")[:7])
    assert scalars_in_file(writer.path) == {"loss/current": [(1, 1.0)]}


def test_bad_checksum_is_invalid_input(tmp_path: Path) -> None:
    writer = EventWriter(tmp_path)
    writer.add(1, {"loss/current": 1.0})
    data = bytearray(writer.path.read_bytes())
    data[-6] ^= 0xFF
    writer.path.write_bytes(bytes(data))
    with pytest.raises(InvalidInput, match="damaged"):
        scalars_in_file(writer.path)


def test_missing_dir_is_empty(tmp_path: Path) -> None:
    assert read_scalars(tmp_path / "none") == {}


def test_masked_crc_matches_the_writer(tmp_path: Path) -> None:
    from tests.execution.tfevents_writer import masked

    assert masked_crc32c(b"abc") == masked(b"abc")
