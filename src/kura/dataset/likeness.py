"""Likeness pairs: pHash candidates from an index, each confirmed on the pixels.

Finding candidates never compares all pairs. It is multi-index hashing: the 64 bits are
split into ``CANDIDATE_DISTANCE + 1`` bands, so two hashes within that distance agree
exactly on at least one band. For each band the images' whole-picture hashes are sorted
with that band as the leading bits; each query hash (an image's whole, mirrored and crop
window hashes, see ``similarity``) is looked up by bisection and compared only with the
``NEIGHBOURS`` entries on either side that share its band. That is exact while a band's
bucket holds few hashes and caps the work when many pictures hash alike (flat
backgrounds, one template), so candidate comparisons grow linearly with the image count,
and each image keeps at most ``MAX_PARTNERS`` closest candidates.

A candidate becomes a reported pair only when the pictures themselves agree: both are
decoded small (256 px), the hypothesis the hash matched (same picture, mirrored, a crop
window) is refined by moving the window's edges, and at 64x64 the normalised
cross-correlation of the grayscale and of its gradient magnitude (which a flat
background cannot inflate) must both reach ``MIN_CORRELATION``. Correlation ignores
brightness and contrast, and on a plain background one blob can be moved and scaled onto
another, so the colours must agree as well: each colour channel of one picture, fitted
linearly to the other's, needs a slope within ``COLOUR_SLOPE`` of 1 and means within
``COLOUR_SHIFT`` levels (a copy keeps its colours; a different drawing rarely does).
"""

from __future__ import annotations

import struct
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from kura.dataset.similarity import CROP_WINDOWS

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray
    from PIL import Image

__all__ = [
    "CANDIDATE_DISTANCE",
    "MAX_PARTNERS",
    "Candidate",
    "CandidateIndex",
    "Likeness",
    "Picture",
    "find_likenesses",
]

CANDIDATE_DISTANCE = 8
"""Largest pHash distance (of 64 bits) that makes two pictures a candidate pair."""

NEIGHBOURS = 8
"""Index entries compared on either side of a query's place in each band's order."""

MAX_PARTNERS = 4
"""Candidates kept per image (the closest), so confirmation work stays linear too."""

MIN_CORRELATION = 0.9
"""Least correlation, of both grayscale and gradient, for a confirmed likeness."""

HOPELESS = 0.5
"""A hypothesis whose grayscale correlation is below this before refinement is dropped
without refining it (gradients are too sharp to judge an unrefined window by)."""

COLOUR_SLOPE = 0.2
"""Largest deviation from 1 of the per-channel slope between a confirmed pair's colours."""

COLOUR_SHIFT = 16.0
"""Largest difference (0–255) between a confirmed pair's per-channel means."""

CROP_INSET = 0.02
"""Least fraction cut from an edge (after refinement) that makes a likeness a crop."""

CONFIRM_SIDE = 64
PIXEL_SIDE = 256

Kind = Literal["resized", "re-encoded", "cropped", "flipped"]
Box = tuple[float, float, float, float]
WHOLE: Box = (0.0, 0.0, 1.0, 1.0)


@dataclass(frozen=True, slots=True)
class Picture:
    """One hashed image: ``key`` is its report path, ``path`` where to read it."""

    key: str
    path: str
    content: str
    width: int
    height: int
    hashes: tuple[int, ...]
    """Whole, mirrored, then one per ``CROP_WINDOWS`` entry."""

    @classmethod
    def of(cls, key: str, path: str, facts: dict[str, Any]) -> Picture | None:
        """The picture for an image's facts, or None when it has no hashes (flat, unread)."""
        likeness = facts.get("likeness") or {}
        if "hash" not in likeness:
            return None
        hashes = (int(likeness["hash"], 16), *_hex_words(likeness["more"]))
        return cls(key, path, facts["sha256"], facts["width"], facts["height"], hashes)


def _hex_words(more: str) -> tuple[int, ...]:
    """The 64-bit hashes written one after another as 16 hex digits each: one C call for
    all 31 (a warm inspection reads them for every hashed image); any other text is cut
    into 16-digit pieces as written."""
    if len(more) % 16 == 0 and more.isascii() and more.isalnum():
        try:
            return struct.unpack(f">{len(more) // 16}Q", bytes.fromhex(more))
        except ValueError:
            pass  # not hex: int() below says so, as it always did
    return tuple(int(more[i : i + 16], 16) for i in range(0, len(more), 16))


