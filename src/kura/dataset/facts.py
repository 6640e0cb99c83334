"""Collect per-file facts for many files: from the stat cache when unchanged, else by reading.

Cold reads of ``POOL_THRESHOLD`` files or more run in worker processes, one per core
(:mod:`kura.dataset.pool`). Pillow releases the GIL while it inflates, so a thread pool kept
both cores of the development machine busy too; the workers also run the Python around each
decode (opening, checking, hashing) side by side. Fewer files are read on a thread pool in
Kura's own process, where starting the workers would cost more than it saves. Both give
the same facts.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from kura.dataset.captions import read_caption_facts
from kura.dataset.images import read_image_facts, read_pixel_facts
from kura.dataset.onelook import current_look
from kura.dataset.pool import can_start_workers, read_in_processes
from kura.dataset.statcache import FileKey, StatCache
from kura.dataset.videos import read_video_facts

__all__ = ["add_pixel_facts", "file_keys", "gather_facts", "unopened"]

Facts = dict[str, Any]
Reader = Callable[[Path], Facts]
ProgressFn = Callable[[int, int], None]


def reader_for(kind: str) -> Reader:
    """The function that reads facts for files of ``kind`` (image, video or caption)."""
    readers: dict[str, Reader] = {
        "image": read_image_facts,
        "video": read_video_facts,
        "caption": read_caption_facts,
        "pixels": read_pixel_facts,
    }
    return readers[kind]


POOL_THRESHOLD = 64
"""Least number of files read in worker processes. Starting the fork server and its workers
(importing Pillow, NumPy and SciPy once) costs about 0.3 s of wall time on 2 cores; below
this many files a cold read takes about as long on one core (PNGs decode in 10–50 ms
each, JPEGs and captions much faster), so the pool could not pay for itself."""


def uses_processes(count: int) -> bool:
    """Whether ``count`` cold reads go to worker processes (see ``POOL_THRESHOLD``); never
    in a program that cannot start them (read from stdin, see ``can_start_workers``)."""
    return count >= POOL_THRESHOLD and can_start_workers()


def worker_count() -> int:
    """One thread per core: decoding is CPU-bound C code that releases the GIL."""
    return max(2, min(8, os.cpu_count() or 1))


def gather_facts(
    jobs: Sequence[tuple[str, str]],
    *,
    cache: StatCache | None,
    progress: ProgressFn | None,
) -> dict[str, Facts]:
    """Facts for every ``(path, kind)`` job, keyed by path; new facts go into ``cache``.

    A file that could not be opened at all is not cached, so it is retried next time.
    Inside :func:`kura.dataset.onelook.one_look`, each file is stat'ed once and facts this
    command already gathered are taken without asking the cache again."""
    total = len(jobs)
    results: dict[str, Facts] = {}
    keys = file_keys(jobs, results)
    cached = _known(keys.values(), cache)
    pending: list[tuple[str, str]] = []
    hits: dict[FileKey, Facts] = {}
    for path, kind in jobs:
        key = keys.get(path)
        if key is None:
            continue
        hit = cached.get(key)
        if hit is not None and hit.get("kind") == kind:
            results[path] = hits[key] = hit
        else:
            pending.append((path, kind))
    done = total - len(pending)
    if progress is not None:
        progress(done, total)
    fresh = _read_all(pending, done, total, progress)
    results.update(fresh)
    _store(cache, keys, fresh)
    _remember(hits, keys, fresh)
    return results


def file_keys(jobs: Sequence[tuple[str, str]], unreadable: dict[str, Facts]) -> dict[str, FileKey]:
    """Each job's stat, once per look (see :mod:`kura.dataset.onelook`); a file that cannot
    be stat'ed gets its unreadable facts in ``unreadable`` instead."""
    look = current_look()
    known = look.keys if look is not None else {}
    keys: dict[str, FileKey] = {}
    for path, kind in jobs:
        key = known.get(path)
        if key is None:
            try:
                key = FileKey.of(path)
            except OSError as exc:
                unreadable[path] = _unreadable(kind, exc)
                continue
            if look is not None:
                known[path] = key
        keys[path] = key
    return keys


