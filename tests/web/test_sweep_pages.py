"""The sweep pages over a real journal-file sweep (the toy trainer run by the sweep worker):
every number is `kura sweep report`'s, the charts are inline SVG, reading writes nothing,
hostile values are escaped, and an unreachable or missing study is a clear error."""

from __future__ import annotations

import html
import json
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import markupsafe
import pytest

from kura.sweep.report import Importance, analyse_sweep, sweep_report
from kura.sweep.space import CheckedAxis
from kura.web.sweep_charts import PcAxis, importance_bars, parallel_coordinates, pc_axes
from kura.workspace import Workspace
from tests.web.helpers import client, snapshot
from tests.web.sweep_builder import SweepWorkspace


def _copy(swept: SweepWorkspace, tmp_path: Path) -> Workspace:
    target = tmp_path / "copy"
    shutil.copytree(swept.workspace.root, target, symlinks=True)
    return Workspace(target)


def _rows_of(text: str) -> dict[int, str]:
    body = text[text.index('<table class="trials">') :]
    body = body[: body.index("</table>")]
    return {
        int(m.group(1)): m.group(0)
        for m in re.finditer(r'<tr data-trial="(\d+)".*?</tr>', body, re.DOTALL)
    }


def _field(text: str, name: str) -> str:
    match = re.search(rf'data-field="{re.escape(name)}">([^<]*)<', text)
    assert match, f"no {name} on the page"
    return html.unescape(match.group(1))


def test_reading_the_sweep_pages_writes_nothing(swept: SweepWorkspace) -> None:
    before = snapshot(swept.workspace.root)
    site = client(swept.workspace)
    for url in ("/sweeps", f"/sweeps/{swept.sweep}", f"/sweeps/{swept.empty}"):
        assert site.get(url).status_code == 200, url
    assert snapshot(swept.workspace.root) == before


def test_the_sweep_list_shows_each_sweep_newest_first(swept: SweepWorkspace) -> None:
    page = client(swept.workspace).get("/sweeps")
    assert page.status_code == 200
    text = page.text
    assert '<a href="/sweeps">Sweeps</a>' in text  # in the nav
    assert text.index(f'data-sweep="{swept.empty}"') < text.index(f'data-sweep="{swept.sweep}"')
    row = text[text.index(f'data-sweep="{swept.sweep}"') :]
    row = row[: row.index("</tr>")]
    analysis = analyse_sweep(swept.workspace, swept.sweep)
    counts = analysis.counts
    assert counts["complete"] >= 3 and counts.get("infeasible", 0) >= 1, counts
    for status in ("complete", "running", "pruned", "infeasible", "failed"):
        assert f'data-count="{status}">{counts.get(status, 0)}<' in row, status
    assert f'href="/sweeps/{swept.sweep}"' in row
    assert f'href="/runs/{swept.base_run}"' in row
    assert "toy-trainer" in row and "journal file" in row
    assert analysis.best is not None and analysis.best.objective is not None
    assert f">{analysis.best.objective:.4g}<" in row
    empty = text[text.index(f'data-sweep="{swept.empty}"') :]
    assert 'data-count="complete">0<' in empty[: empty.index("</tr>")]


def test_the_sweep_page_shows_every_trial_as_the_report_does(swept: SweepWorkspace) -> None:
    report = sweep_report(swept.workspace, swept.sweep)
    text = client(swept.workspace).get(f"/sweeps/{swept.sweep}").text
    rows = _rows_of(text)
    assert sorted(rows) == [r["number"] for r in report["rows"]]
    for expected in report["rows"]:
        shown = rows[expected["number"]]
        assert f">{expected['status']}</span>" in shown
        value = expected["objective"]
        objective = f">{value:.4g}<" if value is not None else ">–<"
        assert f'data-field="objective"{objective}' in shown
        assert f'<a href="/runs/{expected["run"]}">' in shown
        assert expected["gpu_class"] in shown and html.escape(expected["worker"]) in shown
        for key in expected["params"]:
            assert f"<code>{key}</code>" in shown
        if expected["status"] == "infeasible":
            assert html.escape(expected["reason"]) in shown
            assert "does not fit h100-pcie" in shown
    # the space and the objective as recorded
    assert _field(text, "metric") == report["objective"]["metric"] == "heldout_loss"
    assert _field(text, "judge") == report["objective"]["judge"]
    assert _field(text, "judge_weight") == str(report["objective"]["judge_weight"])
    for axis in ("training.learning_rate", "training.network.rank", "training.optimizer"):
        assert f'<tr data-axis="{axis}">' in text


