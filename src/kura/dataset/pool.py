"""Read many files' facts in worker processes, one per core.

Decoding for integrity and likeness is most of a cold inspection. Pillow releases the GIL
while it inflates, so a thread pool already keeps most of two cores busy (about 1.85 of 2
measured); the Python around each decode (facts, perceptual hashes) still takes turns on the
GIL, which worker processes do not: they keep every core busy (about 1.95 of 2), and the
more cores, the more that matters. They are forked from a fork server (``multiprocessing``'s
``forkserver`` context) that has imported the readers (Pillow, NumPy, SciPy) once, rather
than from Kura's own process: forking a process that runs other threads (the web server,
a progress display) can copy a lock another thread held and hang the child.

The jobs travel in small batches and their facts (plain JSON-able dicts, never pixels) come
back as each batch finishes, so memory follows the batches in flight, not the dataset, and
progress advances batch by batch. Each worker takes on Pillow's two settings that change
what a reader reports (``MAX_IMAGE_PIXELS``, ``LOAD_TRUNCATED_IMAGES``) from the caller, so
the facts are the ones the caller's own process would read.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["BATCH", "PillowSettings", "can_start_workers", "process_count", "read_in_processes"]

Facts = dict[str, Any]
Job = tuple[str, str]

BATCH = 8
"""Jobs a worker reads per round trip: enough to make pickling negligible next to a decode
(milliseconds each), few enough that progress and the load spread stay even."""

PRELOAD = [
    "__main__",
    "kura.dataset.images",
    "kura.dataset.videos",
    "kura.dataset.captions",
    "PIL.Image",
    "numpy",
    "scipy.fftpack",
    "imagehash",
]
"""Modules the fork server imports once, so each worker starts with them loaded (the
readers import Pillow, NumPy, SciPy and imagehash on first use: about 0.5 s). The main
module is among them (imported as ``__mp_main__``, so its ``if __name__ == "__main__"``
part does not run): a worker would otherwise import it again (``kura``'s CLI, a script)
before its first job."""


@dataclass(frozen=True, slots=True)
class PillowSettings:
    """Pillow's process-wide settings that change what a reader reports."""

    max_image_pixels: int | None
    load_truncated_images: bool

    @classmethod
    def current(cls) -> PillowSettings:
        from PIL import Image, ImageFile

        return cls(Image.MAX_IMAGE_PIXELS, bool(ImageFile.LOAD_TRUNCATED_IMAGES))

    def adopt(self) -> None:
        from PIL import Image, ImageFile

        Image.MAX_IMAGE_PIXELS = self.max_image_pixels
        ImageFile.LOAD_TRUNCATED_IMAGES = self.load_truncated_images


def can_start_workers() -> bool:
    """Whether worker processes can start from this program: each imports the main module
    again from its file, so a program read from stdin (``python - <<EOF``, whose main
    module's ``__file__`` is ``<stdin>``) cannot have them; Python, a ``-c`` command and any
    script file can."""
    import sys

    main_file = getattr(sys.modules.get("__main__"), "__file__", None)
    return main_file is None or os.path.isfile(main_file)


def process_count() -> int:
    """One worker per core."""
    return os.cpu_count() or 1


def read_in_processes(
    jobs: Sequence[Job],
    reader_for: Callable[[str], Callable[[Path], Facts]],
    on_batch: Callable[[list[tuple[str, Facts]]], None],
) -> None:
    """Read every ``(path, kind)`` job in worker processes with ``reader_for(kind)``, handing
    each finished batch's ``(path, facts)`` pairs to ``on_batch`` (in completion order).
    ``reader_for`` must be a module-level function: it travels to the workers by name."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    workers = max(1, min(process_count(), -(-len(jobs) // BATCH)))
    batches = _batches(jobs)
    with ProcessPoolExecutor(
        max_workers=workers,
        mp_context=context,
        initializer=_adopt_settings,
        initargs=(PillowSettings.current(),),
    ) as pool:
        running: set[Future[list[tuple[str, Facts]]]] = set()
        for batch in batches:
            running.add(pool.submit(read_batch, reader_for, batch))
            if len(running) >= 2 * workers:
                running = _hand_over_finished(running, on_batch)
        while running:
            running = _hand_over_finished(running, on_batch)


def _batches(jobs: Sequence[Job]) -> Iterator[list[Job]]:
    for start in range(0, len(jobs), BATCH):
        yield list(jobs[start : start + BATCH])


def _hand_over_finished(
    running: set[Future[list[tuple[str, Facts]]]],
    on_batch: Callable[[list[tuple[str, Facts]]], None],
) -> set[Future[list[tuple[str, Facts]]]]:
    """Wait for at least one batch, pass on every finished one, return those still running."""
    done, pending = wait(running, return_when=FIRST_COMPLETED)
    for future in done:
        on_batch(future.result())
    return pending


def _adopt_settings(settings: PillowSettings) -> None:
    settings.adopt()


def read_batch(
    reader_for: Callable[[str], Callable[[Path], Facts]], batch: list[Job]
) -> list[tuple[str, Facts]]:
    """Facts of each job in ``batch`` (runs in a worker process)."""
    return [(path, reader_for(kind)(Path(path))) for path, kind in batch]
