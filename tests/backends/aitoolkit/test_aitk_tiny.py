"""The tiny SDXL builder's contract, without torch: how Kura runs it and reads its answer
(the real build is ``conftest.py``'s ``tiny_sdxl``, used by ``test_aitk_real_run.py``)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from tests.backends.aitoolkit.fakes import fake_env

from kura.backends.aitoolkit.tiny import BUILDER, TINY_BASE, build_tiny, tiny_settings
from kura.backends.trainer_env import EnvLocation
from kura.errors import KuraError, NotFound
from kura.models.bundles import get_bundle


def _answer(code: int, stdout: str, stderr: str = "") -> Any:
    def runner(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        runner.argv, runner.kwargs = argv, kwargs  # type: ignore[attr-defined]
        return subprocess.CompletedProcess(argv, code, stdout, stderr)

    return runner


def test_the_builder_runs_offline_with_the_env_python_and_is_read_back(tmp_path: Path) -> None:
    env = EnvLocation(fake_env(tmp_path / "env", None), "test")
    report = {
        "root": str(tmp_path / "sdxl"),
        "parameters": {"unet": 1028708},
        "unet_modules": [
            ["down_blocks.1.attentions.0", "Transformer2DModel", None],
            ["x", "Conv2d", [1, 1]],
        ],
    }
    runner = _answer(0, "progress bar\n" + json.dumps(report) + "\n")
    tiny = build_tiny(env, tmp_path / "sdxl", seed=3, runner=runner)
    assert runner.argv == [str(env.python), str(BUILDER), str(tmp_path / "sdxl"), "--seed", "3"]
    assert runner.kwargs["env"]["HF_HUB_OFFLINE"] == "1"
    assert "PYTHONPATH" not in runner.kwargs["env"]
    assert tiny.root == tmp_path / "sdxl" and tiny.parameters == {"unet": 1028708}
    assert tiny.unet_modules[1].kernel == (1, 1) and tiny.unet_modules[0].kernel is None


def test_a_failing_build_shows_its_error(tmp_path: Path) -> None:
    env = EnvLocation(fake_env(tmp_path / "env", None), "test")
    with pytest.raises(
        KuraError, match=r"\(exit 1\):\nModuleNotFoundError: No module named .diffusers."
    ):
        build_tiny(
            env,
            tmp_path / "sdxl",
            runner=_answer(1, "", "ModuleNotFoundError: No module named 'diffusers'"),
        )


def test_no_environment_no_build(tmp_path: Path) -> None:
    with pytest.raises(NotFound, match="not installed"):
        build_tiny(EnvLocation(tmp_path / "none", "test"), tmp_path / "sdxl")


def test_the_settings_point_the_diffusers_bundle_at_the_folder(tmp_path: Path) -> None:
    settings = tiny_settings(tmp_path / "sdxl")
    assert settings[0] == f"model.paths.dit={tmp_path / 'sdxl'}"
    assert {"backend.config.dtype=fp32", "backend.config.offline=true"} <= set(settings)
    assert "execution.executor=host" in settings and "training.sample_prompts=[]" in settings
    assert get_bundle(TINY_BASE).file("dit").format == "hf-repo"
