"""What the files cannot settle: the task suggestion and the questions for a person."""

from __future__ import annotations

from collections import Counter
from typing import Any

from kura.dataset.captions import Trigger, words
from kura.dataset.context import Context
from kura.dataset.pairs import Pairing

__all__ = ["questions", "task_suggestion"]

TASKS = ["character", "style", "concept", "paired-edit", "video"]


def task_suggestion(ctx: Context, pairing: Pairing | None) -> dict[str, Any]:
    images, videos = len(ctx.scan.images), len(ctx.scan.videos)
    if pairing is not None and pairing.controls:
        return {
            "task": "paired-edit",
            "evidence": f"{len(pairing.controls)} of {images} images have control images in "
            f"{ctx.control_root}",
        }
    if videos and videos >= images:
        return {"task": "video", "evidence": f"{_n(videos, 'video')} and {_n(images, 'image')}"}
    return {
        "task": None,
        "evidence": f"{_n(images, 'image')} and {_n(videos, 'video')} without control images: "
        "whether they teach a character, a style or a concept cannot be told from the files",
    }


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def questions(
    ctx: Context,
    texts: dict[str, str],
    trigger: Trigger | None,
    pairing: Pairing | None,
    task: dict[str, Any],
) -> list[dict[str, Any]]:
    """Every piece of intent the files cannot settle, as questions with evidence."""
    questions = [_trigger_question(texts, trigger)]
    options = [task["task"]] + [t for t in TASKS if t != task["task"]] if task["task"] else TASKS
    questions.append(
        {
            "key": "intent.task",
            "question": "What should this LoRA learn?",
            "options": list(options),
            "evidence": task["evidence"],
        }
    )
    if pairing is not None and pairing.controls:
        questions.append(
            {
                "key": "intent.pair_direction",
                "question": "Which folder holds the inputs of the edit?",
                "options": ["control-to-target", "target-to-control"],
                "evidence": f"{len(pairing.controls)} images in {ctx.root} pair with images in "
                f"{ctx.control_root}; file names cannot tell which side is the input",
            }
        )
    return questions


def _trigger_question(texts: dict[str, str], trigger: Trigger | None) -> dict[str, Any]:
    if trigger is not None:
        return {
            "key": "intent.trigger",
            "question": f"Is {trigger.word!r} the trigger word?",
            "options": [trigger.word, "none"],
            "evidence": f"{trigger.word!r} starts {trigger.leading} of {trigger.total} captions "
            f"and occurs in {trigger.count}",
        }
    leads = Counter(tokens[0] for t in texts.values() if t and (tokens := words(t)))
    top = [w for w, _ in leads.most_common(3)]
    evidence = (
        "no word opens most captions; most common first words: "
        + ", ".join(f"{w!r} ({leads[w]})" for w in top)
        if top
        else "no readable captions"
    )
    return {
        "key": "intent.trigger",
        "question": "Which word should trigger this LoRA, if any?",
        "options": [*top, "none"],
        "evidence": evidence,
    }
