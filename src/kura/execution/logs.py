"""Show a step's log: its last lines, or what was appended since the last look.

Reads are bounded, so a multi-gigabyte log costs the same as a small one. Progress bars
redrawn with carriage returns are collapsed to their last redraw, as a terminal shows them.
"""

from __future__ import annotations

import codecs
from collections.abc import Mapping
from pathlib import Path

__all__ = ["collapse_redraws", "read_log_since", "read_log_tail"]

DEFAULT_MAX_BYTES = 1024 * 1024


def collapse_redraws(text: str) -> str:
    """Keep, for each line, only the text after its last carriage return."""
    lines = []
    for line in text.split("\n"):
        redraws = [part for part in line.split("\r") if part]
        lines.append(redraws[-1] if redraws else "")
    return "\n".join(lines)


def read_log_tail(path: Path, *, lines: int = 50, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    """The last ``lines`` lines of a log (from at most its last ``max_bytes``)."""
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, 2)
            start = max(0, size - max_bytes)
            handle.seek(start)
            data = handle.read()
    except FileNotFoundError:
        return ""
    text = data.decode("utf-8", errors="replace")
    if start > 0:
        text = text.split("\n", 1)[1] if "\n" in text else ""
    kept = collapse_redraws(text).rstrip("\n").split("\n")
    return "\n".join(kept[-lines:]) if lines > 0 else ""


def read_log_since(
    path: Path, offset: int, *, max_bytes: int = DEFAULT_MAX_BYTES
) -> tuple[str, int]:
    """Text appended after byte ``offset`` and the offset to pass next time.

    Reads at most ``max_bytes``; a UTF-8 character cut by the end of the read is left for
    the next call. An offset past the end (the log was replaced) restarts from 0.
    """
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, 2)
            if offset > size:
                offset = 0
            handle.seek(offset)
            data = handle.read(max_bytes)
    except FileNotFoundError:
        return "", offset
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    text = decoder.decode(data, final=False)
    pending, _ = decoder.getstate()
    return text, offset + len(data) - len(pending)


ATTEMPT_LOG_BYTES = 4 * 1024 * 1024
"""How much of a failed step's log its diagnosis reads (from the end)."""


def read_attempt_log(path: Path, *, offset: int = 0) -> str:
    """What a step wrote since ``offset`` (this attempt), at most the last 4 MiB of it."""
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, 2)
            handle.seek(max(offset, size - ATTEMPT_LOG_BYTES))
            return handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def diagnose_step(
    path: Path,
    *,
    backend: str,
    step: str,
    exit_code: int | None,
    config: Mapping[str, object],
    offset: int = 0,
    run_dir: Path | None = None,
) -> dict[str, object]:
    """The backend's diagnosis of a failed step, as state.json stores it; a step killed
    by a signal is reported as killed, with ``resume`` offered when the backend has a
    checkpoint in ``run_dir`` (default: the folder above ``logs/``)."""
    from kura.backends.registry import get_backend
    from kura.execution.exits import killed_diagnosis

    trainer = get_backend(backend)
    text = read_attempt_log(path, offset=offset)
    found = trainer.diagnose(text, step=step, exit_code=exit_code, config=config)
    folder = run_dir if run_dir is not None else Path(path).parent.parent
    return killed_diagnosis(found, backend=trainer, run_dir=folder, exit_code=exit_code).to_dict()
