"""Sample images Musubi Tuner writes during training, read back as a prompt × epoch grid.

Musubi 0.3.4 (``training/trainer_base.py``, ``sample_image_inference``) saves into
``<output_dir>/sample/`` under the name::

    <output_name>_<e{epoch:06d} | {steps:06d}>_<prompt index:02d>_<YYYYmmddHHMMSS>[_<seed>]

followed by ``_<frame:03d>.png`` for an image (``save_images_grid``) or ``.mp4`` for a video.
The prompt index is the position among the non-empty, non-``#`` lines of the prompts file,
which Kura writes from ``training.sample_prompts`` one line each. A point sampled twice
(a resumed run) shows its newest file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from kura.errors import UsageError
from kura.runs.store import read_run
from kura.workspace import Workspace, check_name

__all__ = [
    "Point",
    "RunSamples",
    "SampleFile",
    "parse_sample_name",
    "parse_side",
    "prompt_text",
    "run_samples",
]

_NAME_RE = re.compile(
    r"^(?P<prefix>.*?)_?(?:e(?P<epoch>\d{6})|(?P<steps>\d{6}))_(?P<prompt>\d{2,})"
    r"_(?P<stamp>\d{14})(?:_(?P<seed>-?\d+))?(?:_(?P<frame>\d{3})\.png|\.mp4)$"
)
_POINT_RE = re.compile(r"^(?:(?P<kind>[es])?(?P<number>\d{1,9}))$")


@dataclass(frozen=True, order=True)
class Point:
    """When a sample was taken: after an epoch, or at a step count."""

    kind: str  # "epoch" or "step"
    number: int

    @property
    def key(self) -> str:
        return f"{'e' if self.kind == 'epoch' else 's'}{self.number}"

    @property
    def label(self) -> str:
        return f"{self.kind} {self.number}"


@dataclass(frozen=True)
class SampleFile:
    path: str  # relative to the workspace root, with forward slashes
    point: Point
    prompt_index: int
    stamp: str
    seed: int | None
    is_video: bool


@dataclass
class RunSamples:
    run_id: str
    prompts: list[str]
    points: list[Point] = field(default_factory=list)
    cells: dict[tuple[int, Point], SampleFile] = field(default_factory=dict)

    @property
    def prompt_indices(self) -> list[int]:
        seen = {index for index, _ in self.cells} | set(range(len(self.prompts)))
        return sorted(seen)

    def prompt(self, index: int) -> str:
        return self.prompts[index] if index < len(self.prompts) else f"prompt {index}"

    def at(self, point: Point) -> dict[int, SampleFile]:
        return {index: cell for (index, at), cell in self.cells.items() if at == point}


def parse_sample_name(name: str) -> tuple[Point, int, str, int | None, bool] | None:
    """(point, prompt index, timestamp, seed, is video) from a file name, or None."""
    match = _NAME_RE.match(name)
    if match is None:
        return None
    if match.group("epoch") is not None:
        point = Point("epoch", int(match.group("epoch")))
    else:
        point = Point("step", int(match.group("steps")))
    seed = match.group("seed")
    return (
        point,
        int(match.group("prompt")),
        match.group("stamp"),
        int(seed) if seed is not None else None,
        name.endswith(".mp4"),
    )


def prompt_lines(lines: list[str]) -> list[str]:
    """The prompt lines Musubi numbers: non-empty and not starting with ``#``."""
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def prompt_text(line: str) -> str:
    """The prompt without Musubi's ``--w 512 --d 42`` style options."""
    return re.split(r"\s--[a-z]+\b", line, maxsplit=1)[0].strip()


def run_samples(workspace: Workspace, run_id: str) -> RunSamples:
    spec = read_run(workspace, run_id)
    result = RunSamples(run_id, prompt_lines(list(spec.training.sample_prompts)))
    folder = workspace.run_dir(run_id) / "output" / "sample"
    if not folder.is_dir():
        return result
    for path in sorted(folder.iterdir()):
        parsed = parse_sample_name(path.name) if path.is_file() else None
        if parsed is None:
            continue
        point, index, stamp, seed, is_video = parsed
        sample = SampleFile(
            path=Path(path).relative_to(workspace.root).as_posix(),
            point=point,
            prompt_index=index,
            stamp=stamp,
            seed=seed,
            is_video=is_video,
        )
        known = result.cells.get((index, point))
        if known is None or known.stamp <= stamp:
            result.cells[(index, point)] = sample
    result.points = sorted({point for _, point in result.cells})
    return result


def parse_side(text: str) -> tuple[str, Point | None]:
    """``RUN`` or ``RUN:EPOCH`` (``3`` or ``e3``) or ``RUN:s500`` (a step count)."""
    run_id, _, raw = text.partition(":")
    check_name(run_id, "run")
    if not raw:
        return run_id, None
    match = _POINT_RE.match(raw)
    if match is None:
        raise UsageError(
            f"{raw!r} is not an epoch or step",
            hint="write RUN:3 or RUN:e3 for epoch 3, RUN:s500 for step 500",
        )
    kind = "step" if match.group("kind") == "s" else "epoch"
    return run_id, Point(kind, int(match.group("number")))
