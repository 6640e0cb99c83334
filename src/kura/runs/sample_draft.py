"""Sample prompts drafted from a character dataset's captions, so a run shows its progress.

A character LoRA whose backend renders samples during training gets a few prompts (at most
:data:`PROMPT_COUNT`) taken from its own captions, trigger word kept, spread over the
dataset's caption files in name order (the same dataset gives the same prompts). The person
turns them off with ``--set training.sample_prompts=[]``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kura.dataset.captions import decode_caption
from kura.dataset.registry import media_dir, read_dataset
from kura.errors import SpecError
from kura.workspace import Workspace

__all__ = ["PROMPT_COUNT", "DraftedSamples", "draft_sample_prompts", "sample_every"]

PROMPT_COUNT = 3
SAMPLING_POINTS = 4
"""How many times a drafted run samples over its length (every epochs // 4 epochs)."""


@dataclass(frozen=True)
class DraftedSamples:
    prompts: tuple[str, ...]
    provenance: str


def sample_every(epochs: int | None) -> int:
    """Epochs between sampling points: about :data:`SAMPLING_POINTS` over the run."""
    return max(1, (epochs or SAMPLING_POINTS) // SAMPLING_POINTS)


def draft_sample_prompts(
    workspace: Workspace, dataset: str, *, render: Callable[[str], str] = str
) -> DraftedSamples | None:
    """Up to :data:`PROMPT_COUNT` one-line prompts from ``dataset``'s captions (each starting
    with the trigger word when the dataset has one and the caption lacks it), each passed
    through ``render`` (the backend's ``sample_prompt``: its syntax for the sample size).
    Drafted prompts are text only: a caption ``render`` refuses (SpecError: the trainer
    would read it as prompt options) is left out, and the provenance says so; no prompt at
    all when every caption is refused. None when the dataset has no readable caption."""
    spec = read_dataset(workspace, dataset)
    trigger = spec.intent.trigger or (
        spec.facts.trigger.word if spec.facts and spec.facts.trigger else None
    )
    root = media_dir(workspace, spec)
    texts: list[str] = []
    for path in sorted(root.rglob(f"*{spec.caption_ext}")):
        if any(part.startswith(".") for part in path.relative_to(root).parts):
            continue
        _, text = decode_caption(path.read_bytes())
        line = " ".join((text or "").split())
        if line:
            texts.append(line)
    if not texts:
        return None
    rendered: list[str] = []
    refused: list[str] = []
    for text in texts:
        if trigger and trigger not in text.split() and trigger not in text:
            text = f"{trigger}, {text}"
        try:
            rendered.append(render(text))
        except SpecError as exc:
            refused.append(exc.message)
    source = f"drafted from the captions of dataset {dataset}"
    if refused:
        source += f" ({len(refused)} caption(s) left out: {refused[0]})"
    if not rendered:
        return DraftedSamples(
            (),
            f"not drafted: every caption of dataset {dataset} was "
            f"refused as sample-prompt text ({refused[0]})",
        )
    count = min(PROMPT_COUNT, len(rendered))
    picked = [rendered[(i * len(rendered)) // count] for i in range(count)]
    return DraftedSamples(
        tuple(dict.fromkeys(picked)), source + " (turn off: --set training.sample_prompts=[])"
    )
