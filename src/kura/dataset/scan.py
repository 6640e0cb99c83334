"""Walk a dataset folder and sort its files the way Musubi Tuner will see them.

Musubi's directory loader (``src/musubi_tuner/dataset/media_utils.py``: ``glob_images``,
``glob_videos``) globs only the top level of ``image_directory``, matches extensions in
lower or upper case only (``.png``/``.PNG``, never ``.Png``), skips names starting with a dot
and keeps only images whose ``<stem><caption_extension>`` exists. This module reproduces that
view and also notes what Musubi will silently ignore: media in subfolders and image-like files
with extensions it does not read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import lru_cache
from operator import attrgetter
from pathlib import Path
from typing import NamedTuple

from kura.dataset.onelook import current_look
from kura.dataset.sourcecheck import printable_name, undecodable
from kura.errors import InvalidInput, NotFound

__all__ = [
    "IMAGE_EXTENSIONS",
    "VIDEO_EXTENSIONS",
    "Entry",
    "Scan",
    "scan_dataset",
]

IMAGE_EXTENSIONS = frozenset({".png", ".jpg", ".jpeg", ".webp", ".bmp", ".avif"})
VIDEO_EXTENSIONS = frozenset(
    {".mp4", ".webm", ".avi", ".mkv", ".mov", ".flv", ".wmv", ".m4v", ".mpg", ".mpeg"}
)
# Picture and movie formats people keep next to training data that Musubi never reads.
FOREIGN_MEDIA_EXTENSIONS = frozenset(
    {".gif", ".tif", ".tiff", ".heic", ".heif", ".jxl", ".jp2", ".psd", ".tga", ".ico", ".3gp"}
)


class Entry(NamedTuple):
    """A file found by the scan: absolute ``path``, ``rel`` relative to the folder scanned.

    A named tuple, not a dataclass: a scan makes one per file, and a tuple is made in C."""

    path: str
    rel: str
    name: str
    stem: str
    ext: str


@dataclass(slots=True)
class Scan:
    """What one folder holds, sorted by role."""

    root: Path
    images: list[Entry] = field(default_factory=list)
    videos: list[Entry] = field(default_factory=list)
    captions: dict[str, Entry] = field(default_factory=dict)
    unsupported: list[tuple[Entry, str]] = field(default_factory=list)
    nested: list[str] = field(default_factory=list)
    other: int = 0


def media_kind(name: str) -> str | None:
    """``"image"``/``"video"`` when Musubi reads a file of this name, ``None`` otherwise.

    Musubi lists extensions in lower and upper case only, so ``photo.Jpg`` is not read."""
    return _kind_of_extension(os.path.splitext(name)[1])


def unsupported_reason(name: str) -> str | None:
    """Why an image- or video-like file will not be read, or ``None`` if it is not one."""
    return _unsupported_extension(os.path.splitext(name)[1])


@lru_cache(maxsize=1024)
def _kind_of_extension(ext: str) -> str | None:
    """:func:`media_kind` by the extension alone (a folder has few; cached)."""
    if ext.lower() in IMAGE_EXTENSIONS and ext in (ext.lower(), ext.upper()):
        return "image"
    if ext.lower() in VIDEO_EXTENSIONS and ext in (ext.lower(), ext.upper()):
        return "video"
    return None


@lru_cache(maxsize=1024)
def _unsupported_extension(ext: str) -> str | None:
    """:func:`unsupported_reason` by the extension alone (cached)."""
    low = ext.lower()
    if low in IMAGE_EXTENSIONS or low in VIDEO_EXTENSIONS:
        if _kind_of_extension(ext) is None:
            return (
                f"extension {ext!r} is mixed case; Musubi only matches {low!r} or {ext.upper()!r}"
            )
        return None
    if low in FOREIGN_MEDIA_EXTENSIONS:
        return f"Musubi does not read {low!r} files"
    return None


def check_folder(path: Path, role: str) -> Path:
    """Return ``path`` made absolute, or raise if it is missing or not a folder."""
    path = Path(path)
    if not path.exists():
        raise NotFound(
            f"{role} folder {str(path)!r} does not exist",
            hint=f"Check the path of the {role} folder.",
            path=path,
        )
    if not path.is_dir():
        raise InvalidInput(
            f"{role} path {str(path)!r} is a file, not a folder",
            hint=f"Give the folder that holds the {role} files.",
            path=path,
        )
    return Path(os.path.abspath(path))


def scan_dataset(root: Path, caption_ext: str, *, skip: Path | None = None) -> Scan:
    """Sort the files directly in ``root``; note media in subfolders (never read by Musubi).

    ``skip`` is a subfolder left out of the nested walk (a control folder kept inside the
    dataset folder). A symlinked subfolder is not entered, as ``kura dataset add`` neither
    copies nor checks one (:mod:`kura.dataset.sourcecheck`): a link to ``/`` never walks
    the filesystem. Inside :func:`kura.dataset.onelook.one_look` a folder is listed once."""
    look = current_look()
    if look is None:
        return _scan_dataset(root, caption_ext, skip)
    key = ("scan", Path(root), caption_ext, None if skip is None else Path(skip))
    return look.once(key, lambda: _scan_dataset(root, caption_ext, skip))


def _scan_dataset(root: Path, caption_ext: str, skip: Path | None) -> Scan:
    scan = Scan(root=root)
    for entry in _sorted_entries(root):
        if entry.name.startswith("."):
            continue
        if _is_dir(entry):
            if _is_link(entry):
                continue
            if skip is None or not _same_dir(Path(entry.path), skip):
                scan.nested.extend(_nested_media(Path(entry.path), root, skip))
            continue
        _classify(scan, entry.path, entry.name, caption_ext)
    return scan


def scan_controls(folder: Path) -> Scan:
    """Sort the files of a control folder: only its top-level images count, as in Musubi."""
    scan = Scan(root=folder)
    for entry in _sorted_entries(folder):
        if entry.name.startswith(".") or _is_dir(entry):
            continue
        item = _entry(entry.path, entry.name)
        kind = media_kind(entry.name)
        if kind == "image":
            scan.images.append(item)
        elif (reason := unsupported_reason(entry.name)) is not None or kind == "video":
            scan.unsupported.append((item, reason or "control folders hold images, not videos"))
        else:
            scan.other += 1
    return scan


def _classify(scan: Scan, path: str, name: str, caption_ext: str) -> None:
    stem, ext = _split(name)
    item = Entry(path, name, name, stem, ext)
    if name.endswith(caption_ext) and len(name) > len(caption_ext):
        scan.captions[name[: -len(caption_ext)]] = item
        return
    kind = _kind_of_extension(ext)
    if kind == "image":
        scan.images.append(item)
    elif kind == "video":
        scan.videos.append(item)
    elif (reason := _unsupported_extension(ext)) is not None:
        scan.unsupported.append((item, reason))
    else:
        scan.other += 1


def _entry(path: str, name: str) -> Entry:
    """An entry for a file directly inside the scanned folder (so ``rel`` is its name)."""
    stem, ext = _split(name)
    return Entry(path, name, name, stem, ext)


def _split(name: str) -> tuple[str, str]:
    """``os.path.splitext(name)`` for a name without a slash, at a fraction of its cost (a
    scan splits every name): the extension starts at the last dot, unless only dots come
    before it (``.bashrc``, ``..x`` have none)."""
    dot = name.rfind(".")
    if dot > 0 and (name[0] != "." or name[:dot].strip(".")):
        return name[:dot], name[dot:]
    return name, ""


def _sorted_entries(folder: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as it:
            entries = sorted(it, key=_BY_NAME)
    except OSError as exc:
        raise InvalidInput(
            f"cannot list folder {str(folder)!r}: {exc.strerror or exc}",
            hint="Check the folder's permissions.",
            path=folder,
        ) from exc
    _refuse_undecodable(folder, [e.name for e in entries if not e.name.startswith(".")])
    return entries


_BY_NAME = attrgetter("name")


def _refuse_undecodable(folder: Path, names: list[str]) -> None:
    """Names that are not UTF-8 cannot be reported (JSON, YAML, the terminal): refuse them
    before anything is read, naming them with their bytes escaped."""
    if not undecodable("".join(names)):
        return  # one check for the whole folder: a name is undecodable if it holds a surrogate
    bad = [printable_name(name) for name in names if undecodable(name)]
    if bad:
        raise InvalidInput(
            f"{printable_name(str(folder))} holds names that are not UTF-8: {', '.join(bad[:5])}",
            hint="Rename them to UTF-8 (e.g. `convmv -f latin1 -t utf8 -r --notest FOLDER`).",
            path=printable_name(str(folder)),
        )


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _is_link(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_symlink()
    except OSError:
        return False


def _same_dir(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _nested_media(folder: Path, root: Path, skip: Path | None) -> list[str]:
    """Relative paths of media files anywhere below ``folder``.

    Symlinked folders are not entered (they may lead out of the dataset, to ``/``); a
    folder already visited (same device and inode) is not entered again either."""
    found: list[str] = []
    root_info = root.stat()
    seen: set[tuple[int, int]] = {(root_info.st_dev, root_info.st_ino)}
    pending = [folder]
    while pending:
        current = pending.pop()
        try:
            info = current.stat()
        except OSError:
            continue
        if (info.st_dev, info.st_ino) in seen:
            continue
        seen.add((info.st_dev, info.st_ino))
        try:
            with os.scandir(current) as it:
                entries = sorted(it, key=_BY_NAME)
        except OSError:
            continue
        _refuse_undecodable(current, [e.name for e in entries if not e.name.startswith(".")])
        for entry in entries:
            if entry.name.startswith("."):
                continue
            if _is_dir(entry):
                if not _is_link(entry) and (skip is None or not _same_dir(Path(entry.path), skip)):
                    pending.append(Path(entry.path))
            elif media_kind(entry.name) is not None:
                found.append(os.path.relpath(entry.path, root))
    return sorted(found)
