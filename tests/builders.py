"""Small builders shared by test packages: a workspace with one captioned character dataset."""

from __future__ import annotations

from pathlib import Path

from PIL import Image

from kura.dataset.registry import add_dataset, set_dataset_values
from kura.initialize import init_workspace
from kura.workspace import Workspace


def write_character_folder(folder: Path, count: int = 3) -> Path:
    """``count`` distinct 768x512 PNGs with ``myaku, picture N`` captions."""
    folder.mkdir(parents=True)
    for index in range(count):
        Image.new("RGB", (768, 512), (60 * index, 80, 120)).save(folder / f"{index}.png")
        (folder / f"{index}.txt").write_text(f"myaku, picture {index}\n")
    return folder


def character_workspace(
    root: Path, *, intent: tuple[str, ...] = ("intent.task=character",)
) -> Workspace:
    """A new workspace under ``root`` with dataset ``myaku`` added (1024 px) and ``intent`` set."""
    workspace, _ = init_workspace(root / "ws")
    add_dataset(
        workspace, "myaku", write_character_folder(root / "incoming"), resolution=(1024, 1024)
    )
    if intent:
        set_dataset_values(workspace, "myaku", list(intent))
    return workspace


def mark_trained(workspace: Workspace, run_id: str) -> None:
    """What a finished launch leaves for the verbs that follow it (evaluate, promote): a
    succeeded state.json and a saved LoRA file. For tests of those verbs, not of a launch."""
    from kura.execution.state import new_state, write_state

    run_dir = workspace.run_dir(run_id)
    state = new_state(run_id, run_dir, "host", ["train"], [])
    state.status = "succeeded"
    state.steps[0].status = "succeeded"
    write_state(run_dir, state)
    (run_dir / "output").mkdir(parents=True, exist_ok=True)
    (run_dir / "output" / f"{run_id}.safetensors").write_bytes(
        b"\x02\x00\x00\x00\x00\x00\x00\x00{}"
    )
