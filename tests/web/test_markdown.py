"""Rendered notes and plans never load from, or link to, another origin."""

from __future__ import annotations

import pytest

from kura.web.markdown import render_markdown


@pytest.mark.parametrize(
    "source",
    [
        "![tracker](https://evil.example/pixel.png)",
        "![tracker](//evil.example/pixel.png)",
        "![tracker](http://127.0.0.1:9/x.png)",
        "[click](https://evil.example/)",
        "[mail](mailto:a@evil.example)",
        "<https://evil.example/auto>",
    ],
)
def test_external_images_and_links_render_as_text(source: str) -> None:
    html = render_markdown(source)
    assert "<img" not in html and "<a " not in html
    assert "evil.example" not in html or "href" not in html


def test_alt_and_link_text_are_kept() -> None:
    html = render_markdown(
        "see ![the chart](https://x.example/c.png) and [docs](https://x.example)"
    )
    assert html == "<p>see the chart and docs</p>\n"


def test_same_origin_images_and_links_stay() -> None:
    html = render_markdown("![s](/files/runs/r/output/sample/a.png) [run](/runs/r) [top](#notes)")
    assert '<img src="/files/runs/r/output/sample/a.png" alt="s" />' in html
    assert '<a href="/runs/r">run</a>' in html and '<a href="#notes">top</a>' in html


def test_headings_still_shift() -> None:
    assert render_markdown("# Title") == "<h3>Title</h3>\n"
