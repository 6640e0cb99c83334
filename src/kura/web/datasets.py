"""The dataset pages: every registered dataset, and one dataset's files page by page.

A dataset page lists the images and clips Musubi will read (the same top-level scan as
``kura dataset inspect``), each with its caption, the problems the last stored inspection
found in it (``inspection.json``; nothing is re-inspected, so a page of a 5,000-image
dataset reads only its own slice of captions) and, for paired-edit data, its control
images beside it. Thumbnails come from the ``/files`` route, which serves only files
inside the workspace's ``datasets/`` folder: a linked dataset (``dataset add --link``)
lists its files without pictures and says why.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

from kura.bounded import read_limited
from kura.dataset.pairs import pair_controls
from kura.dataset.registry import (
    INSPECTION_NAME,
    control_dir,
    list_datasets,
    load_inspection,
    media_dir,
    read_dataset,
)
from kura.dataset.scan import Entry, scan_controls, scan_dataset
from kura.errors import KuraError, NotFound
from kura.web.security import MEDIA_TYPES
from kura.workspace import Workspace

__all__ = [
    "PAGE_SIZE",
    "DatasetFile",
    "DatasetPage",
    "FileProblem",
    "Media",
    "dataset_index",
    "dataset_page",
    "page_numbers",
]

PAGE_SIZE = 48
"""Files per page: a page of a large dataset loads this many thumbnails, no more."""
MAX_CAPTION_BYTES = 64 * 1024


@dataclass(frozen=True)
class Media:
    """One image or clip: its name in the dataset and, when the site may serve it, its URL."""

    rel: str
    kind: str
    url: str | None

    @property
    def video(self) -> bool:
        return self.kind == "video"


@dataclass(frozen=True)
class FileProblem:
    code: str
    message: str
    fix: str
    blocking: bool


@dataclass(frozen=True)
class DatasetFile:
    """One target file as the page shows it: caption, problems and controls."""

    media: Media
    caption: str | None
    caption_error: str | None
    problems: tuple[FileProblem, ...]
    controls: tuple[Media, ...]


@dataclass(frozen=True)
class DatasetPage:
    name: str
    linked: bool
    served: bool
    caption_ext: str
    has_controls: bool
    inspected: bool
    counts: dict[str, int]
    buckets: tuple[dict[str, object], ...]
    files: tuple[DatasetFile, ...]
    page: int
    pages: int
    total: int
    only_problems: bool
    other_problems: tuple[tuple[str, FileProblem], ...] = ()
    """Problems about files the listing does not show (orphan captions, nested media,
    unsupported formats, controls without a target)."""
    trainer_buckets: dict[str, object] | None = None
    trainer_buckets_error: str | None = None
    """Why the run's trainer cannot bucket the dataset here (shown instead of its table)."""
    run: str | None = None


def dataset_index(workspace: Workspace) -> list[dict[str, object]]:
    """Every registered dataset with its stored counts, for the dataset list page."""
    return [entry.to_dict() for entry in list_datasets(workspace).datasets]


