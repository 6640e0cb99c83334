"""Process handling against a fake ``run.py`` (a test double of AI-Toolkit's): progress,
``loss_log.db``, samples and LoRA files, an OOM, a crash, and SIGINT recorded as a cancel."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest
from aitk_cases import image_dataset, make_inputs, make_spec

from kura.backends.aitoolkit.compile import JOB_FILE, LINKS_FILE, compile_run
from kura.backends.registry import get_backend
from kura.execution import launch
from kura.execution.launch_spec import LaunchSpec, Step

FAKE_DIR = Path(__file__).with_name("fake_aitk")
RUN_ID = "20261201-0900"


def _prepare(tmp_path: Path, mode: str) -> tuple[Path, LaunchSpec, dict[str, object]]:
    run_dir = tmp_path / "runs" / RUN_ID
    data = tmp_path / "photos"
    data.mkdir()
    for i in range(3):
        (data / f"{i}.png").write_bytes(b"png")
        (data / f"{i}.txt").write_text("myaku")
    spec = make_spec(
        training={
            "sample_prompts": ["myaku"],
            "sample_every_n_epochs": 1,
            "effective_batch": 1,
            "epochs": 2,
            "save_every_n_epochs": 1,
        }
    )
    dataset = replace(image_dataset(), media_dir=str(data), items=3)
    inputs = replace(
        make_inputs(datasets=[dataset]), run_dir=str(run_dir), trainer_dir=str(FAKE_DIR)
    )
    compiled = compile_run(spec, inputs)
    (run_dir / "compiled").mkdir(parents=True)
    for name, text in compiled.files.items():
        (run_dir / "compiled" / name).write_text(text)
    steps = [
        Step(
            s.name,
            [sys.executable if a == "python" else a for a in s.argv],
            {**s.env, "KURA_FAKE_AITK": mode},
            s.cwd,
        )
        for s in compiled.steps
    ]
    launch_spec = LaunchSpec(
        run_id=RUN_ID,
        run_dir=run_dir,
        steps=steps,
        executor="host",
        container=None,
        gpus=1,
        pass_env=[],
        skip_steps=[],
    )
    assert (run_dir / "compiled" / LINKS_FILE).is_file()
    return run_dir, launch_spec, {"cache_text_embeddings": True}


def test_a_run_succeeds_and_is_followed(tmp_path: Path) -> None:
    run_dir, spec, config = _prepare(tmp_path, "ok")
    state = launch(spec, foreground=True, backend="ai-toolkit", backend_config=config)
    assert state.status == "succeeded", state
    backend = get_backend("ai-toolkit")
    progress = backend.progress(run_dir / "logs" / "train.log")
    # 3 items × 2 repeats / effective batch 1 = 6 steps per epoch, 2 epochs
    assert (progress.step, progress.total) == (12, 12)
    assert progress.loss == pytest.approx(1 / 12)
    assert progress.seconds_per_step == 1.25
    layout = backend.outputs(run_dir)
    assert [p.name for p in layout.lora_files] == [
        f"{RUN_ID}_000000006.safetensors",
        f"{RUN_ID}.safetensors",
    ]
    assert len(layout.samples) == 2 and all("__0000000" in p.name for p in layout.samples)
    # the caches would land in the run's link folder, never in the dataset
    assert (run_dir / "data" / "photos" / "0.png").is_symlink()
    assert not any((tmp_path / "photos").glob("_*"))


def test_sigint_is_a_cancel_not_a_success(tmp_path: Path) -> None:
    run_dir, spec, config = _prepare(tmp_path, "sigint")
    state = launch(spec, foreground=True, backend="ai-toolkit", backend_config=config)
    assert state.status == "cancelled", state
    assert state.exit_code == 0
    assert state.step("train").status == "cancelled"
    assert "interrupted" in (state.message or "")
    assert "Job stopped" in (run_dir / "logs" / "train.log").read_text()


def test_an_oom_is_diagnosed_with_the_next_aid(tmp_path: Path) -> None:
    _run_dir, spec, config = _prepare(tmp_path, "oom")
    state = launch(spec, foreground=True, backend="ai-toolkit", backend_config=config)
    assert state.status == "failed"
    diagnosis = state.diagnosis or {}
    assert diagnosis["code"] == "cuda_oom"
    assert diagnosis["details"]["skipped_batches"] == 3
    assert diagnosis["next"]["key"] == "gradient_checkpointing"


def test_a_crash_names_the_error(tmp_path: Path) -> None:
    _run_dir, spec, config = _prepare(tmp_path, "crash")
    state = launch(spec, foreground=True, backend="ai-toolkit", backend_config=config)
    assert state.status == "failed"
    assert state.diagnosis and state.diagnosis["code"] == "missing_files"
    assert "/nope" in state.diagnosis["message"]


def test_a_relaunch_says_it_resumes(tmp_path: Path) -> None:
    from kura.backends.aitoolkit.follow import resumed_from

    run_dir, spec, config = _prepare(tmp_path, "sigint")
    launch(spec, foreground=True, backend="ai-toolkit", backend_config=config)
    spec = replace(
        spec, steps=[replace(s, env={**s.env, "KURA_FAKE_AITK": "ok"}) for s in spec.steps]
    )
    (run_dir / "output" / f"{RUN_ID}_000000003.safetensors").write_bytes(b"x")
    state = launch(spec, foreground=True, backend="ai-toolkit", backend_config=config)
    assert state.status == "succeeded"
    text = (run_dir / "logs" / "train.log").read_text()
    assert resumed_from(text) is not None
    assert get_backend("ai-toolkit").resume_arguments(run_dir, trainer_run_dir=str(run_dir)) == ()
    assert JOB_FILE
