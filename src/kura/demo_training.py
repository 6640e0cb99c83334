"""The demo's real trainings: one tiny CPU run for each trainer whose environment is here.

Each walk builds a tiny random model with the trainer's own classes (in the trainer's
environment, never in Kura's process), then drives the commands a user types: ``run new
--backend …``, ``plan``, ``approve``, ``launch``, ``status``, ``export``. A trainer that is
not installed is named and skipped (``kura backend install NAME`` makes it); nothing is
simulated. What each run proves and what it does not is in the README ("What the CPU runs
prove").
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kura.backends.trainer_env import EnvLocation

__all__ = ["DemoTrainers", "TrainerWalk", "installed_walks", "walk_real_trainings"]

Step = Callable[[list[str], str], int]

KOHAKUMOSS_SETTINGS = (
    "execution.executor=host",
    "training.max_steps=6",
    "training.network.rank=4",
    "training.network.alpha=4",
    "training.warmup_steps=0",
    "backend.config.vram_layer=8g",
    "backend.config.SAVE_EVERY=3",
    "backend.config.LOG_EVERY=1",
    "backend.config.MAX_TOKENS=512",
    "backend.config.NUM_WORKERS=0",
    "backend.config.DATA_SCAN_WORKERS=1",
    "backend.config.PIN_MEMORY=false",
    "backend.config.TUNE=off",
    # the drafted sample prompts render on the tiny 2-block model: small, few steps, and
    # no skip-layer guidance (its default skips block 22, which the tiny model lacks)
    "backend.config.SAMPLE_STEPS=2",
    "backend.config.SAMPLE_SIZE=[64,64]",
    "backend.config.SAMPLE_SKIP_LAYERS=[]",
)
"""A CPU-sized KohakuMoss run: six steps of a rank-4 LoRA on 64 px images."""


@dataclass(frozen=True)
class DemoTrainers:
    """Which trainers the demo trained with, and which it could not (not installed)."""

    trained: tuple[str, ...]
    not_installed: tuple[str, ...]
    failed: tuple[str, ...] = ()
    """Trainers whose walk had a command that did not exit 0 (``kura demo`` exits 1)."""

    def to_dict(self) -> dict[str, object]:
        return {
            "trained": list(self.trained),
            "not_installed": list(self.not_installed),
            "failed": list(self.failed),
        }


@dataclass(frozen=True)
class TrainerWalk:
    """One trainer's demo run: its backend name, where its environment is, and the walk."""

    backend: str
    location: EnvLocation
    walk: Callable[[Path, EnvLocation, Step], None]


def installed_walks(workspace: Path) -> tuple[tuple[TrainerWalk, ...], tuple[str, ...]]:
    """The walks whose trainer environment is present, and the backends that are not."""
    from kura.backends.aitoolkit.env import workspace_env as aitk_env
    from kura.backends.kohakumoss.env import locate_env as moss_env
    from kura.backends.musubi.env import musubi_env
    from kura.workspace import Workspace

    ws = Workspace(workspace) if (workspace / "kura.toml").is_file() else None
    walks = (
        TrainerWalk("kohakumoss", moss_env(), _walk_kohakumoss),
        TrainerWalk("ai-toolkit", aitk_env(ws), _walk_aitk),
        TrainerWalk("musubi-tuner", musubi_env(ws), _walk_musubi),
    )
    present = tuple(w for w in walks if w.location.present)
    missing = tuple(w.backend for w in walks if not w.location.present)
    return present, missing


def walk_real_trainings(root: Path, step: Step) -> DemoTrainers:
    """Train with every installed trainer: which trained (every command exited 0), which
    failed, and which are not installed."""
    from kura.demo_data import TRIGGER, write_tiny_set

    walks, missing = installed_walks(root / "workspace")
    if not walks:
        return DemoTrainers((), missing)
    data = write_tiny_set(root / "incoming" / "tiny")
    step(
        ["dataset", "add", "tiny", str(data), "--resolution", "64"],
        "four small captioned images for real training runs on this machine's CPU",
    )
    step(
        ["dataset", "set", "tiny", f"intent.trigger={TRIGGER}", "intent.task=character"],
        "the trigger word the captions open with",
    )
    trained: list[str] = []
    failed: list[str] = []
    for walk in walks:
        codes: list[int] = []
        walk.walk(root, walk.location, _counting(step, codes))
        (failed if any(codes) else trained).append(walk.backend)
    return DemoTrainers(tuple(trained), missing, tuple(failed))


def _counting(step: Step, codes: list[int]) -> Step:
    """``step`` that also appends each exit code to ``codes``."""

    def counted(argv: list[str], note: str) -> int:
        codes.append(step(argv, note))
        return codes[-1]

    return counted


