"""Model files are verified again before every step the supervisor starts (issue 24): a byte
changed during latent caching, same size and mtime put back, stops the run before training,
with the file named; an unchanged file costs a stat, not a re-hash."""

from __future__ import annotations

import hashlib
import sys
import textwrap
from pathlib import Path

import pytest
from run_helpers import fake_step, make_spec

from kura.execution import launch
from kura.execution.launch_spec import LaunchSpec, Step
from kura.execution.modelcheck import RUN_LOCK, changed_model_file
from kura.schema.lock import LockedModels, LockedRole, LockedSource, LockedTrainer, RunLock
from kura.schema.records import write_record


def _lock_model(run_dir: Path, model: Path) -> None:
    role = LockedRole(
        role="vae",
        source=LockedSource(repo="test/vae", filename=model.name, revision=None),
        expected_sha256=None,
        path=str(model),
        size=model.stat().st_size,
        sha256=hashlib.sha256(model.read_bytes()).hexdigest(),
        sha256_source="computed",
        header_digest=None,
        component=None,
    )
    models = LockedModels(
        version=1,
        bundle="zimage-base",
        architecture="zimage",
        backend="toy",
        trainer={},
        roles={"vae": role},
    )
    lock = RunLock(
        run="run1", trainer=LockedTrainer(name="toy", release="1"), models=models, datasets=[]
    )
    (run_dir / RUN_LOCK).parent.mkdir(parents=True, exist_ok=True)
    write_record(run_dir / RUN_LOCK, lock)


_FLIP_KEEPING_MTIME = textwrap.dedent(
    """
    import os, sys
    path = sys.argv[1]
    before = os.stat(path)
    data = bytearray(open(path, "rb").read())
    data[-1] ^= 0xFF
    with open(path, "r+b") as handle:
        handle.write(bytes(data))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    """
)


def _spec_whose_cache_step_rewrites(tmp_path: Path, model: Path) -> LaunchSpec:
    spec = make_spec(tmp_path, steps=("train",))
    caching = Step(
        name="cache_latents",
        argv=(sys.executable, "-c", _FLIP_KEEPING_MTIME, str(model)),
        env={},
        cwd=str(spec.run_dir),
        kind="cache",
    )
    return LaunchSpec(**{**spec.__dict__, "steps": [caching, fake_step("train", spec.run_dir)]})


def test_a_model_byte_changed_during_caching_stops_the_run_before_training(
    tmp_path: Path,
) -> None:
    model = tmp_path / "models" / "vae.bin"
    model.parent.mkdir()
    model.write_bytes(bytes(range(256)) * 64)
    spec = _spec_whose_cache_step_rewrites(tmp_path, model)
    spec.run_dir.mkdir(parents=True)
    _lock_model(spec.run_dir, model)
    size, mtime = model.stat().st_size, model.stat().st_mtime_ns

    state = launch(spec, foreground=True)

    assert (model.stat().st_size, model.stat().st_mtime_ns) == (size, mtime)
    assert state.status == "failed"
    assert state.message is not None
    assert "step train not started" in state.message
    assert f"model file for vae (vae): {model}" in state.message
    assert [s.status for s in state.steps] == ["succeeded", "pending"]
    assert not (spec.run_dir / "output" / "lora.safetensors").exists()


def test_unchanged_model_files_pass_every_step(tmp_path: Path) -> None:
    model = tmp_path / "vae.bin"
    model.write_bytes(b"approved bytes" * 100)
    spec = make_spec(tmp_path, steps=("cache_latents", "train"))
    spec.run_dir.mkdir(parents=True)
    _lock_model(spec.run_dir, model)
    state = launch(spec, foreground=True)
    assert state.status == "succeeded", state.message
    assert [s.status for s in state.steps] == ["succeeded", "succeeded"]


def test_an_unchanged_model_file_is_hashed_once_not_per_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kura.models import digests

    model = tmp_path / "vae.bin"
    model.write_bytes(b"approved bytes" * 100)
    run_dir = tmp_path / "runs" / "run1"
    run_dir.mkdir(parents=True)
    _lock_model(run_dir, model)
    calls: list[Path] = []
    real = digests.hash_file
    monkeypatch.setattr(digests, "hash_file", lambda p, progress=None: calls.append(p) or real(p))
    for _ in range(3):
        assert changed_model_file(run_dir, "run1") is None
    assert calls == [model]
