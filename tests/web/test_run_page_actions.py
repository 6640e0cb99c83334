"""The run page's one write besides ratings, cancelling a run, and what it says before a
launch: the same library calls as the CLI, behind the same origin and CSRF checks."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime

import pytest

from kura.execution.state import ACTIVE, read_state
from kura.runs.following import cancel
from tests.web.helpers import client, csrf_of
from tests.web.workspace_builder import WebWorkspace, approved_run, launch_slow_run


@pytest.fixture
def live(web: WebWorkspace) -> Iterator[str]:
    run_id = launch_slow_run(web, datetime(2026, 11, 30, 11, 0))
    try:
        yield run_id
    finally:
        cancel(web.workspace, run_id)


def _cancel_form(page: str) -> str:
    """The cancel form's opening tag."""
    match = re.search(r'<form[^>]*data-block="cancel"[^>]*>', page)
    assert match, "no cancel form on the page"
    return match.group(0)


def test_a_live_run_is_cancelled_from_its_page(web: WebWorkspace, live: str) -> None:
    site = client(web.workspace)
    page = site.get(f"/runs/{live}").text
    form = _cancel_form(page)
    assert f'action="/runs/{live}/cancel"' in form and "hidden" not in form
    answer = site.post(
        f"/runs/{live}/cancel",
        data={"csrf": csrf_of(page)},
        headers={"Origin": "http://127.0.0.1"},
        follow_redirects=False,
    )
    assert answer.status_code == 303
    assert answer.headers["location"] == f"/runs/{live}#progress"
    assert read_state(web.workspace.run_dir(live)).status == "cancelled"


def test_a_cancel_needs_the_csrf_token_and_the_same_origin(web: WebWorkspace, live: str) -> None:
    site = client(web.workspace)
    url = f"/runs/{live}/cancel"
    token = csrf_of(site.get(f"/runs/{live}").text)
    assert site.post(url, data={}).status_code == 403
    assert site.post(url, data={"csrf": "forged"}).status_code == 403
    for origin in ("http://evil.example", "null", "http://127.0.0.1:9999"):
        cross = site.post(url, data={"csrf": token}, headers={"Origin": origin})
        assert cross.status_code == 403, origin
    assert read_state(web.workspace.run_dir(live)).status in ACTIVE


def test_a_finished_run_offers_no_cancel(web: WebWorkspace) -> None:
    page = client(web.workspace).get(f"/runs/{web.finished}").text
    assert "hidden" in _cancel_form(page)


def test_an_approved_run_is_not_told_to_plan_and_approve_first(web: WebWorkspace) -> None:
    run_id = approved_run(web.workspace, datetime(2026, 11, 30, 12, 0), [])
    page = client(web.workspace).get(f"/runs/{run_id}").text
    assert "plan and approve it first" not in page
    assert f"kura run launch {run_id}</code> — approved and never launched: run it" in page


def test_a_drafted_run_is_told_to_plan_and_approve_first(web: WebWorkspace) -> None:
    page = client(web.workspace).get(f"/runs/{web.drafted}").text
    assert f"kura run plan {web.drafted}</code> — drafted: plan it, then approve it" in page
