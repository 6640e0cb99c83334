"""Markdown to HTML for plan.md, notes.md and cards: CommonMark with raw HTML escaped.

markdown-it-py (a Rich dependency) renders; ``html`` is off, so any ``<tag>`` in the file is
shown as text, and its link validator drops ``javascript:``, ``vbscript:`` and ``data:``
links other than images. Headings move down ``shift`` levels (``#`` becomes ``<h3>`` by
default), so a document shown inside a page keeps the page's one ``<h1>``.
"""

from __future__ import annotations

from functools import cache

from markdown_it import MarkdownIt

__all__ = ["render_markdown"]


@cache
def _renderer() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")


def render_markdown(text: str, *, shift: int = 2) -> str:
    md = _renderer()
    env: dict[str, object] = {}
    tokens = md.parse(text, env)
    for token in tokens:
        if token.type in ("heading_open", "heading_close"):
            token.tag = f"h{min(6, int(token.tag[1]) + shift)}"
    return str(md.renderer.render(tokens, md.options, env))