def _new_run(
    root: Path, step: Step, base: str, backend: str, sets: tuple[str, ...], note: str
) -> str | None:
    argv = ["run", "new", "--dataset", "tiny", "--base", base, "--backend", backend]
    code = step([*argv, *[arg for value in sets for arg in ("--set", value)]], note)
    return None if code != 0 else _latest_run(root / "workspace")


def _follow(run_id: str, step: Step, *, plan_note: str, risk: str | None, launch_note: str) -> None:
    """plan → approve → launch (foreground) → status → export, stopping at a failure."""
    if step(["run", "plan", run_id, "--gpu", "cpu"], plan_note):
        return
    approve = ["run", "approve", run_id] + (["--accept-risk", risk] if risk else [])
    if step(approve, "approve the real run" + (f" (risk accepted: {risk})" if risk else "")):
        return
    if step(["run", "launch", run_id, "--foreground"], launch_note):
        return
    step(["run", "status", run_id], "step, loss and LoRA, read from the trainer's own files")
    step(["export", run_id, "--format", "comfyui"], "the ComfyUI LoRA, checked by header")


def _walk_kohakumoss(root: Path, env: EnvLocation, step: Step) -> None:
    """A tiny random MOSS-shaped model KohakuMoss itself builds."""
    from kura.backends.kohakumoss.queries import build_tiny

    weights = build_tiny(env, root / "moss-tiny" / "weights")
    step(
        [
            "model",
            "check",
            str(weights / "transformer" / "diffusion_pytorch_model-00001-of-00001.safetensors"),
            str(weights / "text_encoder" / "model.safetensors"),
            str(weights / "vae" / "diffusion_pytorch_model.safetensors"),
            "--arch",
            "moss_image",
        ],
        "a tiny random MOSS-Image pipeline KohakuMoss built: a MOSS DiT of a non-standard "
        "shape, a Qwen3.5 text encoder, a FLUX.2-layout VAE",
    )
    sets = (f"model.root={weights}", *KOHAKUMOSS_SETTINGS)
    run_id = _new_run(
        root, step, "moss-image-base", "kohakumoss", sets, "KohakuMoss: six CPU-sized steps"
    )
    if run_id is None:
        return
    if step(
        ["run", "plan", run_id, "--gpu", "cpu"],
        "KohakuMoss's own presets, validator, estimator and batch plan, in plan.md",
    ):
        return
    step(["run", "approve", run_id], "approve the real run")
    step(["run", "launch", run_id], "launch it on the host, detached: the four KohakuMoss steps")
    step(["run", "watch", run_id, "--interval", "1"], "follow it until it ends")
    step(["run", "status", run_id], "step, loss and checkpoint, read from metrics.jsonl")
    step(
        ["export", run_id, "--format", "comfyui"], "the ComfyUI LoRA, keys checked against the DiT"
    )


def _walk_aitk(root: Path, env: EnvLocation, step: Step) -> None:
    """A tiny random SDXL diffusers pipeline Kura builds with diffusers' own classes."""
    from kura.backends.aitoolkit.tiny import TINY_BASE, build_tiny, tiny_settings

    tiny = build_tiny(env, root / "aitk-tiny" / "sdxl")
    run_id = _new_run(
        root,
        step,
        TINY_BASE,
        "ai-toolkit",
        tiny_settings(tiny.root),
        "AI-Toolkit: four steps of a rank-4 LoRA on a tiny random SDXL pipeline, fp32 on CPU",
    )
    if run_id is not None:
        _follow(
            run_id,
            step,
            plan_note="the job file AI-Toolkit reads, in plan.md",
            risk="tiny CPU run of a random 1.1 M-parameter SDXL",
            launch_note="AI-Toolkit's run.py from its environment, in the foreground",
        )


def _walk_musubi(root: Path, env: EnvLocation, step: Step) -> None:
    """Qwen-Image at its real width with one block, random, built by Musubi's own classes;
    the text-encoder cache step is Kura's CPU stand-in (the one step that is not Musubi's
    shipped behaviour: its caching script with the 7B encoder replaced by random
    embeddings)."""
    from kura.backends.musubi.tiny import BUNDLE, build_tiny, tiny_settings

    tiny = build_tiny(env, root / "musubi-tiny")
    run_id = _new_run(
        root,
        step,
        BUNDLE,
        "musubi-tuner",
        tiny_settings(env, tiny, "tiny"),
        "Musubi Tuner: two steps of a rank-4 LoRA on a one-block Qwen-Image "
        f"({json.dumps(tiny.num_layers)} layer, real width), latents cached by Musubi",
    )
    if run_id is not None:
        _follow(
            run_id,
            step,
            plan_note="Musubi's argv and dataset TOML, every step sized, in plan.md",
            risk="the text-encoder cache step is Kura's CPU stand-in, which Kura does not size",
            launch_note="Musubi's cache and train scripts from its environment, in the foreground",
        )


def _latest_run(workspace: Path) -> str:
    return sorted(p.parent.name for p in (workspace / "runs").glob("*/run.yaml"))[-1]
