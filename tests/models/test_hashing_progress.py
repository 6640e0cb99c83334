"""`kura model verify` and `kura model lock` report hashing progress in bytes over all the
files they read; the CLI draws it on an interactive stderr only, never under --json."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from kura.cli.main import main
from kura.models.layouts import write_component, write_sparse_safetensors
from kura.models.lockdoc import build_lock
from kura.models.resolve import resolve_bundle
from kura.models.verify import verify_target

MIB = 1024 * 1024


def _big_file(tmp_path: Path) -> Path:
    """A 20 MiB safetensors file (a hole that reads as zeros): three 8 MiB reads."""
    return write_sparse_safetensors(tmp_path / "big.safetensors", {"w": ("F32", [5 * MIB])})


def test_verify_reports_bytes_hashed_until_every_byte_is(tmp_path: Path) -> None:
    path = _big_file(tmp_path)
    calls: list[tuple[int, int]] = []
    verified = verify_target(str(path), progress=lambda done, total: calls.append((done, total)))
    assert verified.ok
    size = path.stat().st_size
    assert len(calls) >= 3
    assert all(total == size for _, total in calls)
    assert [done for done, _ in calls] == sorted(done for done, _ in calls)
    assert calls[-1] == (size, size)
    assert calls[0][0] < size  # it moved while the file was read, not only at the end


def test_lock_reports_progress_over_every_file_it_hashes(
    tmp_path: Path, fake_hashing: list[Path]
) -> None:
    models = tmp_path / "ws" / "models"
    dit = write_component(models / "flux2-klein-base-9b.safetensors", "flux2-klein-9b-dit")
    vae = write_component(models / "ae.safetensors", "flux2-vae")
    calls: list[tuple[int, int]] = []
    build_lock(
        resolve_bundle("flux2-klein-base-9b", models_dir=models),
        progress=lambda done, total: calls.append((done, total)),
    )
    total = dit.stat().st_size + vae.stat().st_size
    assert calls[-1] == (total, total)
    assert len(fake_hashing) == 2


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_verify_draws_its_bar_on_a_terminal_and_nothing_under_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _big_file(tmp_path)
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(["model", "verify", str(path)]) == 0
    assert "hashing" in terminal.getvalue()
    quiet = _Terminal()
    monkeypatch.setattr(sys, "stderr", quiet)
    assert main(["--json", "model", "verify", str(path)]) == 0
    assert quiet.getvalue() == ""
    capsys.readouterr()