@dataclass(frozen=True, slots=True)
class Candidate:
    """Picture ``entry``'s whole hash lies within ``distance`` of hash ``hypothesis`` of
    picture ``owner`` (0 whole, 1 mirrored, 2+ a crop window of ``owner``)."""

    owner: int
    entry: int
    hypothesis: int
    distance: int


@dataclass(frozen=True, slots=True)
class Likeness:
    """``copy`` is ``original`` resized, re-encoded, cropped or mirrored."""

    original: str
    copy: str
    kind: Kind
    distance: int
    correlation: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "original": self.original,
            "copy": self.copy,
            "kind": self.kind,
            "distance": self.distance,
            "correlation": round(self.correlation, 3),
        }


def _bands() -> list[tuple[int, int]]:
    """``(lowest bit, width)`` of each band: 64 bits in ``CANDIDATE_DISTANCE + 1`` parts."""
    count = CANDIDATE_DISTANCE + 1
    widths = [64 // count + (1 if i < 64 % count else 0) for i in range(count)]
    bands, low = [], 0
    for width in widths:
        bands.append((low, width))
        low += width
    return bands


def _lead_with(values: NDArray[np.uint64], low: int, width: int) -> NDArray[np.uint64]:
    """``values`` rotated so that bits ``low .. low + width`` lead."""
    import numpy as np

    up = np.uint64(64 - low - width)
    down = np.uint64((low + width) % 64)
    if int(up) == 0:
        return values.copy()
    return (values << up) | (values >> down)


class CandidateIndex:
    """Whole-picture hashes indexed by band; ``comparisons`` counts the hash comparisons."""

    chunk = 1 << 15

    def __init__(self, pictures: Sequence[Picture]) -> None:
        import numpy as np

        self.pictures = pictures
        self.comparisons = 0
        contents: dict[str, int] = {}
        self._content = np.array(
            [contents.setdefault(p.content, len(contents)) for p in pictures], dtype=np.int64
        )
        self._whole = np.array([p.hashes[0] for p in pictures], dtype=np.uint64)
        self._sorted = []
        for low, width in _bands():
            lead = _lead_with(self._whole, low, width)
            order = np.argsort(lead, kind="stable")
            self._sorted.append((low, width, order, lead[order]))

    def candidates(self) -> list[Candidate]:
        """At most ``MAX_PARTNERS`` candidates per picture, closest first."""
        import numpy as np

        if len(self.pictures) < 2:
            return []
        per = len(self.pictures[0].hashes)
        queries = np.array([h for p in self.pictures for h in p.hashes], dtype=np.uint64)
        kept: list[NDArray[np.int64]] = []
        for start in range(0, len(queries), self.chunk):
            rows = np.arange(start, min(len(queries), start + self.chunk), dtype=np.int64)
            found = self._search(queries[rows], rows // per, rows % per)
            kept.append(_closest_per_owner(found))
        best = _closest_per_owner(np.concatenate(kept, axis=0))
        return [Candidate(int(o), int(e), int(h), int(d)) for o, e, h, d in best.tolist()]

    def _search(
        self, queries: NDArray[np.uint64], owner: NDArray[np.int64], hypothesis: NDArray[np.int64]
    ) -> NDArray[np.int64]:
        """Rows ``(owner, entry, hypothesis, distance)`` of every close pair found."""
        import numpy as np

        size = len(self._whole)
        found = []
        for low, width, order, lead in self._sorted:
            shift = np.uint64(64 - width)
            query_lead = _lead_with(queries, low, width)
            place = np.searchsorted(lead, query_lead)
            band = query_lead >> shift
            for offset in range(-NEIGHBOURS, NEIGHBOURS):
                at = np.clip(place + offset, 0, size - 1)
                inside = (place + offset >= 0) & (place + offset < size)
                rows = np.flatnonzero(inside & ((lead[at] >> shift) == band))
                self.comparisons += int(rows.size)
                entry = order[at[rows]]
                distance = np.bitwise_count(self._whole[entry] ^ queries[rows]).astype(np.int64)
                ok = (
                    (distance <= CANDIDATE_DISTANCE)
                    & (entry != owner[rows])
                    & (self._content[entry] != self._content[owner[rows]])
                )
                found.append(
                    np.stack([owner[rows][ok], entry[ok], hypothesis[rows][ok], distance[ok]], 1)
                )
        return np.concatenate(found, axis=0) if found else np.empty((0, 4), dtype=np.int64)


def _closest_per_owner(rows: NDArray[np.int64]) -> NDArray[np.int64]:
    """One row per ``(owner, entry)`` (the smallest distance, then hypothesis), and at most
    ``MAX_PARTNERS`` rows per owner (the closest)."""
    import numpy as np

    if not len(rows):
        return rows.reshape(0, 4)
    order = np.lexsort((rows[:, 2], rows[:, 3], rows[:, 1], rows[:, 0]))
    rows = rows[order]
    first = np.ones(len(rows), dtype=bool)
    first[1:] = (rows[1:, 0] != rows[:-1, 0]) | (rows[1:, 1] != rows[:-1, 1])
    rows = rows[first]
    rows = rows[np.lexsort((rows[:, 2], rows[:, 3], rows[:, 0]))]
    starts = np.flatnonzero(np.r_[True, rows[1:, 0] != rows[:-1, 0]])
    rank = np.arange(len(rows)) - np.repeat(starts, np.diff(np.r_[starts, len(rows)]))
    return rows[rank < MAX_PARTNERS]


def find_likenesses(
    pictures: Sequence[Picture], progress: Callable[[int, int], None] | None = None
) -> list[Likeness]:
    """Every confirmed likeness pair among ``pictures``, sorted by (original, copy);
    ``progress(done, total)`` after each candidate pair is judged (pixels compared)."""
    index = CandidateIndex(pictures)
    by_pair: dict[tuple[int, int], list[Candidate]] = defaultdict(list)
    for candidate in index.candidates():
        pair = (min(candidate.owner, candidate.entry), max(candidate.owner, candidate.entry))
        by_pair[pair].append(candidate)
    pixels = _PixelCache()
    found = []
    for done, pair in enumerate(sorted(by_pair), start=1):
        hypotheses = sorted(by_pair[pair], key=lambda c: (c.distance, c.hypothesis))[:3]
        likeness = confirm(pictures, hypotheses, pixels)
        if likeness is not None:
            found.append(likeness)
        if progress is not None:
            progress(done, len(by_pair))
    if progress is not None:
        progress(len(by_pair), len(by_pair))
    return sorted(found, key=lambda item: (item.original, item.copy))


class _PixelCache:
    """The last few decoded pictures (pairs are visited in order, so an image's pairs
    mostly follow each other)."""

    def __init__(self, size: int = 32) -> None:
        self._items: OrderedDict[str, Image.Image | None] = OrderedDict()
        self._size = size

    def get(self, path: str) -> Image.Image | None:
        if path in self._items:
            self._items.move_to_end(path)
            return self._items[path]
        image = _small_picture(path)
        self._items[path] = image
        if len(self._items) > self._size:
            self._items.popitem(last=False)
        return image


def _small_picture(path: str) -> Image.Image | None:
    """The picture in RGB, at most ``PIXEL_SIDE`` a side (JPEG decoded at reduced scale);
    None when it cannot be decoded."""
    from PIL import Image

    try:
        with Image.open(path) as image:
            if image.format == "JPEG":
                image.draft("RGB", (PIXEL_SIDE, PIXEL_SIDE))
            image.load()
            small = image.convert("RGB")
            small.thumbnail((PIXEL_SIDE, PIXEL_SIDE), Image.Resampling.BOX)
            return small
    except Exception:  # Pillow raises many types for bad data; a broken file matches nothing.
        return None


def confirm(
    pictures: Sequence[Picture], hypotheses: Iterable[Candidate], pixels: _PixelCache
) -> Likeness | None:
    """The likeness the best hypothesis shows on the pixels, or None when none reaches
    ``MIN_CORRELATION``."""
    best: tuple[float, Box, Candidate] | None = None
    for candidate in hypotheses:
        owner, entry = pictures[candidate.owner], pictures[candidate.entry]
        source, target = pixels.get(owner.path), pixels.get(entry.path)
        if source is None or target is None:
            return None
        score, box = _refined_match(source, target, candidate.hypothesis)
        if score >= MIN_CORRELATION and not _same_colours(source, target, candidate, box):
            continue
        if best is None or score > best[0]:
            best = (score, box, candidate)
    if best is None or best[0] < MIN_CORRELATION:
        return None
    score, box, candidate = best
    return _classify(pictures[candidate.owner], pictures[candidate.entry], candidate, box, score)


def _classify(
    owner: Picture, entry: Picture, candidate: Candidate, box: Box, score: float
) -> Likeness:
    first, second = sorted((owner, entry), key=lambda p: p.key)
    if candidate.hypothesis == 1:
        return Likeness(first.key, second.key, "flipped", candidate.distance, score)
    left, top, right, bottom = box
    if max(left, top, 1.0 - right, 1.0 - bottom) >= CROP_INSET:
        return Likeness(owner.key, entry.key, "cropped", candidate.distance, score)
    if (owner.width, owner.height) != (entry.width, entry.height):
        big, small = sorted((owner, entry), key=lambda p: (-p.width * p.height, p.key))
        return Likeness(big.key, small.key, "resized", candidate.distance, score)
    return Likeness(first.key, second.key, "re-encoded", candidate.distance, score)


def _refined_match(source: Image.Image, target: Image.Image, hypothesis: int) -> tuple[float, Box]:
    """The best correlation of ``target`` with a window of ``source`` near the hypothesis
    (moving each edge by 2 %, 1 %, then 0.5 % while that helps), and that window. A
    hypothesis far off (grayscale below ``HOPELESS``) is not refined: a window within a
    few percent of the right one already correlates well above that."""
    from PIL import ImageOps

    source = source.convert("L")
    if hypothesis == 1:
        source = ImageOps.mirror(source)
    box = WHOLE if hypothesis <= 1 else CROP_WINDOWS[hypothesis - 2]
    reference = _features(target.convert("L"), WHOLE)
    features = _features(source, box)
    score = _correlation(features, reference)
    if float((features[0] * reference[0]).sum()) < HOPELESS:
        return score, box
    for step in (0.02, 0.01, 0.005):
        improved = True
        while improved:
            improved = False
            for moved in _moves(box, step):
                moved_score = _correlation(_features(source, moved), reference)
                if moved_score > score + 1e-4:
                    score, box, improved = moved_score, moved, True
    return score, box


def _same_colours(source: Image.Image, target: Image.Image, candidate: Candidate, box: Box) -> bool:
    """Whether ``target``'s colours follow those of ``box`` of ``source`` with slope about 1
    and little shift in every channel."""
    import numpy as np
    from PIL import ImageOps

    if candidate.hypothesis == 1:
        source = ImageOps.mirror(source)
    ours = _pixels(source, box).reshape(-1, 3)
    theirs = _pixels(target, WHOLE).reshape(-1, 3)
    for channel in range(3):
        x, y = ours[:, channel], theirs[:, channel]
        if abs(float(x.mean() - y.mean())) > COLOUR_SHIFT:
            return False
        spread = float(x.var())
        if spread < 16.0 and float(y.var()) < 16.0:
            continue
        slope = float(np.cov(x, y, bias=True)[0, 1]) / max(spread, 1e-9)
        if abs(slope - 1.0) > COLOUR_SLOPE:
            return False
    return True


def _pixels(image: Image.Image, box: Box) -> NDArray[np.float64]:
    """``box`` of ``image`` resized to 64x64, as floats (channels last for RGB)."""
    import numpy as np
    from PIL import Image as PILImage

    width, height = image.size
    pixel_box = (box[0] * width, box[1] * height, box[2] * width, box[3] * height)
    small = image.resize((CONFIRM_SIDE, CONFIRM_SIDE), PILImage.Resampling.BILINEAR, box=pixel_box)
    return np.asarray(small, dtype=np.float64)


def _moves(box: Box, step: float) -> list[Box]:
    """``box`` with one edge moved by ``step`` either way, kept inside the picture and at
    least 70 % of it on each axis."""
    moves = []
    for edge in range(4):
        for sign in (-1.0, 1.0):
            values = list(box)
            values[edge] = min(1.0, max(0.0, values[edge] + sign * step))
            left, top, right, bottom = values
            if right - left >= 0.7 and bottom - top >= 0.7 and tuple(values) != box:
                moves.append((left, top, right, bottom))
    return moves


def _features(image: Image.Image, box: Box) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Grayscale and gradient magnitude of ``box`` of grayscale ``image`` at 64x64, each
    normalised to zero mean and unit length (all zeros when flat)."""
    import numpy as np

    values = _pixels(image, box)
    gradient = np.hypot(np.diff(values, axis=0)[:, :-1], np.diff(values, axis=1)[:-1, :])
    return _normalised(values), _normalised(gradient)


def _normalised(values: NDArray[np.float64]) -> NDArray[np.float64]:
    import numpy as np

    centred = values - values.mean()
    length = float(np.sqrt((centred * centred).sum()))
    return centred / length if length > 1e-9 else np.zeros_like(centred)


def _correlation(
    a: tuple[NDArray[np.float64], NDArray[np.float64]],
    b: tuple[NDArray[np.float64], NDArray[np.float64]],
) -> float:
    """The smaller of the grayscale and the gradient correlation."""
    return min(float((a[0] * b[0]).sum()), float((a[1] * b[1]).sum()))
