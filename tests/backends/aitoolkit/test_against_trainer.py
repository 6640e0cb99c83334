"""Opt-in: the golden job files, loaded by AI-Toolkit's own loader and config classes.

Set ``KURA_AITK_SRC`` to an ostris/ai-toolkit checkout (27a03a9 is what Kura compiles for);
the harness (``aitk_harness.py``) runs in a fresh process, records every key the config
classes read and fails on any key of Kura's files that nothing reads. With ``KURA_AITK_ENV``
set too, the harness runs with that environment's Python (AI-Toolkit's own packages, as a
job sees them) instead of the test's. Nothing is written into the checkout (no bytecode).
Skipped without ``KURA_AITK_SRC``; never skipped under ``CI=true`` when it is set but wrong.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
SRC = os.environ.get("KURA_AITK_SRC")
pytestmark = pytest.mark.skipif(not SRC, reason="set KURA_AITK_SRC to an AI-Toolkit checkout")


def _python() -> str:
    """The AI-Toolkit environment's Python when KURA_AITK_ENV names one, else the test's."""
    folder = os.environ.get("KURA_AITK_ENV")
    if not folder:
        return sys.executable
    python = Path(folder) / "bin" / "python"
    assert python.is_file(), f"KURA_AITK_ENV={folder} has no bin/python"
    return str(python)


def _report(*files: Path) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    done = subprocess.run(
        [_python(), str(HERE / "aitk_harness.py"), str(SRC), *map(str, files)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    report: dict[str, object] = json.loads(done.stdout)
    return report


def test_every_golden_key_is_read_by_the_trainer() -> None:
    goldens = sorted((HERE / "golden").glob("*.yaml"))
    assert goldens
    report = _report(*goldens)
    assert report["build_lines_missing"] == [], "BaseSDTrainProcess builds configs differently"
    jobs = report["jobs"]
    assert isinstance(jobs, list) and len(jobs) == len(goldens)
    for job in jobs:
        assert job["unread"] == [], job
        assert job["facts"]["lr_is_float"] is True, job
    by_file = {job["file"]: job["facts"] for job in jobs}
    assert by_file["zimage-lokr.yaml"]["network_type"] == "lokr"
    assert by_file["wan22-a14b-video-ara.yaml"]["qtype"] == "uint4"
    assert by_file["wan22-a14b-video-ara.yaml"]["accuracy_recovery_adapter"].startswith(
        "ostris/accuracy_recovery_adapters/"
    )
    assert by_file["qwen-image.yaml"]["gradient_checkpointing"] is False
    for facts in by_file.values():  # never SampleConfig's SD 1.5 defaults (cfg 7, 20, False)
        if facts["sample"]["prompts"]:
            assert facts["sample"]["neg"] == "" and facts["sample"]["guidance_scale"] != 7
    # train_lora_qwen_image_24gb.yaml:91-92
    assert by_file["qwen-image.yaml"]["sample"] | {"prompts": [], "ctrl_img": []} == {
        "guidance_scale": 3.0,
        "sample_steps": 25,
        "neg": "",
        "prompts": [],
        "ctrl_img": [],
    }


def test_typed_values_reach_the_trainer_as_types() -> None:
    """Optimizer arguments arrive as the constructor's keyword types (toolkit/optimizer.py
    passes ``**optimizer_params``), the trigger word as the process's, a control image as
    the sample's ``ctrl_img`` (the prompt text without the flag), a text-encoder-only
    offload as 0 of the transformer."""
    golden = HERE / "golden"
    report = _report(
        golden / "qwen-image-unload-trigger.yaml",
        golden / "wan21-i2v-start-image.yaml",
        golden / "qwen-image-te-offload.yaml",
    )
    unload, i2v, offload = (job["facts"] for job in report["jobs"])  # type: ignore[index]
    assert all(job["unread"] == [] for job in report["jobs"])  # type: ignore[index]
    assert unload["optimizer_params"] == {"betas": [0.9, 0.99], "weight_decay": 0.01, "eps": 1e-8}
    assert unload["trigger_word"] == "myaku"
    assert i2v["sample"]["prompts"] == ["she turns"]
    assert i2v["sample"]["ctrl_img"] == ["/data/start.png"]
    assert offload["layer_offloading_percents"] == [0.0, 0.5]


def test_the_harness_catches_a_key_nobody_reads(tmp_path: Path) -> None:
    text = (HERE / "golden" / "qwen-image.yaml").read_text()
    text = text.replace("    training_seed: 42\n", "    training_seed: 42\n    device: cuda:0\n")
    text = text.replace("      steps: 40\n", "      steps: 40\n      stepz: 41\n")
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    report = _report(bad)
    unread = report["jobs"][0]["unread"]  # type: ignore[index]
    assert "process.device" in unread and "process.train.stepz" in unread


def test_locon_builds_modules_on_a_unet_and_none_on_a_dit() -> None:
    """Why Kura offers ``network_type: locon`` on SDXL only: AI-Toolkit's own LoCon network
    (``LycorisSpecialNetwork``, built as ``BaseSDTrainProcess.py:1933-1935`` builds it) over
    tiny random models counts its modules (``locon_harness.py``)."""
    from tests.backends.trainer_required import missing

    from kura.backends.aitoolkit.archs import AITK_MODELS

    if not os.environ.get("KURA_AITK_ENV"):
        missing("set KURA_AITK_ENV to the AI-Toolkit environment (torch, diffusers, lycoris)")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env |= {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(SRC)}
    done = subprocess.run(
        [_python(), str(HERE / "locon_harness.py")],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    counts = json.loads(done.stdout)
    assert counts["unet"] > 0
    assert counts["flux"] == counts["qwen_image"] == counts["wan"] == 0
    assert {m.bundle for m in AITK_MODELS.values() if m.locon} == {
        "sdxl-base-1.0",
        "aitk-sdxl-base-1.0",
    }
