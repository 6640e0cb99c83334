"""Sample prompts as AI-Toolkit reads them, and the control images they name as run inputs.

A prompt names its control image with AI-Toolkit's own flag, ``--ctrl_img PATH``
(``GenerateImageConfig._process_prompt_string``, ``toolkit/config_modules.py:1400-1453``).
Kura takes it out of the prompt text and writes it as the sample's ``ctrl_img`` key
(``SampleItem``, ``toolkit/config_modules.py:60``), which the model class opens at every
sample (:attr:`~kura.backends.aitoolkit.archs.AitkModel.sample_control` says where it must,
may or must not be given).

In a container (every executor but ``host``) each file is mounted read-only at
``SAMPLE_INPUTS_DIR/<nn>-<name>`` and the job names that path; on the host the job keeps the
path. Either way each file is a :class:`Mount` with its host side set, so ``kura run
compile`` locks its size and digest (``run.lock`` ``inputs``) and the launch gate re-checks
it: what the trainer opens is what was approved.
"""

from __future__ import annotations

from dataclasses import dataclass

from kura.backends.aitoolkit.archs import AitkModel
from kura.backends.base import Mount
from kura.backends.sample_files import (
    SAMPLE_INPUTS_DIR,
    check_sample_path,
    sample_input_target,
)
from kura.errors import SpecError, Unsupported
from kura.schema.run import RunSpec

__all__ = ["CTRL_FLAG", "SAMPLE_INPUTS_DIR", "SamplePrompt", "SamplePrompts", "sample_prompts"]

CTRL_FLAG = "ctrl_img"
PURPOSE = "sample control image"


@dataclass(frozen=True)
class SamplePrompt:
    """One sample: its prompt text (other flags kept) and its control image as the step
    sees it."""

    prompt: str
    ctrl_img: str | None


@dataclass(frozen=True)
class SamplePrompts:
    prompts: tuple[SamplePrompt, ...]
    mounts: tuple[Mount, ...]


def sample_prompts(spec: RunSpec, model: AitkModel) -> SamplePrompts:
    """``training.sample_prompts`` split into text and control image, each control image
    checked against what the model's sampler does with one; SpecError/Unsupported naming
    the prompt and the fix."""
    in_container = spec.execution.executor != "host"
    targets: dict[str, str] = {}
    read: list[tuple[str, str | None]] = []
    for index, line in enumerate(spec.training.sample_prompts):
        text, path = _split(index, line)
        _check_control(index, path, model)
        if path is not None:
            check_sample_path(index, CTRL_FLAG, path, in_container=in_container)
            if path not in targets:
                targets[path] = sample_input_target(len(targets), path) if in_container else path
        read.append((text, path))
    prompts = tuple(
        SamplePrompt(text, targets[path] if path is not None else None) for text, path in read
    )
    mounts = tuple(
        Mount(target, True, f"{PURPOSE} ({path})", source=path) for path, target in targets.items()
    )
    return SamplePrompts(prompts, mounts)


def _split(index: int, line: str) -> tuple[str, str | None]:
    """The prompt without its ``--ctrl_img`` piece, and that piece's path; pieces are cut
    at ``--`` as AI-Toolkit cuts them (``config_modules.py:1400-1407``)."""
    pieces = line.strip().split("--")
    kept = [pieces[0]]
    paths: list[str] = []
    for piece in pieces[1:]:
        flag = piece.split(" ")[0].strip()
        if flag == CTRL_FLAG:
            paths.append(piece[len(flag) :].strip())
        else:
            kept.append(piece)
    if len(paths) > 1:
        raise SpecError(
            f"training.sample_prompts[{index}] names {len(paths)} control images "
            f"(--{CTRL_FLAG}); AI-Toolkit reads one per prompt line",
            hint=f"keep one --{CTRL_FLAG} PATH in the prompt",
        )
    if paths and not paths[0]:
        raise SpecError(
            f"training.sample_prompts[{index}]: --{CTRL_FLAG} has no path",
            hint=f"write --{CTRL_FLAG} /absolute/path/to/image.png",
        )
    text = "--".join(kept).strip()
    return text, (paths[0] if paths else None)


def _check_control(index: int, path: str | None, model: AitkModel) -> None:
    where = f"training.sample_prompts[{index}]"
    if path is None and model.sample_control == "required":
        raise SpecError(
            f"{where}: {model.arch} samples from a control image and AI-Toolkit stops at the "
            f"first sample without one ({model.source})",
            hint=f"end each sample prompt with --{CTRL_FLAG} /absolute/path/to/image.png, or "
            "remove training.sample_prompts",
        )
    if path is not None and model.sample_control == "ignored":
        raise Unsupported(
            f"{where}: {model.arch}'s sampler does not read a control image (--{CTRL_FLAG} {path})",
            hint=f"remove --{CTRL_FLAG} from the prompt",
        )
