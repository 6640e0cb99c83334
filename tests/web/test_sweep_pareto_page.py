"""The sweep page of an ``objective.mode: pareto`` sweep over the toy trainer (two objectives,
loss down and judge score up, some trials unscored): the Pareto front instead of a best
trial, loss against judge score, both objectives in the parallel coordinates, importance
per objective and the promote command with ``--trial N``, every value the report's."""

from __future__ import annotations

import html
import json
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import markupsafe
import pytest

from kura.sweep.report import TrialRow, sweep_report
from kura.web.sweep_charts import pareto_chart, pc_axes
from kura.workspace import Workspace
from tests.web.helpers import client, snapshot
from tests.web.sweep_builder import SILENT_LR, ParetoWorkspace


def _copy(swept: ParetoWorkspace, tmp_path: Path) -> Workspace:
    target = tmp_path / "copy"
    shutil.copytree(swept.workspace.root, target, symlinks=True)
    return Workspace(target)


def _page(workspace: Workspace, sweep_id: str) -> str:
    page = client(workspace).get(f"/sweeps/{sweep_id}")
    assert page.status_code == 200, page.text[:2000]
    return page.text


def _between(text: str, start: str, end: str) -> str:
    body = text[text.index(start) :]
    return body[: body.index(end)]


def _rows(text: str, table: str, attribute: str) -> dict[int, str]:
    body = _between(text, f'<table class="{table}">', "</table>")
    return {
        int(m.group(1)): m.group(0)
        for m in re.finditer(rf'<tr {attribute}="(\d+)".*?</tr>', body, re.DOTALL)
    }


def _field(text: str, name: str) -> str:
    match = re.search(rf'data-field="{re.escape(name)}">([^<]*)<', text)
    assert match, f"no {name} on the page"
    return html.unescape(match.group(1))


def _chart(text: str, name: str) -> str:
    return _between(text, f'data-chart="{name}"', "</svg>")


def test_the_sweep_is_a_pareto_sweep_with_unscored_trials(pareto_swept: ParetoWorkspace) -> None:
    """The fixture is what the page tests need: a front and trials the judge did not score."""
    report = sweep_report(pareto_swept.workspace, pareto_swept.sweep)
    assert report["mode"] == "pareto" and report["best"] is None
    assert len(report["pareto_front"]) >= 2
    assert report["unscored"] and 0 in report["unscored"]  # the base run's rate is silent
    for row in report["rows"]:
        silent = row["params"]["training.learning_rate"] == SILENT_LR
        assert (row["status"] == "unscored") == silent, row
        assert (row["values"] is None) == silent


def test_the_page_shows_the_mode_and_the_reports_front(pareto_swept: ParetoWorkspace) -> None:
    report = sweep_report(pareto_swept.workspace, pareto_swept.sweep)
    text = _page(pareto_swept.workspace, pareto_swept.sweep)
    assert _field(text, "mode") == "pareto"
    assert _field(text, "judge") == report["objective"]["judge"]
    assert _field(text, "judge_weight") == "–"  # pareto folds nothing
    assert "Best trial" not in text and 'data-field="best-number"' not in text
    assert "bootstrap interval" not in text
    front = _rows(text, "front", "data-front")
    assert list(front) == [r["number"] for r in report["pareto_front"]]  # the order too: by loss
    for expected in report["pareto_front"]:
        shown = front[expected["number"]]
        loss, judge = expected["values"]
        assert f'data-field="front-loss">{loss:.6g}<' in shown
        assert f'data-field="front-judge">{judge:.6g}<' in shown
        for key, value in expected["params"].items():
            assert f"<li><code>{key}</code> = {value:.4g}</li>" in shown
        assert f'<a href="/runs/{expected["run"]}">{expected["run"]}</a>' in shown
        command = f"kura sweep promote {pareto_swept.sweep} --trial {expected['number']}"
        assert f'data-field="promote-{expected["number"]}">{command}<' in shown
    assert _field(text, "front-note") == report["pareto_front_note"]
    assert _field(text, "promote") == f"kura sweep promote {pareto_swept.sweep} --trial N"
    unscored = ", ".join(str(n) for n in report["unscored"])
    assert unscored in _field(text, "unscored")


def test_every_trial_is_in_the_table_unscored_ones_with_their_reason(
    pareto_swept: ParetoWorkspace,
) -> None:
    report = sweep_report(pareto_swept.workspace, pareto_swept.sweep)
    text = _page(pareto_swept.workspace, pareto_swept.sweep)
    rows = _rows(text, "trials", "data-trial")
    assert sorted(rows) == [r["number"] for r in report["rows"]]
    on_front = {r["number"] for r in report["pareto_front"]}
    for expected in report["rows"]:
        shown = rows[expected["number"]]
        status = expected["status"]
        assert f'<span class="status status-{status}">{status}</span>' in shown
        said = "on the front" if expected["number"] in on_front else "–"
        assert f'data-field="front">{said}<' in shown
        assert ('class="front"' in shown) == (expected["number"] in on_front)
        assert f">{expected['loss']:.4g}<" in shown  # an unscored trial keeps its loss
        if expected["status"] == "unscored":
            assert "has no score for this trial" in expected["reason"]
            assert html.escape(expected["reason"]) in shown
    listing = client(pareto_swept.workspace).get("/sweeps").text
    row = _between(listing, f'data-sweep="{pareto_swept.sweep}"', "</tr>")
    assert f"Pareto front: {len(on_front)} trials" in row
    assert f"unscored {len(report['unscored'])}" in row  # counted among the others


