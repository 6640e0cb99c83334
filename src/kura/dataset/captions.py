"""Caption files: encoding checks, length statistics and trigger-word evidence.

Musubi reads a caption as ``open(path, encoding="utf-8").read().strip()``
(``src/musubi_tuner/dataset/datasources.py``, ``get_caption``): a file that is not UTF-8
raises ``UnicodeDecodeError`` during text-encoder caching, and a UTF-8 byte-order mark stays
in the caption as an invisible first character (``str.strip`` keeps U+FEFF).
"""

from __future__ import annotations

import re
import statistics
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from kura.dataset.reading import MAX_CAPTION_BYTES, NotReadable, open_regular
from kura.dataset.similarity import sha256_hex

__all__ = [
    "TOKENS_PER_WORD",
    "Trigger",
    "caption_stats",
    "find_trigger",
    "read_caption_facts",
    "words",
]

TOKENS_PER_WORD = 1.3
"""Heuristic: T5/SentencePiece-style tokenizers spend about 1.3 tokens per English word."""

_WORD_RE = re.compile(r"[^\W_][\w'-]*", re.UNICODE)
_BOM = b"\xef\xbb\xbf"
# Words that open captions without naming anything: skipped when looking for a trigger.
FILLER = frozenset(
    {
        *("a", "an", "the", "this", "that", "these", "those", "of", "in", "on", "at", "with"),
        *("and", "or", "to", "for", "by", "from", "is", "are", "photo", "photograph"),
        *("picture", "image", "illustration", "painting", "drawing", "render", "rendering"),
        *("shot", "closeup", "close-up", "portrait", "style", "art", "artwork"),
    }
)
# Common subjects: a caption set that all start with "woman" has no trigger word.
GENERIC = frozenset(
    {
        *("man", "woman", "men", "women", "girl", "boy", "girls", "boys", "person", "people"),
        *("child", "children", "baby", "cat", "dog", "car", "house", "building", "room"),
        *("city", "street", "landscape", "face", "body", "character", "anime", "cartoon"),
    }
)
LEAD_SHARE = 0.6
PRESENCE_SHARE = 0.8
MIN_CAPTIONS = 3


def read_caption_facts(path: Path) -> dict[str, Any]:
    """Encoding and text of one caption file.

    ``encoding`` is ``utf-8``, ``utf-8-bom``, ``latin-1`` (not UTF-8 but readable as
    Latin-1/Windows-1252 text), ``binary`` (not text at all) or ``unreadable``."""
    try:
        with open_regular(path, limit=MAX_CAPTION_BYTES, what="caption") as (handle, _):
            data = handle.read(MAX_CAPTION_BYTES + 1)
    except NotReadable as exc:
        return _unreadable(str(exc))
    except OSError as exc:
        return _unreadable(f"cannot read: {exc.strerror or exc}")
    if len(data) > MAX_CAPTION_BYTES:
        return _unreadable("cannot read: it grew past the caption limit while read")
    encoding, text = decode_caption(data)
    return {
        "kind": "caption",
        "bytes": len(data),
        "sha256": sha256_hex(data),
        "encoding": encoding,
        "text": text,
    }


def _unreadable(error: str) -> dict[str, Any]:
    return {
        "kind": "caption",
        "bytes": 0,
        "sha256": None,
        "encoding": "unreadable",
        "text": None,
        "error": error,
    }


