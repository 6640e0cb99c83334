"""Arbitrary bytes never raise: they become problems. Plus the public API's shape."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from dataset_builders import encode, picture
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kura.dataset import BLOCKING_CODES, Inspection, Problem, inspect_dataset
from kura.dataset.problems import ALL_CODES

JPEG = encode(picture(48, 32, seed=3), "JPEG")
PNG = encode(picture(48, 32, seed=4), "PNG")


def inspect_bytes(files: dict[str, bytes]) -> Inspection:
    root = Path(tempfile.mkdtemp(prefix="kura-fuzz-"))
    try:
        for name, data in files.items():
            (root / name).write_bytes(data)
        return inspect_dataset(root)
    finally:
        shutil.rmtree(root)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=2048))
def test_any_bytes_as_caption(data: bytes) -> None:
    result = inspect_bytes({"a.png": PNG, "a.txt": data})
    assert {p.code for p in result.problems} <= {"caption-encoding", "empty-caption"}
    json.dumps(result.to_dict())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(
        st.binary(max_size=4096),
        st.integers(1, len(JPEG) - 1).map(lambda n: JPEG[:n]),
        st.integers(1, len(PNG) - 1).map(lambda n: PNG[:n]),
        st.tuples(st.integers(0, len(PNG) - 1), st.integers(0, 255)).map(
            lambda t: PNG[: t[0]] + bytes([t[1]]) + PNG[t[0] + 1 :]
        ),
    ),
    st.sampled_from(["x.png", "x.jpg", "x.webp", "x.mp4"]),
)
def test_any_bytes_as_media(data: bytes, name: str) -> None:
    result = inspect_bytes({name: data, "x.txt": b"caption"})
    assert all(isinstance(p, Problem) and p.code in ALL_CODES for p in result.problems)
    json.dumps(result.to_dict())


def test_to_dict_shape(build) -> None:
    build.image("a.png", seed=1)
    data = inspect_dataset(build.root).to_dict()
    assert data["kind"] == "dataset-inspection"
    for key in (
        "root", "resolution", "counts", "formats", "sizes", "problems", "buckets",
        "captions", "trigger", "duplicates", "near_duplicates", "videos", "pairs",
        "task_suggestion", "questions", "digest",
    ):  # fmt: skip
        assert key in data
    assert set(data["counts"]) >= {"images", "videos", "captions", "controls"}
    assert json.loads(json.dumps(data)) == data


def test_blocking_codes_are_known_codes() -> None:
    assert BLOCKING_CODES <= ALL_CODES
    assert "empty-caption" not in BLOCKING_CODES
    assert "near-duplicate" not in BLOCKING_CODES
    assert {"broken-media", "empty-file", "missing-caption", "missing-control"} <= BLOCKING_CODES


def test_package_import_is_light() -> None:
    code = (
        "import sys, kura.dataset; "
        "print(sorted(m for m in ('PIL', 'av', 'numpy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
