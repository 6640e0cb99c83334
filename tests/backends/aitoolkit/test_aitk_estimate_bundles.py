"""Every AI-Toolkit bundle's default draft is sized: each step of its plan on a 24 GB and an
80 GB class has a peak, a band, a verdict and a time, and the plan is approved without
``--accept-risk`` where it fits (and refused without it where it does not)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.backends.conformance import DATASETS, GPUS, build_datasets

from kura.backends.aitoolkit.archs import AITK_MODELS
from kura.backends.registry import get_backend
from kura.errors import CheckFailed
from kura.initialize import init_workspace
from kura.models.bundles import get_bundle
from kura.runs.approval import approve_run
from kura.runs.new import create_run
from kura.runs.plan import plan_run
from kura.workspace import Workspace

BUNDLES = sorted(AITK_MODELS)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    root = tmp_path_factory.mktemp("bundles")
    created, _ = init_workspace(root / "ws")
    build_datasets(created, root / "incoming")
    return created


def _draft(workspace: Workspace, bundle: str) -> str:
    task = get_backend("ai-toolkit").tasks(get_bundle(bundle))[0]
    created = create_run(
        workspace, datasets=[DATASETS[task]], base=bundle, backend="ai-toolkit", task=task
    )
    return created.run_id


def _unsized(steps: list[dict[str, Any]]) -> list[str]:
    return [
        s["step"]
        for s in steps
        if s["peak_gib"] is None
        or s["upper_gib"] is None
        or s["fits"] is None
        or s["seconds"] is None
    ]


@pytest.mark.parametrize("gpu", GPUS)
@pytest.mark.parametrize("bundle", BUNDLES)
def test_the_default_draft_sizes_every_step_and_approves_where_it_fits(
    workspace: Workspace, bundle: str, gpu: str, tmp_path: Path
) -> None:
    run_id = _draft(workspace, bundle)
    report = plan_run(workspace, run_id, gpu=gpu)
    steps = report.estimate["steps"]
    assert steps and _unsized(steps) == []
    assert report.fit["sizeable"] is True
    if report.estimate["fits"]:
        assert approve_run(workspace, run_id).accepted_risk is None
    else:
        with pytest.raises(CheckFailed, match="not known to fit"):
            approve_run(workspace, run_id)