def decode_caption(data: bytes) -> tuple[str, str | None]:
    """``(encoding, stripped text)``; text is ``None`` when the bytes are not text."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        latin = data.decode("latin-1")
        if _looks_like_text(latin):
            return "latin-1", latin.strip()
        return "binary", None
    if data.startswith(_BOM):
        return "utf-8-bom", text[1:].strip()
    return "utf-8", text.strip()


def _looks_like_text(text: str) -> bool:
    for ch in text:
        code = ord(ch)
        if ch in "\t\n\r":
            continue
        if code < 0x20 or 0x7F <= code < 0xA0:
            return False
    return True


@lru_cache(maxsize=65536)
def words(text: str) -> tuple[str, ...]:
    """Lower-cased words of a caption (letters, digits, inner apostrophes and hyphens).

    Cached: statistics, trigger search and questions all tokenise the same captions."""
    return tuple(_WORD_RE.findall(text.lower()))


@dataclass(frozen=True, slots=True)
class Trigger:
    """The trigger word, how many captions carry it, and which do not.

    ``missing`` lists the caption files without it (in any case). ``case_variants`` counts
    each spelling when captions write it differently (``Mochi`` and ``mochi``): a
    case-sensitive text encoder sees different tokens, so the LoRA learns two words."""

    word: str
    count: int
    total: int
    leading: int
    missing: tuple[str, ...] = ()
    case_variants: tuple[tuple[str, int], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "word": self.word,
            "count": self.count,
            "total": self.total,
            "missing": list(self.missing),
        }
        if len(self.case_variants) > 1:
            document["case_variants"] = dict(self.case_variants)
        return document


def find_trigger(texts: Mapping[str, str]) -> Trigger | None:
    """The caption set's trigger word, or ``None`` when no word clearly is one.

    Rule: take each non-empty caption's first word after filler (articles, "photo of" and
    the like). The most frequent such word is the trigger when it opens at least 60% of the
    captions, occurs anywhere in at least 80% of them, is not a generic subject word
    ("woman", "dog"…) and there are at least three captions. ``count`` is the number of
    captions containing it, ``total`` the number of non-empty captions."""
    tokenised = [words(t) for t in texts.values() if t]
    total = len(tokenised)
    if total < MIN_CAPTIONS:
        return None
    leads = Counter(lead for tokens in tokenised if (lead := _lead_word(tokens)))
    if not leads:
        return None
    word, leading = leads.most_common(1)[0]
    if word in GENERIC or leading < LEAD_SHARE * total:
        return None
    count = sum(1 for tokens in tokenised if word in tokens)
    if count < PRESENCE_SHARE * total:
        return None
    missing = tuple(
        sorted(name for name, text in texts.items() if text and word not in words(text))
    )
    spelled = re.compile(rf"(?<![\w'-]){re.escape(word)}(?![\w'-])", re.IGNORECASE)
    variants = Counter(m.group(0) for text in texts.values() for m in spelled.finditer(text))
    return Trigger(
        word=word,
        count=count,
        total=total,
        leading=leading,
        missing=missing,
        case_variants=tuple(sorted(variants.items(), key=lambda kv: (-kv[1], kv[0]))),
    )


def _lead_word(tokens: tuple[str, ...]) -> str | None:
    for token in tokens:
        if token not in FILLER:
            return token
    return None


def caption_stats(texts: Mapping[str, str]) -> dict[str, Any]:
    """Length statistics, token estimates, leading words and duplicate captions."""
    counts = [len(text.split()) for text in texts.values() if text]
    tokens = [round(n * TOKENS_PER_WORD) for n in counts]
    lead = Counter(tokens_[0] for t in texts.values() if t and (tokens_ := words(t)))
    return {
        "words": _summary(counts),
        "tokens_estimate": {
            **_summary(tokens),
            "heuristic": f"{TOKENS_PER_WORD} tokens per word (T5/SentencePiece-style)",
            "over_77": sum(1 for n in tokens if n > 77),
            "over_512": sum(1 for n in tokens if n > 512),
        },
        "leading_words": [{"word": w, "count": n} for w, n in lead.most_common(5)],
        "duplicate_groups": duplicate_captions(texts),
    }


def duplicate_captions(texts: Mapping[str, str]) -> list[list[str]]:
    """Groups of caption files (two or more) with the same non-empty text."""
    by_text: dict[str, list[str]] = defaultdict(list)
    for rel, text in texts.items():
        if text:
            by_text[" ".join(text.lower().split())].append(rel)
    return sorted(sorted(g) for g in by_text.values() if len(g) > 1)


def _summary(values: list[int]) -> dict[str, Any]:
    if not values:
        return {"min": None, "median": None, "max": None}
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}
