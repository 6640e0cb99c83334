"""What a source folder holds that Kura must not copy or read without being told.

Checked by ``kura dataset add`` before anything is written:

* a symlink that resolves outside the folder (``caption.txt -> /proc/self/environ`` would
  put the environment, tokens included, into the training captions) is refused unless the
  user passes ``--follow-links``; then it is followed and listed in the result;
* a device, FIFO or socket is refused (reading one never ends, or blocks forever);
* a name that is not valid UTF-8 is refused: it cannot be written to dataset.yaml, the
  inspection report or JSON output, and Musubi's captions lookup would not match it either.

Hidden names (``.…``) are skipped, as the copy and Musubi skip them. Symlinked folders are
not entered (the copy does not follow them).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from kura.errors import InvalidInput

__all__ = ["check_source", "printable_name", "undecodable"]

_SHOWN = 5


def undecodable(name: str) -> bool:
    """Whether ``name`` (from ``os.listdir``) came from bytes that are not UTF-8."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def printable_name(name: str) -> str:
    """``name`` with undecodable bytes shown as ``\\xNN`` (safe to print or write)."""
    return os.fsencode(name).decode("utf-8", errors="backslashreplace")


def check_source(folder: Path, *, follow_links: bool) -> list[str]:
    """Raise :class:`InvalidInput` for what ``folder`` must not hold; return the relative
    paths of symlinks that leave it (only possible with ``follow_links``)."""
    root = Path(os.path.realpath(folder))
    bad_names: list[str] = []
    special: list[str] = []
    leaving: list[str] = []
    for current, dirs, files in os.walk(folder, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        relative = Path(current).relative_to(folder)
        bad_names += [str(relative / d) for d in dirs if undecodable(d)]
        for name in sorted(f for f in files if not f.startswith(".")):
            rel = str(relative / name)
            if undecodable(name):
                bad_names.append(rel)
                continue
            path = Path(current) / name
            if _is_special(path):
                special.append(rel)
            elif path.is_symlink() and not Path(os.path.realpath(path)).is_relative_to(root):
                leaving.append(rel)
    _refuse(folder, bad_names, special, [] if follow_links else leaving)
    return leaving


def _is_special(path: Path) -> bool:
    """A device, FIFO or socket, itself or as the target of a symlink."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False  # a dangling link: nothing to read, the copy skips it
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _refuse(folder: Path, bad_names: list[str], special: list[str], leaving: list[str]) -> None:
    if bad_names:
        raise InvalidInput(
            f"{printable_name(str(folder))} holds names that are not UTF-8: "
            f"{_listed([printable_name(n) for n in bad_names])}",
            hint="rename them to UTF-8 (e.g. `convmv -f latin1 -t utf8 -r --notest FOLDER`); "
            "nothing was written",
            path=printable_name(str(folder)),
        )
    if special:
        raise InvalidInput(
            f"{folder} holds files that are not regular files (devices, pipes or sockets, or "
            f"links to them): {_listed(special)}",
            hint="remove them or move them out of the folder; nothing was written",
            path=folder,
        )
    if leaving:
        raise InvalidInput(
            f"{folder} holds symlinks that point outside it: {_listed(leaving)}",
            hint="replace them with the files themselves, or pass --follow-links to copy "
            "what they point to (each is listed in the result); nothing was written",
            path=folder,
        )


def _listed(items: list[str]) -> str:
    shown = ", ".join(items[:_SHOWN])
    return shown + (f" … ({len(items)} in all)" if len(items) > _SHOWN else "")