def test_the_best_trial_and_its_interval_are_the_reports(swept: SweepWorkspace) -> None:
    report = sweep_report(swept.workspace, swept.sweep)
    best, interval = report["best"], report["best_interval"]
    assert best is not None and interval is not None  # three judged prompts: an interval
    assert interval[0] <= best["objective"] <= interval[1]
    assert "over 3 measurements" in report["best_interval_note"]
    text = client(swept.workspace).get(f"/sweeps/{swept.sweep}").text
    assert _field(text, "best-number") == str(best["number"])
    assert _field(text, "best-objective") == f"{best['objective']:.6g}"
    assert _field(text, "best-interval") == f"{interval[0]:.6g} – {interval[1]:.6g}"
    assert _field(text, "best-interval-note") == report["best_interval_note"]
    assert f'<tr data-trial="{best["number"]}" class="best">' in text


def test_the_best_interval_is_of_the_objective_over_judged_prompts(
    swept: SweepWorkspace,
) -> None:
    from kura.sweep.report import bootstrap_ci

    analysis = analyse_sweep(swept.workspace, swept.sweep)
    best = analysis.best
    assert best is not None and best.loss is not None and len(best.judge_scores) == 3
    w = analysis.space.spec.objective.judge_weight
    per_prompt = [(1 - w) * best.loss + w * (1 - s) for s in best.judge_scores]
    assert sum(per_prompt) / 3 == pytest.approx(best.objective)
    assert analysis.best_interval == bootstrap_ci(per_prompt)


def test_the_promote_command_is_the_clis_and_writes_the_card(
    swept: SweepWorkspace, tmp_path: Path
) -> None:
    from kura.cli.main import main

    copy = _copy(swept, tmp_path)
    text = client(copy).get(f"/sweeps/{swept.sweep}").text
    command = _field(text, "promote")
    assert command == f"kura sweep promote {swept.sweep}"
    argv = shlex.split(command)
    assert main(["-w", str(copy.root), *argv[1:]]) == 0
    card = (copy.knowledge_dir / "toy-trainer" / "zimage.md").read_text()
    assert f"source: sweep {swept.sweep}" in card


def test_importance_bars_are_the_reports(swept: SweepWorkspace) -> None:
    report = sweep_report(swept.workspace, swept.sweep)
    assert report["importance_note"] == "PED-ANOVA (Optuna), normalised"
    text = client(swept.workspace).get(f"/sweeps/{swept.sweep}").text
    chart = text[text.index('data-chart="importance"') :]
    chart = chart[: chart.index("</svg>")]
    bars = dict(re.findall(r'class="bar[^"]*" data-param="([^"]+)" data-value="([^"]+)"', chart))
    assert set(bars) == set(report["importance"])
    for key, value in report["importance"].items():
        assert float(bars[key]) == pytest.approx(value, rel=1e-5)
    assert "PED-ANOVA (Optuna), normalised" in text


def test_a_sweep_without_trials_says_why_there_is_no_importance(swept: SweepWorkspace) -> None:
    page = client(swept.workspace).get(f"/sweeps/{swept.empty}")
    assert page.status_code == 200
    text = page.text
    assert "0 completed trial(s): parameter importance needs at least 3" in text
    assert "No trial has an objective yet" in text
    assert "No complete trial yet." in text
    assert "<polyline" not in text


