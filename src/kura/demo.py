"""`kura demo`: a real walk through a generated workspace.

It generates data, then runs the same commands a user would (in-process, through the CLI's
own entry point) and shows what each one printed. Nothing is simulated: a step that finds a
problem shows the real exit code, and the walk fixes the problem the way a user would.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from kura.demo_training import DemoTrainers, walk_real_trainings
from kura.errors import UsageError
from kura.nextsteps import NextStep, next_list

__all__ = ["DemoLog", "DemoStep", "run_demo"]

MARKER = ".kura-demo"


@dataclass(frozen=True)
class DemoStep:
    """One command the walk ran (its argv after ``--workspace``), its exit code and why."""

    argv: tuple[str, ...]
    exit_code: int
    note: str = ""

    def to_dict(self) -> dict[str, object]:
        return {"argv": list(self.argv), "exit_code": self.exit_code, "note": self.note}


@dataclass(frozen=True)
class DemoLog:
    """``kura demo``: the demo folder, its workspace, every step walked, in order, and which
    trainers it trained with (those whose environment is installed)."""

    root: str
    workspace: str
    steps: tuple[DemoStep, ...]
    trainers: DemoTrainers = field(default_factory=lambda: DemoTrainers((), ()))
    next: tuple[NextStep, ...] = ()

    kind: ClassVar[str] = "demo"

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "root": self.root,
            "workspace": self.workspace,
            "steps": [step.to_dict() for step in self.steps],
            "trainers": self.trainers.to_dict(),
            "next": next_list(*self.next),
        }


def prepare_folder(root: Path) -> Path:
    """Use ``root`` if it is empty, new, or an earlier demo (rebuilt); refuse anything else."""
    root = root.expanduser().resolve()
    if root.exists():
        if not root.is_dir():
            raise UsageError(f"{root} exists and is not a folder", hint="name a new folder")
        if (root / MARKER).exists():
            shutil.rmtree(root)
        elif any(root.iterdir()):
            raise UsageError(
                f"{root} is not empty and is not an earlier Kura demo",
                hint="name a new or empty folder, e.g. `kura demo ./kura-demo`",
            )
    root.mkdir(parents=True, exist_ok=True)
    (root / MARKER).write_text("created by `kura demo`; safe to delete\n")
    return root


def run_demo(
    root: Path,
    run_command: Callable[[list[str], str], int],
) -> DemoLog:
    """Build the demo workspace in ``root`` and walk the path.

    ``run_command(argv, note)`` runs one Kura command (the CLI passes its own entry point, so
    the demo exercises exactly what users run) and returns its exit code.
    """
    from kura.demo_data import TRIGGER, write_demo_data

    root = prepare_folder(root)
    steps: list[DemoStep] = []
    workspace = root / "workspace"
    data = write_demo_data(root / "incoming")

    def step(argv: list[str], note: str) -> int:
        code = run_command(["--workspace", str(workspace), *argv], note)
        steps.append(DemoStep(tuple(argv), code, note))
        return code

    step(["init", str(workspace)], "create the workspace")
    step(
        ["dataset", "add", "myaku", str(data.character), "--resolution", "1024"],
        "copy the character set in and inspect it (deliberate problems: "
        + "; ".join(data.deliberate_problems)
        + ")",
    )
    step(
        ["dataset", "set", "myaku", "intent.task=character", f"intent.trigger={TRIGGER}"],
        "answer the questions the inspection asked, once",
    )
    code = step(["dataset", "validate", "myaku"], "validation fails on the broken files")
    if code == 1:
        media = workspace / "datasets" / "myaku" / "media"
        (media / "myaku_cut.jpg").unlink()
        (media / "myaku_cut.txt").unlink()
        (media / "myaku_nocaption.txt").write_text(f"{TRIGGER}, a small fox spirit\n")
        latin1 = media / "myaku_latin1.txt"
        latin1.write_text(latin1.read_bytes().decode("latin-1"), encoding="utf-8")
        step(
            ["dataset", "validate", "myaku"],
            "after removing the cut JPEG, writing the missing caption and re-saving the "
            "Latin-1 caption as UTF-8",
        )
    step(
        [
            "dataset",
            "add",
            "bw-edit",
            str(data.edits),
            "--control",
            str(data.edit_controls),
            "--resolution",
            "768",
        ],
        "a paired-edit set: targets with their control images",
    )
    step(
        [
            "dataset",
            "set",
            "bw-edit",
            "intent.task=paired-edit",
            "intent.pair_direction=control-to-target",
        ],
        "record the pair direction",
    )
    step(["dataset", "list"], "what the workspace holds now")
    _walk_models_and_plan(root, step)
    trainers = walk_real_trainings(root, step)
    return DemoLog(str(root), str(workspace), tuple(steps), trainers)


DEMO_BUNDLE = "flux2-klein-base-4b"


def _walk_models_and_plan(root: Path, step: Callable[[list[str], str], int]) -> None:
    """Model files by header, then a drafted, planned and approved run.

    The model files are header-only stand-ins (the real key names and shapes, then a sparse
    hole), laid out in a demo Hugging Face cache, each blob named by its content's sha256 as
    the hub names blobs, so re-hashing them (an empty digest cache at launch, `kura model
    verify`) confirms them. Nothing here downloads or trains.
    """
    import os

    from kura.models.bundles import get_bundle
    from kura.models.layouts import write_component
    from kura.models.standins import install_bundle_in_hub_cache

    cache = root / "hf-cache"
    placed = install_bundle_in_hub_cache(get_bundle(DEMO_BUNDLE), cache)
    wrong = root / "incoming" / "models" / "ae.safetensors"
    wrong.parent.mkdir(parents=True, exist_ok=True)
    write_component(wrong, "flux1-ae")
    previous = os.environ.get("HF_HUB_CACHE")
    os.environ["HF_HUB_CACHE"] = str(cache)
    try:
        step(
            ["model", "check", str(wrong), "--arch", "flux2", "--role", "vae"],
            "a FLUX.1 autoencoder offered as the FLUX.2 VAE: refused by its header",
        )
        step(
            ["model", "check", str(placed["dit"]), str(placed["vae"])],
            "the FLUX.2 klein DiT and VAE (header-only stand-ins), identified by header",
        )
        step(["model", "resolve", DEMO_BUNDLE], "find every role's file and check it by header")
        code = step(
            ["run", "new", "--dataset", "myaku", "--base", DEMO_BUNDLE],
            "draft run.yaml from the dataset, the bundle and the knowledge cards",
        )
        if code != 0:
            return
        run_id = _latest_run(root / "workspace")
        step(
            ["run", "plan", run_id, "--gpu", "rtx-4090"],
            "compile, estimate, walk the fit ladder for a 24 GB card, write plan.md",
        )
        step(["run", "approve", run_id], "the one gate: approval bound to the plan's digest")
        step(["run", "list"], "the run, approved and ready to launch where the GPU is")
    finally:
        if previous is None:
            os.environ.pop("HF_HUB_CACHE", None)
        else:
            os.environ["HF_HUB_CACHE"] = previous


def _latest_run(workspace: Path) -> str:
    return sorted(p.parent.name for p in (workspace / "runs").glob("*/run.yaml"))[-1]
