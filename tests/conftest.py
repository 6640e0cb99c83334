"""Shared fixtures: an isolated cache dir (seeded with the stand-in digests the session has
computed) and a pinned id clock for every test, and a CLI runner."""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from kura.cli.main import main


@pytest.fixture(scope="session")
def _standin_digests(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The stand-in digests learned by any test of this session (see :func:`_isolated_cache`)."""
    from kura.models.standins import DIGEST_MEMO

    return tmp_path_factory.mktemp("standin-digests") / DIGEST_MEMO


@pytest.fixture(autouse=True)
def _isolated_cache(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    _standin_digests: Path,
) -> Iterator[None]:
    """Each test gets an empty cache folder, except for the stand-in files' digests: each is
    the sha256 of gigabytes of zeros (seconds to compute, the same in every test), so the
    folder starts with those the session has learned and gives back those it learned."""
    from kura.models.standins import DIGEST_MEMO

    cache = tmp_path_factory.mktemp("kura-cache")
    if _standin_digests.is_file():
        shutil.copyfile(_standin_digests, cache / DIGEST_MEMO)
    monkeypatch.setenv("KURA_CACHE_DIR", str(cache))
    monkeypatch.delenv("KURA_WORKSPACE", raising=False)
    monkeypatch.delenv("KURA_DEBUG", raising=False)
    yield
    _keep_digests(cache / DIGEST_MEMO, _standin_digests)


def _keep_digests(learned: Path, kept: Path) -> None:
    try:
        new = json.loads(learned.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return  # the test wrote none, or left its copy unreadable
    if not isinstance(new, dict):
        return
    old = json.loads(kept.read_text(encoding="utf-8")) if kept.is_file() else {}
    if new.keys() - old.keys():
        kept.write_text(json.dumps({**old, **new}, sort_keys=True), encoding="utf-8")


PINNED_NOW = datetime(2026, 12, 1, 12, 0)


@pytest.fixture(autouse=True)
def _pinned_id_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run and sweep ids carry the minute: pin the clock they read, so no test depends on
    when it runs (two walks straddling a minute once made the demo test flaky)."""
    monkeypatch.setattr("kura.workspace.local_now", lambda: PINNED_NOW)


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


@pytest.fixture
def kura(capsys: pytest.CaptureFixture[str]) -> Callable[..., CliResult]:
    """Run `kura ARGS…` in-process and capture exit code, stdout and stderr."""

    def run(*args: str | Path) -> CliResult:
        capsys.readouterr()
        code = main([str(a) for a in args])
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


@pytest.fixture
def workspace(tmp_path: Path, kura: Callable[..., CliResult]) -> Path:
    root = tmp_path / "ws"
    assert kura("init", root).exit_code == 0
    return root


def write_text(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def text_writer() -> Callable[[Path, str], Path]:
    return write_text


def capture_stdout() -> io.StringIO:
    return io.StringIO()