def test_parallel_coordinates_draw_one_line_per_complete_trial(swept: SweepWorkspace) -> None:
    report = sweep_report(swept.workspace, swept.sweep)
    complete = [r for r in report["rows"] if r["state"] == "COMPLETE"]
    text = client(swept.workspace).get(f"/sweeps/{swept.sweep}").text
    chart = text[text.index('data-chart="parallel"') :]
    chart = chart[: chart.index("</svg>")]
    assert chart.count("<svg") == 1 and "<script" not in chart
    lines = re.findall(
        r'<polyline class="pc-trial[^"]*" data-trial="(\d+)" points="([^"]+)"', chart
    )
    assert sorted(int(n) for n, _ in lines) == sorted(r["number"] for r in complete)
    assert all(len(points.split()) == 4 for _, points in lines)  # 3 params + the objective
    scales = dict(re.findall(r'class="pc-axis" data-axis="([^"]+)" data-scale="(\w+)"', chart))
    assert scales == {
        "training.learning_rate": "log",
        "training.network.rank": "categorical",
        "training.optimizer": "categorical",
        "objective": "linear",
    }
    assert f'class="pc-trial pc-best" data-trial="{report["best"]["number"]}"' in chart
    assert ">learning_rate (log)<" in chart and ">adamw<" in chart and ">sgd<" in chart


def test_a_log_axis_places_values_by_their_logarithm() -> None:
    axis = PcAxis("lr", "log", 1e-5, 1e-2)
    assert axis.position(1e-4) == pytest.approx(1 / 3)
    assert axis.position(1e-2) == pytest.approx(1.0)
    assert [label for _, label in axis.ticks()] == ["1.00e-05", "1.00e-04", "0.001", "0.01"]
    choice = PcAxis("opt", "categorical", categories=("adamw", "sgd"))
    assert choice.position("adamw") == 0.25 and choice.position("sgd") == 0.75
    assert choice.position("lion") is None


def test_an_axis_widens_to_a_value_outside_the_space() -> None:
    from kura.sweep.report import TrialRow

    lr = CheckedAxis("training.learning_rate", "float", 1e-4, 1e-2, True, None, (), "t")
    opt = CheckedAxis("training.optimizer", "choice", None, None, False, None, ("adamw",), "t")
    row = TrialRow(
        number=0,
        state="COMPLETE",
        status="complete",
        params={"training.learning_rate": 1e-5, "training.optimizer": "lion"},
        source="baseline",
        objective=0.5,
        told=0.5,
        loss=0.5,
        judge_scores=[],
        gpu_class=None,
        host=None,
        worker=None,
        run=None,
        estimate=None,
        stopped=None,
        reason=None,
        requeued_from=None,
        gpu_hours=None,
    )
    axes = pc_axes([lr, opt], [row])
    assert axes[0].low == 1e-5 and axes[0].high == 1e-2
    assert axes[1].categories == ("adamw", "lion")
    svg = parallel_coordinates([lr, opt], [row], best=0)
    assert svg.count("<polyline") == 1 and 'data-trial="0"' in svg


def test_importance_not_computed_is_text_not_a_chart() -> None:
    shown = importance_bars(Importance({}, "2 completed trial(s): <needs> 3"))
    assert shown == '<p class="empty">2 completed trial(s): &lt;needs&gt; 3</p>'


