"""A finished inspection, kept while nothing it was made from has changed.

A warm ``kura run plan`` at 5,000 images spent most of its time deriving again a report
that nothing had changed: the facts of 10,000 files parsed from the stat cache, then the
report's passes over them (buckets, captions, likenesses, problems). A report is made from

- the folders' listings (the :class:`kura.dataset.scan.Scan` of the dataset and of its
  control folder: which files are images, videos, captions, unsupported or nested),
- each file's stat (:class:`kura.dataset.statcache.FileKey`: size, ``mtime_ns``, inode and
  ``ctime_ns``, the stamp no user call can set back), under which its facts are cached,
- the settings and the recorded trigger (:class:`Slot`),
- the inspection's own code: the sources of the ``kura.dataset`` package,

and :func:`stamp` hashes all of them, so a report is reused only when every one is the
same. Like the facts it is made from, it does not follow the Pillow or PyAV version.

A report is kept only when it reads back equal to itself (the JSON round trip loses
nothing) and no file failed to open: a read that failed for a reason its stat does not
show is tried again, as its facts are. A kept report that no longer decodes into an
:class:`~kura.dataset.inspection.Inspection` is a miss, and the inspection runs again.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import marshal
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kura.dataset.facts import unopened
from kura.dataset.inspection import Inspection
from kura.dataset.likeness import Likeness
from kura.dataset.problems import Problem
from kura.errors import KuraError

if TYPE_CHECKING:
    from kura.dataset.scan import Scan
    from kura.dataset.statcache import FileKey, StatCache

__all__ = ["Slot", "Stamp", "code_digest", "stamp"]


@dataclass(frozen=True)
class Slot:
    """Which inspection a report answers: the folders and every setting that shapes it."""

    root: str
    control_root: str | None
    caption_ext: str
    resolution: tuple[int, int]
    bucket_step: int
    enable_bucket: bool
    bucket_no_upscale: bool
    trigger: str | None

    def digest(self) -> bytes:
        return hashlib.sha256(repr(self).encode("utf-8", "surrogateescape")).digest()


@dataclass(frozen=True)
class Stamp:
    """A slot with the digest of the inputs of one inspection (see the module docstring)."""

    cache: StatCache
    slot: bytes
    inputs: bytes

    def kept(self) -> Inspection | None:
        """The report made from exactly these inputs, when one is kept."""
        text = self.cache.get_report(self.slot, self.inputs)
        if text is None:
            return None
        try:
            return decode(text)
        except (ValueError, TypeError, KeyError):
            return None  # written by a Kura that stored another form: made again

    def keep(self, inspection: Inspection, facts: Mapping[str, Mapping[str, Any]]) -> None:
        """Keep ``inspection`` for these inputs, unless a file failed to open or the report
        would not read back as it is. A cache that refuses the write (read-only, full)
        costs the next inspection its time, not this one its answer: a warm inspection
        that had no new facts to store never needed to write."""
        if any(unopened(item) for item in facts.values()):
            return
        try:
            text = encode(inspection)
        except (ValueError, TypeError):  # a value JSON cannot hold exactly (NaN, bytes)
            return
        if decode(text) != inspection:
            return
        with contextlib.suppress(KuraError):
            self.cache.put_report(self.slot, self.inputs, text)


def stamp(
    cache: StatCache | None,
    slot: Slot,
    scans: Sequence[Scan],
    jobs: Sequence[tuple[str, str]],
    keys: Mapping[str, FileKey],
) -> Stamp | None:
    """The stamp of an inspection of ``jobs`` with these stats, or None when its report
    cannot be kept: no cache, a file that could not be stat'ed, or no code to hash."""
    code = code_digest()
    if cache is None or code is None or len(keys) != len(jobs):
        return None
    inputs = hashlib.sha256(code)
    for scan in scans:
        listing = (
            str(scan.root),
            [tuple(entry) for entry in scan.images],
            [tuple(entry) for entry in scan.videos],
            [(stem, tuple(entry)) for stem, entry in sorted(scan.captions.items())],
            [(tuple(entry), why) for entry, why in scan.unsupported],
            scan.nested,
            scan.other,
        )
        inputs.update(_bytes_of(listing))
    inputs.update(_bytes_of([(kind, tuple(keys[path])) for path, kind in jobs]))
    return Stamp(cache, slot.digest(), inputs.digest())


def _bytes_of(value: Any) -> bytes:
    """``value`` (plain tuples, lists, strings and numbers) as bytes that equal values share.

    marshal's format 0 has no back references and no interning marks, so the bytes depend
    on the value alone, not on which objects it shares; it is about five times faster than
    ``repr`` over 10,000 stats. (A named tuple is not marshalled: callers pass tuples.)"""
    return marshal.dumps(value, 0)


@functools.cache
def code_digest() -> bytes | None:
    """sha256 of the sources of the ``kura.dataset`` package (and of the Python version),
    which make a report from the facts; None where the sources are not installed."""
    sources = sorted(Path(__file__).resolve().parent.glob("*.py"))
    if not any(source.name == "inspect.py" for source in sources):
        return None
    digest = hashlib.sha256(sys.version.encode())
    for source in sources:
        digest.update(source.name.encode() + b"\0" + source.read_bytes() + b"\0")
    return digest.digest()


def encode(inspection: Inspection) -> str:
    """The report as JSON, every field of it (``to_dict`` rounds and leaves some out)."""
    record = {field.name: getattr(inspection, field.name) for field in fields(inspection)}
    record["problems"] = [asdict(problem) for problem in inspection.problems]
    record["likenesses"] = [asdict(likeness) for likeness in inspection.likenesses]
    # ASCII escapes keep a name that is not UTF-8 (a lone surrogate) storable as SQLite text
    return json.dumps(record, separators=(",", ":"), allow_nan=False)


def decode(text: str) -> Inspection:
    """The report :func:`encode` wrote; ``ValueError``, ``TypeError`` or ``KeyError`` when
    the text is not one."""
    data = json.loads(text)
    width, height = data["resolution"]
    return Inspection(
        root=data["root"],
        resolution=(width, height),
        settings=data["settings"],
        counts=data["counts"],
        formats=data["formats"],
        sizes=data["sizes"],
        problems=tuple(Problem(**problem) for problem in data["problems"]),
        buckets=tuple(data["buckets"]),
        captions=data["captions"],
        trigger=data["trigger"],
        duplicates=tuple(tuple(group) for group in data["duplicates"]),
        likenesses=tuple(Likeness(**likeness) for likeness in data["likenesses"]),
        videos=tuple(data["videos"]),
        pairs=data["pairs"],
        task_suggestion=data["task_suggestion"],
        questions=tuple(data["questions"]),
        digest=data["digest"],
        files=data["files"],
    )