def test_the_scatter_is_loss_against_judge_with_the_front_highlighted(
    pareto_swept: ParetoWorkspace,
) -> None:
    report = sweep_report(pareto_swept.workspace, pareto_swept.sweep)
    text = _page(pareto_swept.workspace, pareto_swept.sweep)
    chart = _chart(text, "objective")
    assert chart.count("<svg") == 1 and "<script" not in chart
    assert "loss (lower is better)" in chart and "judge score (higher is better)" in chart
    dots = {
        int(n): (kind, float(cx), float(cy))
        for kind, n, cx, cy in re.findall(
            r'<circle class="series-dot (\S+) series-\d" data-trial="(\d+)" '
            r'cx="([\d.]+)" cy="([\d.]+)"',
            chart,
        )
    }
    scored = {r["number"]: r["values"] for r in report["rows"] if r["values"] is not None}
    assert set(dots) == set(scored)  # unscored trials have no point
    front = {r["number"] for r in report["pareto_front"]}
    assert {n for n, (kind, _, _) in dots.items() if kind == "front-dot"} == front
    # x grows with the loss, y (SVG: down) falls as the judge score rises
    by_loss = sorted(scored, key=lambda n: scored[n][0])
    assert [dots[n][1] for n in by_loss] == sorted(dots[n][1] for n in by_loss)
    by_judge = sorted(scored, key=lambda n: scored[n][1])
    assert [dots[n][2] for n in by_judge] == sorted((dots[n][2] for n in by_judge), reverse=True)
    line = re.search(r'<polyline class="series series-1 pareto-front" points="([^"]+)"', chart)
    assert line is not None
    assert len(line.group(1).split()) == len(front)
    assert [float(p.split(",")[0]) for p in line.group(1).split()] == sorted(
        dots[n][1] for n in front
    )


def test_parallel_coordinates_end_in_both_objectives(pareto_swept: ParetoWorkspace) -> None:
    report = sweep_report(pareto_swept.workspace, pareto_swept.sweep)
    text = _page(pareto_swept.workspace, pareto_swept.sweep)
    chart = _chart(text, "parallel")
    axes = re.findall(r'class="pc-axis" data-axis="([^"]+)" data-scale="(\w+)"', chart)
    assert axes == [
        ("training.learning_rate", "categorical"),
        ("training.network.rank", "categorical"),
        ("loss", "linear"),
        ("judge_score", "linear"),
    ]
    assert ">judge score<" in chart
    lines = re.findall(
        r'<polyline class="(pc-trial[^"]*)" data-trial="(\d+)" points="([^"]+)"', chart
    )
    complete = [r for r in report["rows"] if r["state"] == "COMPLETE"]
    assert sorted(int(n) for _, n, _ in lines) == sorted(r["number"] for r in complete)
    assert all(len(points.split()) == 4 for _, _, points in lines)
    front = {r["number"] for r in report["pareto_front"]}
    assert {int(n) for kind, n, _ in lines if "pc-best" in kind} == front
    # the drawn polylines are the report's parallel_coordinates, one per complete trial
    assert len(report["parallel_coordinates"]) == len(lines)
    assert all(set(c) >= {"loss", "judge_score"} for c in report["parallel_coordinates"])


def _bars(chart: str) -> dict[str, float]:
    return {
        k: float(v)
        for k, v in re.findall(r'class="bar[^"]*" data-param="([^"]+)" data-value="([^"]+)"', chart)
    }


def test_importance_is_shown_per_objective(pareto_swept: ParetoWorkspace) -> None:
    report = sweep_report(pareto_swept.workspace, pareto_swept.sweep)
    by_objective = report["importance_by_objective"]
    assert set(by_objective) == {"loss", "judge_score"} and all(by_objective.values())
    text = _page(pareto_swept.workspace, pareto_swept.sweep)
    overall = _bars(_chart(text, "importance"))
    assert overall == pytest.approx(report["importance"], rel=1e-5)
    assert "(to reach the Pareto front)" in report["importance_note"]
    for name, values in by_objective.items():
        chart = _chart(text, f"importance-{name}")
        assert _bars(chart) == pytest.approx(values, rel=1e-5)
    assert "Parameter importance for the loss (lower is better)" in text
    assert "Parameter importance for the judge score (higher is better)" in text


