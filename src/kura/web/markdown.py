"""Markdown to HTML for plan.md, notes.md and cards: CommonMark with raw HTML escaped.

markdown-it-py (a Rich dependency) renders; ``html`` is off, so any ``<tag>`` in the file is
shown as text, and its link validator drops ``javascript:``, ``vbscript:`` and ``data:``
links other than images. Images and links to other origins (a scheme, ``//host`` or a
backslash) are rendered as their text: a note must not make the browser fetch from, or send
the reader to, another site. Headings move down ``shift`` levels (``#`` becomes ``<h3>`` by
default), so a document shown inside a page keeps the page's one ``<h1>``.
"""

from __future__ import annotations

from functools import cache
from urllib.parse import urlsplit

from markdown_it import MarkdownIt
from markdown_it.token import Token

__all__ = ["is_same_origin", "render_markdown"]


@cache
def _renderer() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")


def is_same_origin(url: str) -> bool:
    """A relative reference that stays on this site (no scheme, host or backslash)."""
    if "\\" in url or url.startswith("//") or any(ord(c) < 0x20 for c in url):
        return False
    parts = urlsplit(url)
    return not parts.scheme and not parts.netloc


def render_markdown(text: str, *, shift: int = 2) -> str:
    md = _renderer()
    env: dict[str, object] = {}
    tokens = md.parse(text, env)
    for token in tokens:
        if token.type in ("heading_open", "heading_close"):
            token.tag = f"h{min(6, int(token.tag[1]) + shift)}"
        if token.type == "inline" and token.children:
            token.children = _local_only(token.children)
    return str(md.renderer.render(tokens, md.options, env))


def _local_only(children: list[Token]) -> list[Token]:
    """Inline tokens with external images turned into their alt text and external links
    into their plain text."""
    kept: list[Token] = []
    dropped_links = 0
    for child in children:
        if child.type == "image" and not is_same_origin(str(child.attrGet("src") or "")):
            kept.append(Token("text", "", 0, content=child.content))
        elif child.type == "link_open" and not is_same_origin(str(child.attrGet("href") or "")):
            dropped_links += 1
        elif child.type == "link_close" and dropped_links and _closes_dropped(kept):
            dropped_links -= 1
        else:
            kept.append(child)
    return kept


def _closes_dropped(kept: list[Token]) -> bool:
    """Whether the next ``link_close`` belongs to a dropped link: links do not nest in
    CommonMark, so it does unless a kept ``link_open`` is still open."""
    depth = 0
    for token in kept:
        if token.type == "link_open":
            depth += 1
        elif token.type == "link_close":
            depth -= 1
    return depth == 0
