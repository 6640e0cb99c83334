"""The site in a real browser (Playwright driving Debian's chromium) over a live server.

Skipped only when ``/usr/bin/chromium`` or the ``playwright`` package is missing. With
``KURA_SCREENSHOTS=1`` the tests also write the README's screenshots to docs/screenshots/.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from kura.execution.state import ACTIVE, read_state
from kura.runs.following import cancel
from kura.runs.new import create_run
from tests.web.dataset_builder import EDIT_CAPTION, add_edit_dataset
from tests.web.server import running_server
from tests.web.sweep_builder import ParetoWorkspace, SweepWorkspace
from tests.web.workspace_builder import BUNDLE, WebWorkspace, launch_slow_run

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"

pytestmark = pytest.mark.slow

if not CHROMIUM.exists():
    pytest.skip("no /usr/bin/chromium (apt-get install chromium)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")


@pytest.fixture(scope="module")
def live_run(web: WebWorkspace) -> Iterator[str]:
    run_id = launch_slow_run(web)
    try:
        yield run_id
    finally:
        cancel(web.workspace, run_id)


@pytest.fixture(scope="module")
def base_url(web: WebWorkspace) -> Iterator[str]:
    with running_server(web.workspace) as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    opened.on(
        "console", lambda message: errors.append(message.text) if message.type == "error" else None
    )
    opened.on(
        "response",
        lambda response: (
            errors.append(f"{response.status} {response.url}") if response.status >= 400 else None
        ),
    )
    yield opened
    context.close()
    assert errors == [], errors


def shoot(page: Any, name: str, *, height: int | None = None) -> None:
    """Write docs/screenshots/<name> when KURA_SCREENSHOTS=1: the whole page, or its top."""
    if os.environ.get("KURA_SCREENSHOTS") != "1":
        return
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    clip = {"x": 0, "y": 0, "width": 1280, "height": height} if height else None
    page.screenshot(path=str(SCREENSHOTS / name), full_page=True, clip=clip)


def test_run_list_links_to_each_run(page: Any, base_url: str, web: WebWorkspace) -> None:
    page.goto(base_url + "/")
    table = page.get_by_role("table")
    sync_api.expect(table.get_by_role("link", name=web.finished)).to_be_visible()
    sync_api.expect(table.get_by_role("link", name=web.drafted)).to_be_visible()
    sync_api.expect(table).to_contain_text("succeeded")
    shoot(page, "runs.png")
    table.get_by_role("link", name=web.finished).click()
    sync_api.expect(page.get_by_role("heading", level=1)).to_have_text(f"Run {web.finished}")


def test_progress_updates_live_without_a_reload(
    page: Any, base_url: str, web: WebWorkspace, live_run: str
) -> None:
    page.goto(f"{base_url}/runs/{live_run}")
    page.evaluate("window.__sameDocument = true")
    step = page.locator('[data-field="step"]')
    sync_api.expect(step).to_have_text(re.compile(r"^\d+ / \d+$"), timeout=20_000)
    first = step.text_content()
    sync_api.expect(step).not_to_have_text(first, timeout=20_000)
    sync_api.expect(page.locator('[data-field="status"]')).to_have_text("training")
    sync_api.expect(page.locator('[data-block="eta"]')).to_be_visible()
    sync_api.expect(page.locator('[data-chart="loss"] svg polyline').first).to_be_visible()
    sync_api.expect(page.locator('[data-field="log"]')).to_contain_text("steps:")
    assert page.evaluate("window.__sameDocument") is True
    page.wait_for_timeout(2500)  # one more poll, so the charts hold a few more points
    loss = page.locator('[data-chart="loss"] svg').bounding_box()
    assert loss is not None and loss["width"] > 900 and loss["height"] > 300, loss
    tick = page.locator('[data-chart="loss"] svg text.tick').first.bounding_box()
    assert tick is not None and tick["height"] < 20, tick  # wide, not a blown-up thumbnail
    shoot(page, "run.png", height=1500)
    cancel(web.workspace, live_run)
    sync_api.expect(page.locator('[data-field="status"]')).to_have_text("cancelled", timeout=20_000)
    sync_api.expect(page.locator('[data-block="eta"]')).to_be_hidden()
    assert page.evaluate("window.__sameDocument") is True


def test_a_run_is_cancelled_from_its_page(page: Any, base_url: str, web: WebWorkspace) -> None:
    run_id = launch_slow_run(web, datetime(2026, 11, 30, 11, 30))
    try:
        page.goto(f"{base_url}/runs/{run_id}")
        sync_api.expect(page.locator('[data-field="step"]')).to_have_text(
            re.compile(r"^\d+ / \d+$"), timeout=20_000
        )
        dialogs: list[str] = []
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.accept()))
        page.get_by_role("button", name="Cancel this run").click()
        page.wait_for_url(re.compile(rf"/runs/{run_id}#progress$"))
        assert dialogs and f"kura run resume {run_id}" in dialogs[0]
        sync_api.expect(page.locator('[data-field="status"]')).to_have_text("cancelled")
        sync_api.expect(page.get_by_role("button", name="Cancel this run")).to_be_hidden()
        assert read_state(web.workspace.run_dir(run_id)).status == "cancelled"
    finally:
        cancel(web.workspace, run_id)


def test_a_cancel_dismissed_in_the_dialog_leaves_the_run_training(
    page: Any, base_url: str, web: WebWorkspace
) -> None:
    run_id = launch_slow_run(web, datetime(2026, 11, 30, 11, 45))
    try:
        page.goto(f"{base_url}/runs/{run_id}")
        page.on("dialog", lambda dialog: dialog.dismiss())
        page.get_by_role("button", name="Cancel this run").click()
        page.wait_for_timeout(1000)
        assert read_state(web.workspace.run_dir(run_id)).status in ACTIVE
    finally:
        cancel(web.workspace, run_id)


def test_the_log_box_shows_the_newest_lines(page: Any, base_url: str, web: WebWorkspace) -> None:
    state = read_state(web.workspace.run_dir(web.finished))
    assert state.log_path is not None
    with open(state.log_path, "a") as log:
        log.writelines(f"later line {index:03d}\n" for index in range(120))
    page.goto(f"{base_url}/runs/{web.finished}")
    box = page.locator('pre.log[data-field="log"]')
    sync_api.expect(box).to_contain_text("later line 119")
    sizes = box.evaluate("b => [b.scrollTop, b.scrollHeight, b.clientHeight]")
    top, height, visible = sizes
    assert height > visible, f"the log fits its box ({sizes}); the test needs a longer one"
    assert top + visible >= height - 24, sizes


def test_run_list_shows_a_new_run_first_without_a_reload(
    page: Any, base_url: str, web: WebWorkspace
) -> None:
    page.goto(base_url + "/")
    page.evaluate("window.__sameDocument = true")
    created = create_run(
        web.workspace,
        datasets=["myaku"],
        base=BUNDLE,
        sets=["execution.executor=host"],
        now=datetime(2026, 12, 1, 9, 0),
    ).run_id
    first_link = page.locator("table.runs tbody tr th").first.get_by_role("link")
    sync_api.expect(first_link).to_have_text(created, timeout=15_000)
    assert page.evaluate("window.__sameDocument") is True


def test_gallery_compares_two_epochs_side_by_side(
    page: Any, base_url: str, web: WebWorkspace
) -> None:
    page.goto(f"{base_url}/runs/{web.finished}/samples")
    gallery = page.get_by_role("table")
    sync_api.expect(gallery.locator("img")).to_have_count(4)
    _expect_images_loaded(page)
    shoot(page, "samples.png")
    page.get_by_label("Compare").select_option(label="epoch 1")
    page.get_by_label("with").select_option(label="epoch 2")
    page.get_by_role("button", name="Compare side by side").click()
    page.wait_for_url(re.compile(r"/compare\?a=.*%3Ae1&b=.*%3Ae2$"))
    rows = page.locator("table.compare tbody tr")
    sync_api.expect(rows).to_have_count(2)
    first = rows.nth(0).locator("img")
    sync_api.expect(first).to_have_count(2)
    assert "_e000001_00_" in (first.nth(0).get_attribute("src") or "")
    assert "_e000002_00_" in (first.nth(1).get_attribute("src") or "")
    sync_api.expect(rows.nth(0)).to_contain_text("seed 42")
    _expect_images_loaded(page)
    shoot(page, "compare.png")


def test_a_rating_sent_from_the_browser_lands_in_notes_md(
    page: Any, base_url: str, web: WebWorkspace
) -> None:
    notes = web.workspace.run_dir(web.finished) / "notes.md"
    before = notes.read_text() if notes.exists() else ""
    page.goto(f"{base_url}/runs/{web.finished}")
    page.get_by_label("Rating", exact=True).select_option("5")
    page.get_by_label("Notes", exact=True).fill("crisp at epoch 2\nkeep this recipe")
    page.get_by_role("button", name="Record in notes.md").click()
    page.wait_for_url(re.compile(rf"/runs/{web.finished}#notes$"))
    text = notes.read_text()
    assert text.startswith(before.rstrip("\n"))
    assert "- rating: 5/5" in text
    assert "  > crisp at epoch 2\n  > keep this recipe\n" in text
    sync_api.expect(page.locator("article.notes")).to_contain_text("rating: 5/5")


@pytest.fixture(scope="module")
def edits(web: WebWorkspace, tmp_path_factory: pytest.TempPathFactory) -> str:
    return add_edit_dataset(web.workspace, tmp_path_factory.mktemp("edits"))


def test_dataset_page_shows_captions_problems_and_controls_beside_targets(
    page: Any, base_url: str, edits: str
) -> None:
    page.goto(base_url + "/")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Datasets").click()
    page.get_by_role("link", name=edits, exact=True).click()
    sync_api.expect(page.get_by_role("heading", level=1)).to_have_text(f"Dataset {edits}")
    fox = page.locator('tr[data-file="fox.png"]')
    sync_api.expect(fox.locator('[data-field="caption"]')).to_have_text(EDIT_CAPTION)
    target = fox.get_by_role("img", name="target fox.png")
    control = fox.get_by_role("img", name="control fox.png")
    sync_api.expect(target).to_be_visible()
    sync_api.expect(control).to_be_visible()
    target_box, control_box = target.bounding_box(), control.bounding_box()
    assert target_box is not None and control_box is not None
    assert control_box["x"] > target_box["x"] + target_box["width"] - 1  # beside, on its right
    assert abs(control_box["y"] - target_box["y"]) < 40
    uncaptioned = page.locator('tr[data-file="uncaptioned.png"]')
    sync_api.expect(uncaptioned.locator('[data-code="missing-caption"]')).to_contain_text(
        "missing-caption"
    )
    sync_api.expect(fox.locator("[data-code]")).to_have_count(0)
    _expect_images_loaded(page)
    shoot(page, "dataset.png")


def test_knowledge_page_shows_cards_and_regrets(
    page: Any, base_url: str, web: WebWorkspace
) -> None:
    page.goto(base_url + "/knowledge")
    heading = page.get_by_role("heading", name="flux2 on musubi-tuner", exact=True)
    sync_api.expect(heading).to_be_visible()
    sync_api.expect(page.get_by_text("check skin texture at epoch 4")).to_be_visible()
    shoot(page, "knowledge.png")


@pytest.fixture(scope="module")
def sweep_url(swept: SweepWorkspace) -> Iterator[str]:
    with running_server(swept.workspace) as url:
        yield url


def test_sweep_page_draws_its_charts_and_links_its_trials(
    page: Any, sweep_url: str, swept: SweepWorkspace
) -> None:
    page.goto(sweep_url + "/sweeps")
    page.get_by_role("link", name=swept.sweep, exact=True).click()
    sync_api.expect(page.get_by_role("heading", level=1)).to_have_text(f"Sweep {swept.sweep}")
    parallel = page.locator('[data-chart="parallel"] svg')
    sync_api.expect(parallel).to_be_visible()
    box = parallel.bounding_box()
    assert box is not None and box["width"] > 400 and box["height"] > 100, box
    sync_api.expect(parallel.locator("polyline.pc-best")).to_be_visible()
    sync_api.expect(page.locator('[data-chart="objective"] svg circle').first).to_be_visible()
    sync_api.expect(page.locator('[data-chart="importance"] svg rect.bar').first).to_be_visible()
    sync_api.expect(page.locator('[data-field="promote"]')).to_have_text(
        f"kura sweep promote {swept.sweep}"
    )
    shoot(page, "sweep.png", height=1450)
    page.locator("table.trials").get_by_role("link").first.click()
    sync_api.expect(page.get_by_role("heading", level=1)).to_have_text(re.compile(r"^Run sw-"))


@pytest.fixture(scope="module")
def pareto_url(pareto_swept: ParetoWorkspace) -> Iterator[str]:
    with running_server(pareto_swept.workspace) as url:
        yield url


def test_pareto_sweep_page_draws_its_front(
    page: Any, pareto_url: str, pareto_swept: ParetoWorkspace
) -> None:
    from kura.sweep.report import analyse_sweep

    front = [
        r.number
        for r in analyse_sweep(
            pareto_swept.workspace, pareto_swept.sweep, read_only=True
        ).pareto_front
    ]
    page.goto(pareto_url + "/sweeps")
    sync_api.expect(page.locator(f'tr[data-sweep="{pareto_swept.sweep}"]')).to_contain_text(
        f"Pareto front: {len(front)} trials"
    )
    page.get_by_role("link", name=pareto_swept.sweep, exact=True).click()
    sync_api.expect(page.locator('[data-field="mode"]')).to_have_text("pareto")
    scatter = page.locator('[data-chart="objective"] svg')
    sync_api.expect(scatter).to_be_visible()
    box = scatter.bounding_box()
    assert box is not None and box["width"] > 300 and box["height"] > 100, box
    sync_api.expect(scatter.locator("circle.front-dot")).to_have_count(len(front))
    sync_api.expect(scatter.locator("polyline.pareto-front")).to_be_visible()
    sync_api.expect(page.locator("table.front tbody tr")).to_have_count(len(front))
    sync_api.expect(
        page.locator('[data-chart="importance-loss"] svg rect.bar').first
    ).to_be_visible()
    sync_api.expect(
        page.locator('[data-chart="parallel"] svg polyline.pc-best').first
    ).to_be_visible()
    sync_api.expect(page.locator(f'[data-field="promote-{front[0]}"]')).to_have_text(
        f"kura sweep promote {pareto_swept.sweep} --trial {front[0]}"
    )
    sync_api.expect(page.locator("table.trials")).to_contain_text("has no score for this trial")
    shoot(page, "sweep-pareto.png", height=1500)
    page.locator("table.front").get_by_role("link").first.click()
    sync_api.expect(page.get_by_role("heading", level=1)).to_have_text(re.compile(r"^Run sw-"))


def _expect_images_loaded(page: Any, timeout: float = 10.0) -> None:
    """Poll from Python: `wait_for_function` evaluates a string inside the page, which the
    page's Content-Security-Policy (no unsafe-eval) refuses whenever it has to poll."""
    import time

    check = "Array.from(document.images).every(i => i.complete && i.naturalWidth > 0)"
    deadline = time.monotonic() + timeout
    while not page.evaluate(check):
        assert time.monotonic() < deadline, "images did not load"
        page.wait_for_timeout(100)
