"""The digest cache: hash once per unchanged file, trust hub blob names, verify on demand."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from kura.errors import CheckFailed
from kura.models import digests as digests_module
from kura.models.digests import DigestCache, hash_file


@pytest.fixture
def hash_calls(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    calls: list[Path] = []
    real = digests_module.hash_file

    def spy(path: Path, progress=None) -> str:
        calls.append(Path(path))
        return real(path, progress)

    monkeypatch.setattr(digests_module, "hash_file", spy)
    return calls


def test_hash_file_matches_hashlib(tmp_path: Path) -> None:
    data = os.urandom(3 * 1024 * 1024 + 17)
    path = tmp_path / "f.bin"
    path.write_bytes(data)
    seen: list[tuple[int, int]] = []
    assert (
        hash_file(path, lambda done, total: seen.append((done, total)))
        == hashlib.sha256(data).hexdigest()
    )
    assert seen[-1] == (len(data), len(data))


def test_cache_uses_kura_cache_dir(tmp_path: Path) -> None:
    assert DigestCache().database.parent == tmp_path / "kura-cache"


def test_hashes_once_per_unchanged_file(tmp_path: Path, hash_calls: list[Path]) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(b"abc")
    cache = DigestCache()
    first = cache.digest(path)
    second = DigestCache().digest(path)
    assert first.sha256 == second.sha256 == hashlib.sha256(b"abc").hexdigest()
    assert (first.cached, second.cached) == (False, True)
    assert len(hash_calls) == 1
    path.write_bytes(b"abcd")
    os.utime(path, ns=(1, 1))
    assert cache.digest(path).sha256 == hashlib.sha256(b"abcd").hexdigest()
    assert len(hash_calls) == 2


def test_hub_blob_trusted_by_name_and_verified_on_demand(
    tmp_path: Path, hash_calls: list[Path]
) -> None:
    data = b"weights"
    digest = hashlib.sha256(data).hexdigest()
    blobs = tmp_path / "hub" / "models--o--r" / "blobs"
    blobs.mkdir(parents=True)
    (blobs / digest).write_bytes(data)
    snapshot = tmp_path / "hub" / "models--o--r" / "snapshots" / ("a" * 40)
    snapshot.mkdir(parents=True)
    (snapshot / "w.safetensors").symlink_to(blobs / digest)
    cache = DigestCache()
    record = cache.digest(snapshot / "w.safetensors")
    assert (record.sha256, record.source) == (digest, "hf-etag")
    assert hash_calls == []
    verified = cache.digest(snapshot / "w.safetensors", verify=True)
    assert (verified.sha256, verified.source) == (digest, "verified")
    assert len(hash_calls) == 1


def test_verify_detects_a_corrupt_blob(tmp_path: Path) -> None:
    blobs = tmp_path / "blobs"
    blobs.mkdir()
    fake = blobs / ("0" * 64)
    fake.write_bytes(b"not that")
    with pytest.raises(CheckFailed, match="corrupt"):
        DigestCache().digest(fake, verify=True)
