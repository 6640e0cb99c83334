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

from kura.errors import UsageError

__all__ = ["DemoStep", "run_demo"]

MARKER = ".kura-demo"


@dataclass
class DemoStep:
    argv: list[str]
    exit_code: int
    note: str = ""

    def to_dict(self) -> dict[str, object]:
        return {"argv": self.argv, "exit_code": self.exit_code, "note": self.note}


@dataclass
class DemoLog:
    root: Path
    steps: list[DemoStep] = field(default_factory=list)


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
    log = DemoLog(root)
    workspace = root / "workspace"
    data = write_demo_data(root / "incoming")

    def step(argv: list[str], note: str) -> int:
        code = run_command(["--workspace", str(workspace), *argv], note)
        log.steps.append(DemoStep(argv, code, note))
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
    return log
