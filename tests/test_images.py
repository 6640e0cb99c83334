"""`run launch` with the Docker executor tells an unreachable engine from a missing image
(issue 12 item 15)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from kura.errors import Unsupported
from kura.images import image_release


def _fake_docker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stderr: str, code: int) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    docker = bin_dir / "docker"
    docker.write_text(f"#!/bin/sh\necho '{stderr}' >&2\nexit {code}\n")
    docker.chmod(docker.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


def test_an_unreachable_engine_says_no_docker_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_docker(
        tmp_path,
        monkeypatch,
        "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. "
        "Is the docker daemon running?",
        1,
    )
    with pytest.raises(Unsupported, match="no Docker engine"):
        image_release("kura/musubi:test")


def test_a_missing_image_is_not_built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_docker(tmp_path, monkeypatch, "Error: No such image: kura/musubi:test", 1)
    assert image_release("kura/musubi:test") is None


def _labelled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, labels: str) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    docker = bin_dir / "docker"
    docker.write_text(f"#!/bin/sh\necho '{labels}'\n")
    docker.chmod(docker.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


@pytest.mark.parametrize(
    ("labels", "release"),
    [
        ('{"org.kura.release": "0.12.26", "org.kura.backend": "ai-toolkit"}', "0.12.26"),
        # an image an earlier Kura built: the release under its per-trainer label
        ('{"org.kura.musubi-release": "0.3.4"}', "0.3.4"),
        ('{"org.kura.a-release": "1", "org.kura.b-release": "2"}', "unknown"),
        ('{"org.opencontainers.image.version": "0.3.4"}', "unknown"),
        ("null", "unknown"),
    ],
)
def test_the_release_label_is_read_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, labels: str, release: str
) -> None:
    _labelled(tmp_path, monkeypatch, labels)
    assert image_release("kura/any:tag") == release
