"""`kura run import-aitk`: a past AI-Toolkit run (job + loss_log.db) becomes evidence."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

from kura.cli.main import main
from kura.initialize import init_workspace
from kura.runs.history import past_runs

FAKE = Path(__file__).with_name("fake_aitk") / "run.py"

UI_JOB = """\
job: extension
config:
  name: my_first_lora
  process:
    - type: ui_trainer
      training_folder: {folder}
      device: cuda:0
      network: {{type: lora, linear: 32, linear_alpha: 32}}
      save: {{dtype: bf16, save_every: 2, max_step_saves_to_keep: 4}}
      datasets: [{{folder_path: /data/x, caption_ext: txt, resolution: [512, 768]}}]
      train: {{steps: 5, batch_size: 1, gradient_checkpointing: true, lr: 1e-4}}
      model: {{name_or_path: Qwen/Qwen-Image, arch: qwen_image, quantize: true,
               qtype: "uint3|{ara}"}}
      sample: {{sample_every: 100, samples: []}}
      logging: {{log_every: 1, use_ui_logger: true}}
meta: {{name: "[name]"}}
"""


def test_import_reads_job_and_loss_log(tmp_path: Path) -> None:
    folder = tmp_path / "output"
    job = tmp_path / "job.yaml"
    ara = "ostris/accuracy_recovery_adapters/qwen_image_torchao_uint3.safetensors"
    job.write_text(UI_JOB.format(folder=folder, ara=ara))
    # the fake writes loss_log.db and LoRA files exactly where AI-Toolkit does
    runnable = (
        job.read_text()
        .replace("ui_trainer", "diffusion_trainer")
        .replace("training_folder", "name: my_first_lora\n      training_folder")
    )
    (tmp_path / "fake.yaml").write_text(runnable)
    subprocess.run(
        [sys.executable, str(FAKE), str(tmp_path / "fake.yaml")], check=True, capture_output=True
    )
    ws, _ = init_workspace(tmp_path / "ws")
    out = io.StringIO()
    code = main(
        [
            "--json",
            "--workspace",
            str(ws.root),
            "run",
            "import-aitk",
            str(job),
            "--gpu",
            "rtx-4090",
        ],
        stdout=out,
    )
    assert code == 0, out.getvalue()
    doc = json.loads(out.getvalue())
    assert doc["bundle"] == "aitk-qwen-image" and doc["architecture"] == "qwen_image"
    assert doc["status"] == "succeeded"
    assert [step for step, _ in doc["losses"]] == [1, 2, 3, 4, 5]
    assert doc["config"]["quantize"] is True and doc["config"]["qtype"] == "uint3"
    assert doc["config"]["gradient_checkpointing"] is True
    assert doc["seconds_per_step"] is not None
    record = ws.run_dir(doc["run"])
    assert (record / "imported-job.yaml").read_text() == job.read_text()
    evidence = past_runs(ws, exclude="", base="aitk-qwen-image", gpu="rtx-4090")
    assert [r.run_id for r in evidence] == [doc["run"]]
    assert evidence[0].measured_step == doc["seconds_per_step"]
    assert past_runs(ws, exclude="", base="aitk-qwen-image", gpu="h100-pcie") == []


def test_import_refuses_what_is_not_a_job(tmp_path: Path) -> None:
    ws, _ = init_workspace(tmp_path / "ws")
    bad = tmp_path / "x.yaml"
    bad.write_text("- a\n- b\n")
    out = io.StringIO()
    code = main(["--json", "--workspace", str(ws.root), "run", "import-aitk", str(bad)], stdout=out)
    assert code != 0
    assert "not an AI-Toolkit job" in out.getvalue()


def _import(ws_root: Path, job: Path) -> tuple[int, dict[str, object]]:
    out = io.StringIO()
    code = main(["--json", "--workspace", str(ws_root), "run", "import-aitk", str(job)], stdout=out)
    return code, json.loads(out.getvalue())


def _ran(tmp_path: Path, job_text: str) -> Path:
    """A job in ``<checkout>/config/`` whose relative ``training_folder`` AI-Toolkit resolves
    against the checkout, run by the fake from there."""
    checkout = tmp_path / "ai-toolkit"
    (checkout / "config").mkdir(parents=True)
    job = checkout / "config" / "job.yaml"
    job.write_text(job_text)
    runnable = (
        job.read_text()
        .replace("ui_trainer", "diffusion_trainer")
        .replace("training_folder", "name: my_first_lora\n      training_folder")
    )
    (checkout / "fake.yaml").write_text(runnable)
    subprocess.run(
        [sys.executable, str(FAKE), "fake.yaml"], check=True, capture_output=True, cwd=checkout
    )
    return job


def test_a_relative_training_folder_is_found_beside_the_checkout(tmp_path: Path) -> None:
    ara = "ostris/accuracy_recovery_adapters/qwen_image_torchao_uint3.safetensors"
    job = _ran(tmp_path, UI_JOB.format(folder="output", ara=ara))
    assert (tmp_path / "ai-toolkit" / "output" / "my_first_lora" / "loss_log.db").is_file()
    ws, _ = init_workspace(tmp_path / "ws")
    code, doc = _import(ws.root, job)
    assert code == 0, doc
    assert doc["status"] == "succeeded" and len(doc["losses"]) == 5  # type: ignore[arg-type]


def test_the_recovery_adapter_and_the_encoder_qtype_are_kept(tmp_path: Path) -> None:
    ara = "ostris/accuracy_recovery_adapters/qwen_image_torchao_uint3.safetensors"
    text = UI_JOB.format(folder=tmp_path / "output", ara=ara).replace(
        "quantize: true,", "quantize: true, quantize_te: true, qtype_te: uint4,"
    )
    job = tmp_path / "job.yaml"
    job.write_text(text)
    ws, _ = init_workspace(tmp_path / "ws")
    code, doc = _import(ws.root, job)
    assert code == 0, doc
    config = doc["config"]
    assert isinstance(config, dict)
    assert (config["qtype"], config["accuracy_recovery_adapter"]) == ("uint3", True)
    assert (config["quantize_te"], config["qtype_te"]) == (True, "uint4")


def test_a_slider_job_is_refused_by_name(tmp_path: Path) -> None:
    job = tmp_path / "slider.yaml"
    job.write_text(UI_JOB.format(folder=tmp_path, ara="x").replace("ui_trainer", "concept_slider"))
    ws, _ = init_workspace(tmp_path / "ws")
    code, doc = _import(ws.root, job)
    assert code == 5
    error = doc["error"]
    assert isinstance(error, dict) and "`concept_slider` job, not LoRA training" in error["message"]
    assert "slider" in error["message"] and "ui_trainer" in error["hint"]