def dataset_page(
    workspace: Workspace,
    name: str,
    *,
    page: int = 1,
    only_problems: bool = False,
    run: str | None = None,
) -> DatasetPage:
    """Page ``page`` (from 1) of dataset ``name``'s files; with ``only_problems``, only the
    files the inspection found something in; with ``run``, the buckets as that run's
    trainer makes them."""
    spec = read_dataset(workspace, name)
    folder = workspace.dataset_dir(name)
    media_root = media_dir(workspace, spec)
    control_root = control_dir(workspace, spec)
    scan = scan_dataset(media_root, spec.caption_ext, skip=control_root)
    targets = sorted((*scan.images, *scan.videos), key=lambda e: e.rel)
    controls = _controls_by_target(scan.images, control_root)
    problems, inspected = _stored_problems(workspace, name, folder)
    media_prefix = _served_prefix(workspace, folder, media_root)
    control_prefix = _served_prefix(workspace, folder, control_root) if control_root else None
    control_paths = {f"control/{c.rel}" for group in controls.values() for c in group}
    listed = {e.rel for e in targets} | control_paths
    if only_problems:
        targets = [
            e for e in targets if problems.get(e.rel) or _control_problem(e, controls, problems)
        ]
    pages = max(1, math.ceil(len(targets) / PAGE_SIZE))
    if page < 1 or page > pages:
        raise NotFound(
            f"dataset {name} has {pages} page(s) of files; there is no page {page}",
            hint=f"open /datasets/{name}?page=1",
        )
    shown = targets[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
    images = {e.path for e in scan.images}
    files = tuple(
        DatasetFile(
            media=_media(entry, "image" if entry.path in images else "video", media_prefix),
            caption=caption,
            caption_error=error,
            problems=tuple(problems.get(entry.rel, ()))
            + tuple(
                p for c in controls.get(entry.rel, ()) for p in problems.get(f"control/{c.rel}", ())
            ),
            controls=tuple(_media(c, "image", control_prefix) for c in controls.get(entry.rel, ())),
        )
        for entry in shown
        for caption, error in [_caption(scan.captions.get(entry.stem))]
    )
    report = load_inspection(workspace, name) if inspected else None
    return DatasetPage(
        name=name,
        linked=spec.linked,
        served=media_prefix is not None,
        caption_ext=spec.caption_ext,
        has_controls=control_root is not None,
        inspected=inspected,
        counts=dict(report.counts) if report is not None else {},
        buckets=tuple(report.buckets) if report is not None else (),
        files=files,
        page=page,
        pages=pages,
        total=len(targets),
        only_problems=only_problems,
        other_problems=tuple(
            (path, problem)
            for path, found in sorted(problems.items())
            if path not in listed
            for problem in found
        ),
        **_trainer_buckets(workspace, run, name),
        run=run,
    )


def _controls_by_target(targets: list[Entry], control_root: Path | None) -> dict[str, list[Entry]]:
    """Each target's control images, paired the way Musubi pairs them (``pair_controls``)."""
    if control_root is None or not control_root.is_dir():
        return {}
    return pair_controls(targets, scan_controls(control_root).images).controls


def _control_problem(
    entry: Entry, controls: dict[str, list[Entry]], problems: dict[str, list[FileProblem]]
) -> bool:
    return any(problems.get(f"control/{c.rel}") for c in controls.get(entry.rel, ()))


def _stored_problems(
    workspace: Workspace, name: str, folder: Path
) -> tuple[dict[str, list[FileProblem]], bool]:
    """The last inspection's problems by file (dataset-relative path), and whether there
    was an inspection at all."""
    if not (folder / INSPECTION_NAME).is_file():
        return {}, False
    by_path: dict[str, list[FileProblem]] = defaultdict(list)
    for problem in load_inspection(workspace, name).problems:
        by_path[problem.path].append(
            FileProblem(problem.code, problem.message, problem.fix, problem.blocking)
        )
    return dict(by_path), True


def _served_prefix(workspace: Workspace, folder: Path, root: Path | None) -> str | None:
    """The ``/files/…`` prefix of ``root`` when it lies inside the dataset's own folder
    (a copied dataset), else None: the site never serves files outside the workspace."""
    if root is None:
        return None
    try:
        relative = root.resolve().relative_to(folder.resolve())
    except ValueError:
        return None
    parts = ("datasets", folder.name, *relative.parts)
    return "/files/" + "/".join(quote(part) for part in parts)


def _media(entry: Entry, kind: str, prefix: str | None) -> Media:
    servable = prefix is not None and PurePosixPath(entry.name).suffix.lower() in MEDIA_TYPES
    url = f"{prefix}/{quote(entry.rel)}" if servable else None
    return Media(entry.rel, kind, url)


def _caption(entry: Entry | None) -> tuple[str | None, str | None]:
    """(caption text, None), (None, why it cannot be shown), or (None, None) for none."""
    if entry is None:
        return None, None
    try:
        data = read_limited(Path(entry.path), limit=MAX_CAPTION_BYTES, what="caption file")
    except KuraError as error:
        return None, error.message
    return data.decode("utf-8", errors="replace").lstrip("\ufeff").strip(), None


def _trainer_buckets(workspace: Workspace, run: str | None, name: str) -> dict[str, Any]:
    """The page's ``trainer_buckets`` for ``run``, or its ``trainer_buckets_error``: a run
    whose trainer is not installed here still shows the dataset, with the reason."""
    if run is None:
        return {}
    from kura.runs.buckets import run_dataset_buckets

    try:
        return {"trainer_buckets": run_dataset_buckets(workspace, run, name).to_dict()}
    except KuraError as error:
        reason = error.message + (f" ({error.hint})" if error.hint else "")
        return {"trainer_buckets_error": reason}


def page_numbers(page: DatasetPage) -> list[int]:
    """The page links to offer: the first, the last and the two either side of this one."""
    wanted = {1, page.pages, *range(page.page - 2, page.page + 3)}
    return sorted(n for n in wanted if 1 <= n <= page.pages)
