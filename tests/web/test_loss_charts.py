"""The run page's loss chart for every trainer: AI-Toolkit's ``loss_log.db`` and
KohakuMoss's ``metrics.jsonl`` (Musubi's TensorBoard files: test_attempts_and_live.py), one
smoothed line per attempt over the raw loss, the learning rate, and ``kura run status``'s
loss EMA equal to the chart's last smoothed point."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest

from kura.execution.summary import ema
from kura.runs.new import create_run
from kura.workspace import Workspace
from tests.backends.loss_files import write_attempts, write_loss_log, write_metrics
from tests.builders import character_workspace
from tests.web.helpers import client

STARTED = time.time() - 7200
RESUMED = STARTED + 3600
FIRST = [(s, 1.0 / s, STARTED + 10 * s) for s in range(1, 7)]
SECOND = [(s, 0.4 / s, RESUMED + 10 * s) for s in range(5, 10)]


@dataclass
class Runs:
    workspace: Workspace
    aitk: str
    moss: str


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    """An AI-Toolkit run and a KohakuMoss run, each resumed once from its step-4 checkpoint."""
    root = tmp_path_factory.mktemp("charts")
    workspace = character_workspace(root)
    sets = ["execution.executor=host"]
    aitk = create_run(
        workspace,
        datasets=["myaku"],
        base="chroma1-base",
        sets=sets,
        now=datetime(2026, 12, 1, 9, 0),
    ).run_id
    moss = create_run(
        workspace,
        datasets=["myaku"],
        base="moss-image-base",
        backend="kohakumoss",
        sets=[*sets, f"model.root={root / 'moss'}"],
        now=datetime(2026, 12, 1, 10, 0),
    ).run_id
    for run_id in (aitk, moss):
        write_attempts(workspace.run_dir(run_id), [STARTED, RESUMED])
    db = workspace.run_dir(aitk) / "output" / "loss_log.db"
    write_loss_log(db, FIRST)
    write_loss_log(db, SECOND)
    out = workspace.run_dir(moss) / "output" / moss
    write_metrics(out, FIRST)
    write_metrics(out, SECOND, resume_at=4)
    return Runs(workspace, aitk, moss)


def _chart(html: str, name: str) -> str:
    match = re.search(rf'<div data-chart="{name}">(.*?)</div>', html, re.S)
    assert match, f"no {name} chart"
    return match.group(1)


@pytest.mark.parametrize(
    ("which", "metric", "lr", "first_steps"),
    [("aitk", "loss/loss", "learning_rate", 4), ("moss", "loss", "lr", 6)],
)
def test_the_loss_chart_draws_each_attempt_of_every_trainer(
    runs: Runs, which: str, metric: str, lr: str, first_steps: int
) -> None:
    run_id = getattr(runs, which)
    text = client(runs.workspace).get(f"/runs/{run_id}").text
    loss = _chart(text, "loss")
    assert f"Training loss ({metric}) by step" in loss
    assert loss.count('<polyline class="series ') == 2
    assert loss.count('<polyline class="raw ') == 2
    assert "attempt 1 (EMA)" in loss and "attempt 2 (EMA)" in loss
    # attempt 1's line ends where its rows do: AI-Toolkit deleted steps 5-6 on resume,
    # KohakuMoss moved them to metrics.1.jsonl (still attempt 1's)
    first = re.findall(r'<polyline class="series series-0" points="([^"]+)"', loss)[0]
    assert len(first.split()) == first_steps
    rates = _chart(text, "lr")
    assert "Learning rate by step (attempt 2)" in rates and f">{lr}</text>" in rates


@pytest.mark.parametrize(("which", "metric"), [("aitk", "loss/loss"), ("moss", "loss")])
def test_status_reports_the_current_attempts_loss(runs: Runs, which: str, metric: str) -> None:
    run_id = getattr(runs, which)
    doc = client(runs.workspace).get(f"/api/runs/{run_id}/status").json()
    assert doc["scalars"][metric] == [9, pytest.approx(0.4 / 9)]
    expected = ema(loss for _, loss, _ in SECOND)
    assert doc["progress"]["loss_ema"] == pytest.approx(expected)
    assert doc["charts"]["loss"].count("<polyline") == 4


def test_a_run_without_loss_files_says_so(runs: Runs, tmp_path: Path) -> None:
    run_id = create_run(
        runs.workspace,
        datasets=["myaku"],
        base="chroma1-base",
        sets=["execution.executor=host"],
        now=datetime(2026, 12, 1, 11, 0),
    ).run_id
    write_attempts(runs.workspace.run_dir(run_id), [STARTED])
    text = client(runs.workspace).get(f"/runs/{run_id}").text
    assert "No loss logged yet." in text and "No learning rate logged yet." in text


@pytest.mark.slow
def test_a_browser_draws_an_ai_toolkit_runs_loss_lines(runs: Runs) -> None:
    """The page as a person sees it (Playwright driving Debian's chromium): both attempts'
    lines are drawn, with their legends, and the page has no script error."""
    from tests.web.test_browser import CHROMIUM, CHROMIUM_ARGS

    if not CHROMIUM.exists():
        pytest.skip("no /usr/bin/chromium (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
    from tests.web.server import running_server

    errors: list[str] = []
    with running_server(runs.workspace) as url, sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(f"{url}/runs/{runs.aitk}")
        lines = page.locator('[data-chart="loss"] svg polyline.series')
        sync_api.expect(lines).to_have_count(2)
        sync_api.expect(lines.first).to_be_visible()
        legend = page.locator('[data-chart="loss"] svg text.legend')
        sync_api.expect(legend).to_have_text(["attempt 1 (EMA)", "attempt 2 (EMA)"])
        browser.close()
    assert errors == []
