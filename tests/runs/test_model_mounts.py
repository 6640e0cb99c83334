"""Model folders in the container: a Hugging Face snapshot's links resolve inside it
(issue 11 item 2: Kandinsky 5's text encoders are snapshot folders of links into blobs/)."""

from __future__ import annotations

import posixpath
from pathlib import Path

import pytest

from kura.errors import InvalidInput
from kura.runs.layout import PathMap


def _snapshot(cache: Path) -> Path:
    repo = cache / "models--Qwen--Qwen2.5-VL-7B-Instruct"
    (repo / "blobs").mkdir(parents=True)
    (repo / "blobs" / "aaa").write_text("{}")
    (repo / "blobs" / "bbb").write_bytes(b"weights")
    snap = repo / "snapshots" / "0123abc"
    snap.mkdir(parents=True)
    (snap / "config.json").symlink_to("../../blobs/aaa")
    (snap / "model.safetensors").symlink_to("../../blobs/bbb")
    return snap


def test_a_snapshot_folder_mounts_its_repo_cache_so_every_link_resolves(tmp_path: Path) -> None:
    snap = _snapshot(tmp_path)
    paths = PathMap(in_container=True)
    seen = paths.model("text_encoder", snap)
    repo = snap.parent.parent
    base = "/kura/models/text_encoder/models--Qwen--Qwen2.5-VL-7B-Instruct"
    assert seen == f"{base}/snapshots/0123abc"
    assert paths.pairs[str(repo)] == base
    # Every link, followed as the container would (relative to its place), lands on a file
    # under a mounted host folder.
    for link in snap.iterdir():
        inside = posixpath.normpath(posixpath.join(seen, str(link.readlink())))
        host = paths.pairs_host(inside)
        assert host is not None and Path(host).is_file(), inside


def test_a_dangling_link_is_refused_at_compile(tmp_path: Path) -> None:
    snap = _snapshot(tmp_path)
    (snap / "tokenizer.json").symlink_to("../../blobs/missing")
    with pytest.raises(InvalidInput, match=r"tokenizer\.json") as caught:
        PathMap(in_container=True).model("text_encoder", snap)
    assert caught.value.hint


def test_a_plain_folder_and_the_host_executor_are_unchanged(tmp_path: Path) -> None:
    plain = tmp_path / "te"
    plain.mkdir()
    (plain / "config.json").write_text("{}")
    paths = PathMap(in_container=True)
    assert paths.model("text_encoder", plain) == "/kura/models/text_encoder/te"
    snap = _snapshot(tmp_path / "cache")
    assert PathMap(in_container=False).model("text_encoder", snap) == str(snap)