def test_a_front_trials_promote_command_is_the_clis(
    pareto_swept: ParetoWorkspace, tmp_path: Path
) -> None:
    from kura.cli.main import main

    copy = _copy(pareto_swept, tmp_path)
    report = sweep_report(copy, pareto_swept.sweep)
    chosen = report["pareto_front"][-1]
    text = _page(copy, pareto_swept.sweep)
    argv = shlex.split(_field(text, f"promote-{chosen['number']}"))
    assert argv[:3] == ["kura", "sweep", "promote"]
    assert main(["-w", str(copy.root), *argv[1:]]) == 0
    card = (copy.knowledge_dir / "toy-trainer" / "zimage.md").read_text()
    assert f"source: sweep {pareto_swept.sweep} (trial {chosen['number']} of the Pareto front" in (
        card
    )
    winner = json.loads((copy.root / "sweeps" / pareto_swept.sweep / "winner.json").read_text())
    assert winner["number"] == chosen["number"] and winner["values"] == chosen["values"]
    not_on_front = next(
        r["number"]
        for r in report["rows"]
        if r["number"] not in {f["number"] for f in report["pareto_front"]}
    )
    assert f'data-field="promote-{not_on_front}"' not in text


def test_reading_the_pareto_page_writes_nothing(pareto_swept: ParetoWorkspace) -> None:
    before = snapshot(pareto_swept.workspace.root)
    site = client(pareto_swept.workspace)
    for url in ("/sweeps", f"/sweeps/{pareto_swept.sweep}"):
        assert site.get(url).status_code == 200, url
    assert snapshot(pareto_swept.workspace.root) == before
    assert not (
        pareto_swept.workspace.root / "sweeps" / pareto_swept.sweep / "winner.json"
    ).exists()


def _add_hostile_front_trial(workspace: Workspace, sweep_id: str) -> dict[str, str]:
    """A trial that beats every other on both objectives (so it is the whole front), its
    strings hostile markup."""
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
            values=[0.01, 0.99],
            params={
                "training.learning_rate": 0.0003,
                "training.network.rank": 16,
                "training.caption": hostile["value"],
            },
            distributions=distributions,
            user_attrs={
                "kura.run_id": hostile["run"],
                "kura.worker": hostile["worker"],
                "kura.source": hostile["source"],
                "kura.objective": {
                    "value": 0.01,
                    "loss": 0.01,
                    "judge_score": 0.99,
                    "judge_scores": [0.99],
                    "mode": "pareto",
                    "values": [0.01, 0.99],
                },
            },
        )
    )
    return hostile


@pytest.mark.filterwarnings("ignore:Some regimes for parameter:UserWarning")
def test_hostile_values_on_the_front_are_escaped(
    pareto_swept: ParetoWorkspace, tmp_path: Path
) -> None:
    copy = _copy(pareto_swept, tmp_path)
    hostile = _add_hostile_front_trial(copy, pareto_swept.sweep)
    report = sweep_report(copy, pareto_swept.sweep)
    added = max(r["number"] for r in report["rows"])
    assert [r["number"] for r in report["pareto_front"]] == [added]
    text = _page(copy, pareto_swept.sweep)
    assert "<script" not in text and "<img" not in text and "<b " not in text
    front = _rows(text, "front", "data-front")
    assert list(front) == [added]
    assert str(markupsafe.escape(hostile["value"])) in front[added]
    assert str(markupsafe.escape(hostile["run"])) in front[added]
    assert 'href="/runs/&#34;' not in text and 'href="/runs/%22' not in text  # never linked
    for value in hostile.values():
        assert str(markupsafe.escape(value)) in text, value


def _row(number: int, values: tuple[float, float] | None) -> TrialRow:
    return TrialRow(
        number=number,
        state="COMPLETE" if values else "FAIL",
        status="complete",
        params={"training.learning_rate": 1e-4},
        source="t",
        objective=None,
        told=None,
        loss=None if values is None else values[0],
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
        pareto=True,
        values=values,
        judge_score=None if values is None else values[1],
    )


def test_a_pareto_sweep_without_scored_trials_says_so() -> None:
    shown = pareto_chart([_row(0, None)], [])
    assert shown == '<p class="empty">No trial has both a loss and a judge score yet.</p>'


def test_one_point_still_draws_and_the_axes_are_both_objectives() -> None:
    from kura.sweep.space import CheckedAxis

    svg = pareto_chart([_row(0, (0.5, 0.5))], [0])
    assert svg.count("<circle") == 1 and 'class="series-dot front-dot series-1"' in svg
    lr = CheckedAxis("training.learning_rate", "float", 1e-5, 1e-2, True, None, (), "t")
    keys = [a.key for a in pc_axes([lr], [_row(0, (0.5, 0.5)), _row(1, (0.4, 0.2))])]
    assert keys == ["training.learning_rate", "loss", "judge_score"]


def test_a_pareto_rows_document_has_its_values_and_a_weighted_rows_has_not() -> None:
    pareto: dict[str, Any] = _row(3, (0.4, 0.6)).to_dict()
    assert list(pareto)[-2:] == ["values", "judge_score"]
    assert pareto["values"] == [0.4, 0.6] and pareto["judge_score"] == 0.6
    weighted = TrialRow(
        **{**_row(3, (0.4, 0.6)).__dict__, "pareto": False, "values": None, "judge_score": None}
    ).to_dict()
    assert "values" not in weighted and "judge_score" not in weighted