def _add_hostile_trial(workspace: Workspace, sweep_id: str) -> dict[str, str]:
    import optuna

    from kura.backends.registry import get_backend
    from kura.sweep.envelope import checked_space
    from kura.sweep.records import load_sweep
    from kura.sweep.study import load_study

    sweep = load_sweep(workspace, sweep_id)
    space = checked_space(workspace, sweep, get_backend(sweep.backend))
    hostile = {
        "run": '"><script>alert("run")</script>',
        "worker": "<img src=x onerror=alert(1)>",
        "reason": "</td><script>alert('reason')</script>",
        "source": "<b onmouseover=alert(2)>warm</b>",
        "value": "<script>alert('param')</script>",
    }
    distributions = {
        **space.distributions(),
        "training.caption": optuna.distributions.CategoricalDistribution([hostile["value"]]),
    }
    study = load_study(workspace, sweep)
    study.add_trial(
        optuna.trial.create_trial(
            state=optuna.trial.TrialState.COMPLETE,
            value=0.99,
            params={
                "training.learning_rate": 1e-3,
                "training.network.rank": 16,
                "training.optimizer": "sgd",
                "training.caption": hostile["value"],
            },
            distributions=distributions,
            user_attrs={
                "kura.run_id": hostile["run"],
                "kura.worker": hostile["worker"],
                "kura.reason": hostile["reason"],
                "kura.source": hostile["source"],
                "kura.gpu_class": "<i>gpu</i>",
                "kura.objective": {"value": 0.99, "loss": 0.9, "judge_scores": []},
            },
        )
    )
    study.add_trial(
        optuna.trial.create_trial(
            state=optuna.trial.TrialState.PRUNED,
            params={
                "training.learning_rate": 2e-3,
                "training.network.rank": 16,
                "training.optimizer": "adamw",
            },
            distributions=space.distributions(),
            user_attrs={
                "kura.status": "pruned",
                "kura.stopped": {
                    "by": "successive halving (asynchronous)",
                    "step": 2,
                    "loss": 0.8,
                    "why": hostile["reason"],
                },
            },
        )
    )
    return hostile


@pytest.mark.filterwarnings("ignore:Some regimes for parameter:UserWarning")
def test_hostile_values_from_the_study_are_escaped(swept: SweepWorkspace, tmp_path: Path) -> None:
    copy = _copy(swept, tmp_path)
    hostile = _add_hostile_trial(copy, swept.sweep)
    site = client(copy)
    page = site.get(f"/sweeps/{swept.sweep}")
    assert page.status_code == 200
    text = page.text
    assert "<script" not in text and "<img" not in text and "<b " not in text
    for value in hostile.values():
        assert str(markupsafe.escape(value)) in text, value
    assert 'href="/runs/&#34;' not in text and 'href="/runs/%22' not in text  # never linked
    rows = _rows_of(text)
    assert len(rows) == len(sweep_report(swept.workspace, swept.sweep)["rows"]) + 2
    pruned = rows[max(rows)]
    assert ">pruned</span>" in pruned and "successive halving (asynchronous): " in pruned
    listing = site.get("/sweeps")
    assert listing.status_code == 200 and "<script" not in listing.text
    assert f'data-sweep="{swept.sweep}"' in listing.text
    assert 'data-count="pruned">1<' in listing.text


def test_a_damaged_sweep_is_listed_with_its_error(swept: SweepWorkspace, tmp_path: Path) -> None:
    copy = _copy(swept, tmp_path)
    (copy.root / "sweeps" / swept.empty / "sweep.json").write_text('{"id": "x"}')
    listing = client(copy).get("/sweeps")
    assert listing.status_code == 200
    row = listing.text[listing.text.index(f'data-sweep="{swept.empty}"') :]
    assert "is damaged or was edited by hand" in row[: row.index("</tr>")]
    assert f'data-sweep="{swept.sweep}"' in listing.text  # the others still shown


def test_an_unknown_sweep_is_404_and_a_bad_name_400(swept: SweepWorkspace) -> None:
    site = client(swept.workspace)
    page = site.get("/sweeps/sw-nope")
    assert page.status_code == 404
    assert "no sweep &#39;sw-nope&#39; in this workspace" in page.text
    assert swept.sweep in page.text  # the hint names the sweeps there are
    assert site.get("/sweeps/.hidden").status_code == 400
    assert site.get("/sweeps/a%20b").status_code == 400


