"""Shared fixtures: every test gets its own Kura cache and Hugging Face cache, no token."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def isolated_caches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KURA_CACHE_DIR", str(tmp_path / "kura-cache"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    for name in ("HF_TOKEN", "HF_ENDPOINT", "HF_HOME", "KURA_WORKSPACE"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "hf-cache"


def put_in_hub_cache(
    cache: Path, repo: str, filename: str, tensors: dict, *, commit: str = "c" * 40
) -> Path:
    """Lay a sparse safetensors file out as huggingface_hub does: a blob named by a
    64-hex digest, a snapshot symlink, and refs/main. The blob name is a stand-in digest
    (Kura trusts blob names without reading them)."""
    import hashlib

    from kura.models.layouts import write_sparse_safetensors

    folder = cache / ("models--" + repo.replace("/", "--"))
    blob = folder / "blobs" / hashlib.sha256(f"{repo}/{filename}".encode()).hexdigest()
    blob.parent.mkdir(parents=True, exist_ok=True)
    write_sparse_safetensors(blob, tensors)
    link = folder / "snapshots" / commit / filename
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(blob)
    (folder / "refs").mkdir(exist_ok=True)
    (folder / "refs" / "main").write_text(commit)
    return link


@pytest.fixture
def fake_hashing(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Replace sha256 of (sparse, multi-GB) files by a digest of path and size; record calls."""
    import hashlib
    import os

    from kura.models import digests as digests_module

    calls: list[Path] = []

    def fake(path: Path, progress=None) -> str:
        calls.append(Path(path))
        return hashlib.sha256(f"{path}:{os.stat(path).st_size}".encode()).hexdigest()

    monkeypatch.setattr(digests_module, "hash_file", fake)
    return calls
