"""A realistic workspace for the web tests: a finished run launched end to end through the
host executor and the fake Musubi checkout (state.json, logs, TensorBoard scalars, LoRA
files), sample images named like Musubi's, a drafted run, a regret; and a live run."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest
from PIL import Image, ImageDraw

from kura.knowledge.regrets import append_regret
from kura.runs.approval import approve_run
from kura.runs.evidence import promote_run
from kura.runs.launching import launch_run
from kura.runs.new import create_run
from kura.runs.plan import plan_run
from kura.workspace import Workspace
from tests.builders import character_workspace
from tests.runs.fake_checkout import set_mode, use_fake_checkout

BUNDLE = "flux2-klein-base-4b"
PROMPTS = ["myaku smiling, portrait --w 512 --h 512 --d 42", "myaku in a forest --d 7"]
SAMPLE_COLOURS = [(196, 120, 64), (64, 120, 196)]


@dataclass
class WebWorkspace:
    workspace: Workspace
    checkout: Path
    finished: str
    drafted: str


def build_workspace(root: Path, monkeypatch: pytest.MonkeyPatch) -> WebWorkspace:
    """A workspace with one finished run (with samples) and one drafted run."""
    workspace = character_workspace(root)
    checkout = use_fake_checkout(workspace, root, BUNDLE, monkeypatch)
    finished = approved_run(workspace, datetime(2026, 11, 30, 8, 0), ["training.epochs=2"])
    state = launch_run(workspace, finished, detach=False).state
    assert state.status == "succeeded", state
    write_samples(workspace, finished, epochs=(1, 2))
    drafted = create_run(
        workspace,
        datasets=["myaku"],
        base=BUNDLE,
        # No sample prompts: the samples page shows an unnamed prompt by its number.
        sets=[
            "execution.executor=host",
            "training.learning_rate=0.0002",
            "training.sample_prompts=[]",
        ],
        now=datetime(2026, 11, 30, 9, 0),
    ).run_id
    promote_run(workspace, finished, architecture="flux2", task="character")
    append_regret(workspace, "flux2 fp8 -> check skin texture at epoch 4", source=f"run {finished}")
    return WebWorkspace(workspace, checkout, finished, drafted)


def approved_run(workspace: Workspace, now: datetime, sets: list[str]) -> str:
    run_id = create_run(
        workspace,
        datasets=["myaku"],
        base=BUNDLE,
        sets=[
            "execution.executor=host",
            f"training.sample_prompts={PROMPTS!r}".replace("'", '"'),
            "training.sample_every_n_epochs=1",
            *sets,
        ],
        now=now,
    ).run_id
    plan_run(workspace, run_id, gpu="rtx-4090")
    approve_run(workspace, run_id)
    return run_id


def sample_name(run_id: str, epoch: int, prompt: int, seed: int | None) -> str:
    """Musubi 0.3.4's sample image name (``trainer_base.sample_image_inference``)."""
    seed_part = f"_{seed}" if seed is not None else ""
    return f"{run_id}_e{epoch:06d}_{prompt:02d}_20261130{8 + epoch:02d}0000{seed_part}_000.png"


def write_samples(workspace: Workspace, run_id: str, epochs: tuple[int, ...]) -> list[Path]:
    folder = workspace.run_dir(run_id) / "output" / "sample"
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for epoch in epochs:
        for prompt, seed in enumerate((42, 7)):
            image = Image.new("RGB", (256, 256), SAMPLE_COLOURS[prompt])
            draw = ImageDraw.Draw(image)
            radius = 30 + 25 * epoch
            draw.ellipse((128 - radius, 128 - radius, 128 + radius, 128 + radius), fill="white")
            draw.text((12, 12), f"epoch {epoch} / prompt {prompt}", fill="black")
            path = folder / sample_name(run_id, epoch, prompt, seed)
            image.save(path)
            written.append(path)
    return written


def launch_slow_run(web: WebWorkspace, now: datetime = datetime(2026, 11, 30, 10, 0)) -> str:
    """A run that keeps training (the fake's ``slow`` mode) until cancelled."""
    set_mode(web.checkout, "slow")
    run_id = approved_run(web.workspace, now, ["training.epochs=2"])
    launch_run(web.workspace, run_id, detach=True)
    return run_id