def test_an_unreachable_postgresql_study_is_a_clear_error(
    swept: SweepWorkspace, tmp_path: Path
) -> None:
    copy = _copy(swept, tmp_path)
    path = copy.root / "sweeps" / swept.sweep / "sweep.json"
    record: dict[str, Any] = json.loads(path.read_text())
    record["storage"] = "postgresql://kura@127.0.0.1:1/sweeps"
    path.write_text(json.dumps(record))
    site = client(copy)
    page = site.get(f"/sweeps/{swept.sweep}")
    assert page.status_code == 500
    assert "cannot reach the sweep storage postgresql://kura@127.0.0.1:1/sweeps" in page.text
    assert "start PostgreSQL" in page.text
    listing = site.get("/sweeps")  # the list still shows every sweep, this one with its error
    assert listing.status_code == 200
    row = listing.text[listing.text.index(f'data-sweep="{swept.sweep}"') :]
    row = row[: row.index("</tr>")]
    assert "cannot reach the sweep storage" in row and ">postgresql<" in row


def test_a_missing_journal_is_an_error_and_is_not_created(
    swept: SweepWorkspace, tmp_path: Path
) -> None:
    copy = _copy(swept, tmp_path)
    journal = copy.root / "sweeps" / swept.sweep / "study.journal"
    journal.unlink()
    page = client(copy).get(f"/sweeps/{swept.sweep}")
    assert page.status_code == 500
    assert f"has no study file sweeps/{swept.sweep}/study.journal" in page.text
    assert not journal.exists()


def test_the_report_json_document_keeps_its_shape(swept: SweepWorkspace) -> None:
    report = sweep_report(swept.workspace, swept.sweep)
    assert list(report) == [
        "kind",
        "sweep",
        "base_run",
        "objective",
        "rows",
        "best",
        "best_interval",
        "best_interval_note",
        "importance",
        "importance_note",
        "step_times_by_gpu_class",
        "parallel_coordinates",
    ]
    assert list(report["rows"][0]) == [
        "number",
        "state",
        "status",
        "params",
        "source",
        "objective",
        "told",
        "loss",
        "judge_scores",
        "gpu_class",
        "host",
        "worker",
        "run",
        "estimate",
        "stopped",
        "reason",
        "requeued_from",
        "gpu_hours",
    ]
    assert report["best"] == next(
        r for r in report["rows"] if r["number"] == report["best"]["number"]
    )
    scored = [r for r in report["rows"] if r["objective"] is not None]
    assert report["parallel_coordinates"] == [
        {**r["params"], "objective": r["objective"]} for r in scored
    ]
    json.dumps(report)  # plain JSON


def test_the_web_app_does_not_import_optuna_or_the_sweep_modules() -> None:
    probe = (
        "import sys; import kura.web.app; "
        "print('optuna' in sys.modules, 'kura.sweep.report' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False False"


@pytest.fixture(scope="module")
def pg_server() -> Iterator[Any]:
    from tests.postgres import postgres_server

    yield from postgres_server()


def test_a_postgresql_sweep_page_reads_the_server(
    swept: SweepWorkspace, tmp_path: Path, pg_server: Any
) -> None:
    from kura.sweep.envelope import approve_sweep, plan_sweep
    from kura.sweep.new import new_sweep
    from kura.sweep.worker import run_worker
    from tests.sweep.conftest import write_space
    from tests.web.sweep_builder import SPACE

    copy = _copy(swept, tmp_path)
    url = pg_server.new_database()
    sweep_id = str(
        new_sweep(
            copy, base_run=swept.base_run, space=write_space(tmp_path, SPACE), trials=1, storage=url
        )["sweep"]
    )
    plan_sweep(copy, sweep_id, gpu="h100-pcie")
    approve_sweep(copy, sweep_id)
    run_worker(copy, sweep_id, gpu="h100-pcie", seed=1)
    report = sweep_report(copy, sweep_id)
    before = snapshot(copy.root)
    page = client(copy).get(f"/sweeps/{sweep_id}")
    assert page.status_code == 200
    assert sorted(_rows_of(page.text)) == [r["number"] for r in report["rows"]] == [0]
    assert "study in postgresql" in page.text and url in page.text
    listing = client(copy).get("/sweeps").text
    row = listing[listing.index(f'data-sweep="{sweep_id}"') :]
    assert ">postgresql<" in row[: row.index("</tr>")]
    assert snapshot(copy.root) == before
    assert not (copy.root / "sweeps" / sweep_id / "study.journal").exists()