def _forget(keys: dict[str, FileKey]) -> None:
    """Drop the look's facts of these files (their pixel facts were just added)."""
    look = current_look()
    if look is not None:
        for key in keys.values():
            look.facts.pop(key, None)


def unopened(facts: Mapping[str, Any]) -> bool:
    """Whether these are the facts of a file that could not be opened or read through
    (:class:`kura.dataset.reading.NotReadable`): a failure its stat may not show, so they
    are never kept, neither as the file's facts nor in a report made from them."""
    return str(facts.get("error", "")).startswith("cannot read")


def _known(keys: Iterable[FileKey], cache: StatCache | None) -> dict[FileKey, Facts]:
    """Facts for the keys this command has already seen, then for the rest from ``cache``."""
    look = current_look()
    if look is None:
        return cache.get_many(keys) if cache is not None else {}
    known = look.facts
    seen: dict[FileKey, Facts] = {}
    unseen: list[FileKey] = []
    for key in keys:
        facts = known.get(key)
        if facts is None:
            unseen.append(key)
        else:
            seen[key] = facts
    if cache is None or not unseen:
        return seen
    return {**cache.get_many(unseen), **seen}


def _remember(
    hits: dict[FileKey, Facts], keys: dict[str, FileKey], fresh: dict[str, Facts]
) -> None:
    """Keep in the look the facts taken from it or the cache (``hits``: a file that could
    not be opened is never cached) and those just read of files that could be opened."""
    look = current_look()
    if look is None:
        return
    known = look.facts
    known.update(hits)
    for path, facts in fresh.items():
        key = keys.get(path)
        if key is not None and key not in known and not unopened(facts):
            known[key] = facts


def add_pixel_facts(
    paths: Sequence[str], facts: dict[str, Facts], *, cache: StatCache | None
) -> None:
    """Decode the pixels of images whose first read skipped it (see ``images``), merge the
    result into ``facts`` and the cache."""
    if not paths:
        return
    keys: dict[str, FileKey] = {}
    for path in paths:
        try:
            keys[path] = FileKey.of(path)
        except OSError as exc:
            facts[path] = _unreadable("image", exc)
    extra = _read_all([(path, "pixels") for path in keys], 0, 0, None)
    merged = {path: {**facts[path], **update} for path, update in extra.items()}
    facts.update(merged)
    _store(cache, keys, merged)
    _forget(keys)
    _remember({}, keys, merged)


def _unreadable(kind: str, exc: OSError) -> Facts:
    return {"kind": kind, "bytes": 0, "sha256": None, "error": f"cannot read: {exc.strerror}"}


def _store(cache: StatCache | None, keys: dict[str, FileKey], fresh: dict[str, Facts]) -> None:
    if cache is None or not fresh:
        return
    cache.put_many(
        {keys[path]: facts for path, facts in fresh.items() if path in keys and not unopened(facts)}
    )


def _read_all(
    pending: Sequence[tuple[str, str]],
    done: int,
    total: int,
    progress: ProgressFn | None,
) -> dict[str, Facts]:
    if not pending:
        return {}
    if uses_processes(len(pending)):
        return _read_in_processes(pending, done, total, progress)
    return _read_in_threads(pending, done, total, progress)


def _read_in_processes(
    pending: Sequence[tuple[str, str]],
    done: int,
    total: int,
    progress: ProgressFn | None,
) -> dict[str, Facts]:
    fresh: dict[str, Facts] = {}

    def take(batch: list[tuple[str, Facts]]) -> None:
        fresh.update(batch)
        if progress is not None:
            progress(done + len(fresh), total)

    read_in_processes(pending, reader_for, take)
    return fresh


def _read_in_threads(
    pending: Sequence[tuple[str, str]],
    done: int,
    total: int,
    progress: ProgressFn | None,
) -> dict[str, Facts]:
    fresh: dict[str, Facts] = {}
    with ThreadPoolExecutor(max_workers=worker_count()) as pool:
        futures = {pool.submit(reader_for(kind), Path(path)): path for path, kind in pending}
        for future in as_completed(futures):
            fresh[futures[future]] = future.result()
            done += 1
            if progress is not None:
                progress(done, total)
    return fresh
