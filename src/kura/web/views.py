"""What each page shows, gathered from Kura's library functions and formatted once.

The live-progress JSON and the first render of the run page share :func:`live_view`, so
the page reads the same before and after its first poll.

What a settled run shows (never launched, or finished) depends only on its files, so it is
kept in a :class:`~kura.web.filecache.FileCache` until one of them changes; a run still in
flight is read afresh on every request, because settling it (noticing that its processes
are gone) depends on more than its files.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import quote

from kura.backends.base import Diagnosis, StepProgress
from kura.bounded import read_text
from kura.errors import InvalidInput, KuraError, NotFound
from kura.execution.state import ACTIVE, TERMINAL, read_state
from kura.knowledge.baselines import card_path, old_layout_cards, require_current_layout
from kura.knowledge.cards import parse_card, read_card
from kura.knowledge.draft import preferences_path
from kura.knowledge.regrets import read_regrets, regrets_path
from kura.runs.following import damaged_run, list_entry, run_status
from kura.runs.results import DamagedRun, RunList, RunListEntry, RunStatus
from kura.runs.store import list_run_ids, read_run
from kura.runs.summaries import summary_of
from kura.web.attempts import attempt_logs, attempt_losses, run_attempts
from kura.web.charts import (
    WIDE,
    attempt_loss_series,
    gpu_memory_series,
    line_chart,
    lr_series,
)
from kura.web.filecache import FileCache, FileSignature, signature_of, tree_signature
from kura.web.markdown import render_markdown
from kura.web.security import MEDIA_TYPES
from kura.workspace import Workspace

__all__ = [
    "display_progress",
    "json_safe",
    "knowledge_view",
    "live_view",
    "newest_first",
    "run_entry",
    "run_file_html",
    "run_list",
    "run_list_page",
]

LOG_LINES = 80
THUMBNAILS = 8

CACHE = FileCache()
"""What the pages derived from unchanged files (shared by every app in the process; keys
hold absolute paths, so workspaces never share entries)."""


def json_safe(value: Any) -> Any:
    """The document with NaN and infinities spelled as strings (JSON has no such numbers)."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {key: json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(item) for item in value]
    return value


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    total = round(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    if minutes:
        return f"{minutes} min {secs:02d} s"
    return f"{secs} s"


def _loss(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:.4f}" if math.isfinite(value) else str(value)


def _of(done: int | None, total: int | None) -> str:
    if done is None:
        return "–"
    return f"{done} / {total}" if total else str(done)


def _next_step(diagnosis: Diagnosis) -> str:
    return ", ".join(f"{key} {value}" for key, value in diagnosis.next.items() if value is not None)


def display_progress(status: RunStatus) -> dict[str, Any]:
    """The strings the progress panel shows, from a run's status."""
    state = status.state
    progress = status.progress or StepProgress()
    commands = [{"command": step.command, "why": step.why} for step in status.next]
    labels = (
        status.labels.to_dict()
        if status.labels is not None
        else {"loss": "Loss", "raw": "the raw loss", "learning_rate": "the learning rate"}
    )
    if state is None:
        return {
            "labels": labels,
            "status": "not launched",
            "launched": False,
            "live": False,
            "terminal": False,
            "attempt": "–",
            "current_step": "–",
            "step": "–",
            "fraction": None,
            "epoch": "–",
            "loss_ema": "–",
            "loss": "–",
            "speed": "–",
            "eta": "–",
            "message": "",
            "diagnosis": None,
            "next": commands,
        }
    speed = progress.seconds_per_step
    diagnosis = status.diagnosis
    return {
        "labels": labels,
        "status": state.status,
        "launched": True,
        "live": state.status in ACTIVE,
        "terminal": state.status in TERMINAL,
        "attempt": str(state.attempt),
        "current_step": state.current_step or "–",
        "step": _of(progress.step, progress.total),
        "fraction": progress.fraction,
        "epoch": _of(progress.epoch, progress.epochs),
        "loss_ema": _loss(progress.loss_ema),
        "loss": _loss(progress.loss),
        "speed": f"{speed:.2f} s/step" if speed is not None else "–",
        "eta": _duration(progress.eta_seconds) if state.status in ACTIVE else "–",
        "message": state.message or "",
        "diagnosis": (
            {
                "code": diagnosis.code,
                "message": diagnosis.message,
                "remedy": _next_step(diagnosis),
            }
            if diagnosis is not None
            else None
        ),
        "next": commands,
    }


def _thumbnails(workspace: Workspace, run_id: str) -> str:
    """The newest sample images the backend finds in the run's output, as linked
    thumbnails (newest last), or a paragraph saying there are none yet."""
    from kura.backends.registry import get_backend

    outputs = get_backend(_backend_name(workspace, run_id)).outputs(workspace.run_dir(run_id))
    root = workspace.root.resolve()
    shown = []
    for path in outputs.samples:
        resolved = Path(path).resolve()
        if resolved.suffix.lower() in MEDIA_TYPES and resolved.is_relative_to(root):
            shown.append(resolved.relative_to(root).as_posix())
    if not shown:
        return '<p class="empty">No samples yet.</p>'
    items = []
    for relative in shown[-THUMBNAILS:]:
        url = "/files/" + quote(relative)
        name = escape(Path(relative).name)
        if relative.lower().endswith((".mp4", ".webm")):
            media = f'<video src="{escape(url)}" preload="metadata" muted></video>'
        else:
            media = f'<img src="{escape(url)}" alt="sample {name}" loading="lazy">'
        items.append(
            f'<li><a href="{escape(url)}">{media}</a><span class="thumb-name">{name}</span></li>'
        )
    return '<ul class="thumbs">' + "".join(items) + "</ul>"


def _settled(run_dir: Path) -> bool:
    """Whether the run's files alone say what it shows: not launched, or finished."""
    if not (run_dir / "state.json").exists():
        return True
    try:
        return read_state(run_dir).is_terminal
    except KuraError:
        return False


def _run_signature(workspace: Workspace, run_id: str) -> tuple[FileSignature, ...] | None:
    """The signature of everything in the run's folder, or None while the run is in flight."""
    run_dir = workspace.run_dir(run_id)
    if not _settled(run_dir):
        return None
    return tree_signature(run_dir)


def live_view(workspace: Workspace, run_id: str) -> dict[str, Any]:
    """Status, formatted progress, the log tail and both charts of one run."""
    signature = _run_signature(workspace, run_id)
    if signature is None:
        return _live_view(workspace, run_id)
    key = ("live", str(workspace.run_dir(run_id)))
    return CACHE.get(key, signature, lambda: _live_view(workspace, run_id))


def _live_view(workspace: Workspace, run_id: str) -> dict[str, Any]:
    from kura.backends.registry import get_backend

    status = run_status(workspace, run_id)
    run_dir = workspace.run_dir(run_id)
    attempts = run_attempts(run_dir) if status.state is not None else []
    logs = attempt_logs(attempts, lines=LOG_LINES)
    history = attempt_losses(get_backend(_backend_name(workspace, run_id)), run_dir, attempts)
    smoothed, raw = attempt_loss_series(history)
    current = next((attempt for attempt in attempts if attempt.current), None)
    rates = history.attempts[-1] if history.attempts else None
    return {
        **status.to_dict(),
        "display": display_progress(status),
        "log": logs[0].text if logs else "",
        "logs": [asdict(log) for log in logs],
        "charts": {
            "loss": line_chart(
                smoothed,
                title=f"Training loss ({history.metric}) by step, smoothed (EMA), "
                "one line per attempt",
                empty="No loss logged yet.",
                backdrop=raw,
                size=WIDE,
            ),
            "lr": line_chart(
                lr_series(rates),
                title=(
                    f"Learning rate by step (attempt {rates.attempt})"
                    if rates is not None
                    else "Learning rate by step"
                ),
                empty="No learning rate logged yet.",
            ),
            "gpu": line_chart(
                gpu_memory_series(current.state.gpu_samples if current else []),
                title="GPU memory in use (GiB) during this attempt",
                empty="No GPU memory readings yet.",
                x_label="seconds since the first reading",
            ),
            "samples": _thumbnails(workspace, run_id),
        },
    }


def newest_first(runs: Iterable[RunListEntry]) -> list[RunListEntry]:
    """The run list's rows, newest first (run ids sort by creation time)."""
    return sorted(runs, key=lambda entry: entry.id, reverse=True)


def run_list(workspace: Workspace) -> RunList:
    """``kura run list``'s document: each run's row kept while its own files are unchanged
    (:func:`run_entry`), so a listing costs a few ``stat`` calls a run, and a live run is
    refreshed alone without making any other run be read again."""
    return _rows(workspace, list_run_ids(workspace))


RUNS_PER_PAGE = 50


@dataclass(frozen=True)
class RunListPage:
    """One page of the run list, newest first: only these runs' files are looked at, so
    the page costs the same at 50 runs as at 5,000."""

    listing: RunList
    page: int
    pages: int
    total: int


def run_list_page(workspace: Workspace, page: int = 1) -> RunListPage:
    """Page ``page`` (1 = newest; past the last, the last) of ``RUNS_PER_PAGE`` runs."""
    newest = list_run_ids(workspace)[::-1]
    pages = max(1, math.ceil(len(newest) / RUNS_PER_PAGE))
    page = min(max(page, 1), pages)
    shown = newest[(page - 1) * RUNS_PER_PAGE : page * RUNS_PER_PAGE]
    return RunListPage(_rows(workspace, shown), page, pages, len(newest))


def _rows(workspace: Workspace, run_ids: Iterable[str]) -> RunList:
    runs: list[RunListEntry] = []
    damaged: list[DamagedRun] = []
    for run_id in run_ids:
        try:
            runs.append(_entry(workspace, run_id))
        except (InvalidInput, NotFound) as error:
            damaged.append(damaged_run(workspace, run_id, error))
    return RunList(tuple(runs), tuple(damaged))


def run_entry(workspace: Workspace, run_id: str) -> RunListEntry:
    """The run's row of ``kura run list``, reading no other run."""
    try:
        return _entry(workspace, run_id)
    except (InvalidInput, NotFound):
        raise NotFound(f"no run {run_id!r} in {workspace.root}") from None


ENTRIES = FileCache(limit=20_000, frozen=True)
"""Run-list rows and run.yaml summaries (frozen values; a sweep's workspace holds thousands)."""

_ROW_FILES = ("run.yaml", "state.json", "approval.json", "plan.md")
"""The files a run's row is made from (its summary, status and times)."""


def _entry(workspace: Workspace, run_id: str) -> RunListEntry:
    """A settled run's row from the cache while its row files are unchanged; a run in
    flight (state not terminal) is refreshed on every request, its run.yaml summary still
    cached."""
    run_dir = workspace.run_dir(run_id)
    signature = [signature_of(run_dir / name) for name in _ROW_FILES]
    fresh: list[RunListEntry] = []

    def compute() -> RunListEntry:
        fresh.append(_fresh_entry(workspace, run_id))
        return fresh[0]

    entry = ENTRIES.get(("row", str(run_dir)), signature, compute)
    if entry.status in ACTIVE and not fresh:
        entry = _fresh_entry(workspace, run_id)
    return entry


def _backend_name(workspace: Workspace, run_id: str) -> str:
    """The run's backend, read again only when its run.yaml changed (a live run's page
    polls every few seconds)."""
    path = workspace.run_dir(run_id) / "run.yaml"
    return ENTRIES.get(
        ("backend", str(path)),
        [signature_of(path)],
        lambda: read_run(workspace, run_id).backend.name,
    )


def _fresh_entry(workspace: Workspace, run_id: str) -> RunListEntry:
    path = workspace.run_dir(run_id) / "run.yaml"
    summary = ENTRIES.get(
        ("summary", str(path)),
        [signature_of(path)],
        lambda: summary_of(read_run(workspace, run_id)),
    )
    return list_entry(workspace, run_id, summary)


def run_file_html(workspace: Workspace, run_id: str, name: str) -> str | None:
    """A run's Markdown file (``plan.md``, ``notes.md``) as HTML; None when absent."""
    path = workspace.run_dir(run_id) / name
    if not path.is_file():
        return None
    return CACHE.get(
        ("markdown", str(path)),
        [signature_of(path)],
        lambda: render_markdown(read_text(path, what="Markdown file")),
    )


def knowledge_view(workspace: Workspace) -> dict[str, Any]:
    """Every card in ``knowledge/`` with its entries and problems, and the regrets."""
    skip = {regrets_path(workspace).name, preferences_path(workspace).name}
    cards: list[dict[str, Any]] = []
    for old in old_layout_cards(workspace):
        try:
            require_current_layout(workspace)
        except KuraError as error:
            cards.append(
                {
                    "backend": "(old layout)",
                    "architecture": old.stem,
                    "error": f"{error.message} — {error.hint}",
                    "sections": {},
                }
            )
    folder = workspace.knowledge_dir
    paths = sorted(folder.glob("*/*.md")) if folder.is_dir() and not cards else []
    names = [(path.parent.name, path.stem) for path in paths if path.name not in skip]
    for backend, architecture in names:
        try:
            path = card_path(workspace, backend, architecture)
            entries, problems = parse_card(read_card(path))
        except KuraError as error:
            cards.append(
                {
                    "backend": backend,
                    "architecture": architecture,
                    "error": error.message,
                    "sections": {},
                }
            )
            continue
        sections: dict[str, list[dict[str, Any]]] = {}
        for entry in entries:
            sections.setdefault(entry.section, []).append(entry.to_dict())
        cards.append(
            {
                "backend": backend,
                "architecture": architecture,
                "path": workspace.relative(path),
                "sections": sections,
                "problems": problems,
                "error": None,
            }
        )
    return {"cards": cards, "regrets": [r.to_dict() for r in read_regrets(workspace)]}
