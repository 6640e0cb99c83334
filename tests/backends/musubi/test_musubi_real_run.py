"""A real Musubi Tuner run through Kura's CLI, on a CPU: the path a user types, on a tiny model.

Musubi's own classes build the stand-ins (``kura.backends.musubi.tiny``): Qwen-Image's DiT
at its real width with one block, and the real-size VAE, random and seeded. Four captioned
images make the dataset. Then only Kura's CLI entry point is driven: ``init``, ``dataset
add``/``set``, ``model check``, ``run new --backend musubi-tuner --set
backend.config.num_layers=1 …``, ``run plan``, ``run approve``, ``run launch --foreground``,
``run status`` and ``export --format comfyui``. Musubi's own latent cache and training
scripts run unpatched from the checkout the environment was installed from; the
text-encoder cache step is Kura's CPU stand-in (Musubi's script with the encoder replaced by
random embeddings, ``kura.backends.musubi.cpu_standin``), the one step that is not Musubi's
shipped behaviour.

Every assertion compares what Musubi wrote (its TensorBoard events, read by TensorBoard's
own reader in Musubi's environment; its LoRA file; its logs) with what Kura reports.
Skipped without the environment, failed under ``CI=true`` (``conftest.musubi_trainer``).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageDraw
from tests.backends.cli_driver import Kura

from kura.backends.musubi.env import HostTrainer
from kura.backends.musubi.tiny import TinyQwenImage, tiny_settings
from kura.models.header import read_header

pytestmark = pytest.mark.slow

HERE = Path(__file__).parent
CAPTIONS = (
    "kura, a red circle on blue",
    "kura, a red circle on teal",
    "kura, a red circle on green",
    "kura, a red circle on grey",
)
RISK = "the text-encoder cache step is Kura's CPU stand-in, which Kura does not size"


def images(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for i, caption in enumerate(CAPTIONS):
        image = Image.new("RGB", (64, 64), (40 * i, 100, 150))
        ImageDraw.Draw(image).ellipse((8 + 4 * i, 8, 48 + 4 * i, 48), fill=(200, 50, 50))
        image.save(folder / f"img{i}.png")
        (folder / f"img{i}.txt").write_text(caption, encoding="utf-8")
    return folder


def musubi_scalars(trainer: HostTrainer, logging_dir: Path) -> dict[str, list[list[float]]]:
    """The run's TensorBoard scalars as TensorBoard itself reads them."""
    done = subprocess.run(
        [str(trainer.location.python), str(HERE / "musubi_events.py"), str(logging_dir)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    scalars: dict[str, list[list[float]]] = json.loads(done.stdout.splitlines()[-1])
    return scalars


def lora_modules(path: Path) -> dict[str, tuple[int, ...]]:
    """Module name → lora_down shape of a LoRA file in Musubi's layout."""
    tensors = read_header(path).tensors
    return {
        key.removesuffix(".lora_down.weight"): tuple(info.shape)
        for key, info in tensors.items()
        if key.endswith(".lora_down.weight")
    }


def new_run(kura: Kura, sets: tuple[str, ...]) -> str:
    argv = ["run", "new", "--dataset", "kura", "--base", "qwen-image", "--backend"]
    _, created = kura(*argv, "musubi-tuner", *[x for s in sets for x in ("--set", s)])
    return str(created["run"])


def plan_approve_launch(kura: Kura, run: str) -> tuple[dict[str, Any], dict[str, Any]]:
    _, plan = kura("run", "plan", run, "--gpu", "rtx-4090")
    kura("run", "approve", run, "--accept-risk", RISK)
    _, launched = kura("run", "launch", run, "--foreground")
    return plan, launched


def test_musubi_trains_the_tiny_qwen_image_through_kuras_cli(
    musubi_trainer: HostTrainer,
    tiny_qwen: TinyQwenImage,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KURA_MUSUBI_ENV", str(musubi_trainer.location.path))
    workspace = tmp_path / "ws"
    kura = Kura(workspace)
    kura("init", str(workspace))
    kura("dataset", "add", "kura", str(images(tmp_path / "incoming")), "--resolution", "64")
    kura("dataset", "set", "kura", "intent.trigger=kura", "intent.task=character")

    # The stand-ins are checked by header like the released files.
    files = (tiny_qwen.dit, tiny_qwen.vae, tiny_qwen.text_encoder)
    _, checked = kura("model", "check", *map(str, files), "--arch", "qwen_image")
    components = [f["component"] for f in checked["files"]]
    assert components == ["qwen-image-dit", "wan21-vae", "qwen25-vl-7b"]

    sets = tiny_settings(musubi_trainer.location, tiny_qwen, "kura")
    # Without num_layers Musubi would build 60 blocks and refuse the file at load: the plan
    # refuses it first, naming the value to set.
    unset = new_run(kura, tuple(s for s in sets if not s.startswith("backend.config.num_layers")))
    code, refused = kura("run", "plan", unset, "--gpu", "rtx-4090", ok=False)
    assert code != 0
    assert "has 1 transformer blocks, but Musubi builds" in refused["error"]["message"]
    assert "backend.config.num_layers: 1" in refused["error"]["hint"]

    run = new_run(kura, sets)
    run_dir = workspace / "runs" / run
    plan, launched = plan_approve_launch(kura, run)
    assert launched["state"]["status"] == "succeeded", launched
    assert plan["estimate"]["model"] == "qwen-image@1-blocks"
    text = (run_dir / "plan.md").read_text()
    env = musubi_trainer.location
    assert f"host: the environment {env.path}" in text
    assert f"running the checkout {musubi_trainer.checkout}" in text
    assert "cache_text_encoder: Kura's CPU stand-in" in text
    steps = json.loads((run_dir / "compiled" / "steps.json").read_text())["steps"]
    argv = {step["name"]: step["argv"] for step in steps}
    assert argv["cache_latents"][0] == str(env.python)
    assert argv["train"][0] == str(env.tool("accelerate"))
    assert argv["train"][argv["train"].index("--num_layers") + 1] == "1"
    assert "CPU STAND-IN" in (run_dir / "logs" / "cache_text_encoder.log").read_text()

    # TensorBoard's own reading of Musubi's events against `kura run status`.
    scalars = musubi_scalars(musubi_trainer, run_dir / "logs")
    losses = scalars["loss/current"]
    assert [step for step, _ in losses] == [1, 2]
    _, status = kura("run", "status", run)
    assert status["scalars"]["loss/current"] == losses[-1]
    progress = status["progress"]
    assert (progress["step"], progress["total"]) == (2, 2)

    # The LoRA is where Kura says, and wraps exactly the modules Musubi's LoRA network
    # makes on the one-block DiT (built in the environment, not listed here).
    lora = run_dir / "output" / f"{run}.safetensors"
    assert progress["last_checkpoint"] == str(lora)
    modules = lora_modules(lora)
    assert set(modules) == set(tiny_qwen.lora_modules)
    assert all(shape[0] == 4 for shape in modules.values())  # rank 4

    _, exported = kura("export", run, "--format", "comfyui")
    target = Path(exported["out"])
    assert target == run_dir / "export" / f"{run}-comfyui.safetensors"
    assert (exported["modules"], exported["unmapped"]) == (len(tiny_qwen.lora_modules), [])
    assert exported["verified_against"] == f"header of {tiny_qwen.dit}"
    assert set(read_header(target).tensors) == set(read_header(lora).tensors)

    # Same seed, same settings: Musubi's losses repeat exactly.
    again = new_run(kura, sets)
    _, relaunched = plan_approve_launch(kura, again)
    assert relaunched["state"]["status"] == "succeeded", relaunched
    assert musubi_scalars(musubi_trainer, workspace / "runs" / again / "logs")["loss/current"] == (
        losses
    )
