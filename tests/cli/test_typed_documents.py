"""The verbs typed after launch/status/list: each returns one frozen value whose
``to_dict()`` is the command's ``--json`` document, key for key and in order, with the
``next`` the CLI layer decides (:func:`kura.cli.nexts.followed`)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from tests.web.workspace_builder import BUNDLE, WebWorkspace, build_workspace

from kura.backends.base import Finding, StepCost
from kura.backends.install import BackendList, list_backends
from kura.cli import nexts
from kura.cli._output import contracted, escape_value, finite_json
from kura.cli.main import main
from kura.dataset.registry import (
    DatasetInspection,
    DatasetList,
    DatasetSet,
    inspect_target,
    list_datasets,
    set_dataset_values,
)
from kura.demo import DemoLog, DemoStep, run_demo
from kura.doctor import DoctorResult, backend_doctor
from kura.export.ema import EmaMerge, merge_ema
from kura.images import ImageBuild
from kura.initialize import WorkspaceInit, initialize
from kura.knowledge.baselines import KnowledgeSync, show_card, sync_cards
from kura.knowledge.cards import CardEntry, KnowledgeCard
from kura.knowledge.regrets import RegretRecorded, record_regret
from kura.models.bundle_list import BundleList, bundle_list
from kura.models.checks import RoleVerdict
from kura.models.fetch import FetchedFile, FetchResult
from kura.models.filecheck import FileCheck, ModelCheck, check_files
from kura.models.lockdoc import LockWritten, lock_bundle
from kura.models.verify import Verification, verify_target
from kura.nextsteps import NextStep
from kura.planning.detect import LocalGpu
from kura.planning.gpu_list import GpuList, list_gpus
from kura.planning.host import HostFacts
from kura.runs.estimate import RunEstimate, Verdict, estimate_run, verdict
from kura.runs.evidence import (
    Checkpoint,
    Measured,
    Promotion,
    RunEvaluation,
    evaluate_run,
    promote_run,
)
from kura.runs.whatif import WhatIf, WhatIfEstimate, estimate_whatif


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebWorkspace]:
    from tests.export.lorafiles import musubi_lora, write_lora

    with pytest.MonkeyPatch.context() as monkeypatch:
        built = build_workspace(tmp_path_factory.mktemp("typed"), monkeypatch)
        output = built.workspace.run_dir(built.finished) / "output"
        for seed, path in enumerate(sorted(output.glob("*.safetensors"))):
            write_lora(path, musubi_lora("flux2", seed=seed))
        yield built


def _cli(*argv: str | Path) -> dict[str, Any]:
    out = io.StringIO()
    main(["--json", *map(str, argv)], stdout=out)
    document: dict[str, Any] = json.loads(out.getvalue())
    assert "error" not in document, document
    return document


def _as_json(value: Any) -> Any:
    """``value.to_dict()`` as ``--json`` writes it (tuples as lists, NaN as null, the
    contract version after the kind)."""
    return json.loads(json.dumps(finite_json(contracted(value.to_dict())), default=str))


def _same(value: Any, document: dict[str, Any]) -> None:
    written = _as_json(value)
    assert written == document
    assert list(written) == list(document), "the keys keep their order"
    assert written["kind"] == type(value).kind


def test_run_and_whatif_estimates_are_their_documents(web: WebWorkspace) -> None:
    ws = ["-w", str(web.workspace.root)]
    estimate = estimate_run(web.workspace, web.drafted, gpu="rtx-4090")
    assert isinstance(estimate, RunEstimate) and estimate.next == ()
    assert all(isinstance(c, StepCost) for c in estimate.steps)
    followed = nexts.followed(estimate, nexts.after_run_estimate)
    # the plan is for the GPU class the estimate judged the fit against
    assert [step.command for step in followed.next] == [
        f"kura run plan {web.drafted} --gpu rtx-4090"
    ]
    _same(followed, _cli(*ws, "run", "estimate", web.drafted, "--gpu", "rtx-4090"))
    assert estimate.verdict == verdict(estimate.steps)

    question = WhatIf(base="zimage-base", width=1024, height=1024, gpu="rtx-4090", step="train")
    whatif = estimate_whatif(question)
    assert isinstance(whatif, WhatIfEstimate)
    assert [c.step for c in whatif.steps] == ["train"]
    assert whatif.whatif.resolution == (1024, 1024) and whatif.backend == "musubi-tuner"
    document = _cli(
        *ws, "estimate", "--base", "zimage-base", "--gpu", "rtx-4090", "--step", "train"
    )
    _same(nexts.followed(whatif, nexts.after_whatif), document)
    assert list(document)[-5:] == ["backend", "whatif", "verdict", "time_and_cost", "next"]
    assert document["time_and_cost"]["by_step_hours"].keys() == {"train"}


def test_an_estimate_without_a_kind_of_its_own_gets_one_after_its_steps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """AI-Toolkit's estimate document carries no ``kind``: it follows ``steps`` (Chroma with
    its shape dropped: a model Kura cannot size)."""
    from kura.backends.aitoolkit.estimator import estimate

    shapes = {k: v for k, v in estimate.SHAPE_FOR_BUNDLE.items() if k != "chroma1-base"}
    monkeypatch.setattr(estimate, "SHAPE_FOR_BUNDLE", shapes)
    whatif = estimate_whatif(WhatIf(base="chroma1-base", width=1024, height=1024))
    document = _as_json(whatif)
    keys = list(document)
    assert "kind" not in whatif.estimate
    assert keys.index("kind") == keys.index("steps") + 1
    assert document["verdict"] == {"fits": None, "worst_step": "prepare", "unsized": ["train"]}


def test_the_verdict_is_the_worst_step() -> None:
    def cost(step: str, upper: float | None, fits: bool | None) -> StepCost:
        return StepCost(step, "train", upper, upper, None, None, fits, "test")

    costs = (cost("cache", 30.0, True), cost("train", 20.0, False), cost("sample", None, None))
    assert verdict(costs) == Verdict(False, "train", ("sample",))
    assert verdict(costs).to_dict() == {"fits": False, "worst_step": "train", "unsized": ["sample"]}
    assert verdict(costs[:1]) == Verdict(True, "cache", ())
    assert verdict(()) == Verdict(None, None, ())


def test_evaluate_promote_and_merge_are_their_documents(web: WebWorkspace) -> None:
    ws = ["-w", str(web.workspace.root)]
    finished = web.finished
    evaluation = evaluate_run(web.workspace, finished, rating=4, notes="fine", epoch=2)
    assert isinstance(evaluation, RunEvaluation)
    assert evaluation.chosen == Checkpoint("epoch", 2)
    assert evaluation.measured.launched and evaluation.measured.state == "succeeded"
    # the run's own architecture and task: promote needs neither named
    assert evaluation.next[0].command == f"kura knowledge promote {finished}"
    document = _cli(
        *ws, "run", "evaluate", finished, "--rating", "4", "--notes", "fine", "--epoch", "2"
    )
    _same(evaluation, document)

    promotion = promote_run(web.workspace, finished, architecture="flux2", task="style")
    assert isinstance(promotion, Promotion) and promotion.chosen == Checkpoint("epoch", 2)
    again = _cli(*ws, "knowledge", "promote", finished, "--arch", "flux2", "--task", "style")
    assert again["added"] == {}  # written once, by the call above
    promoted_again = promote_run(web.workspace, finished, architecture="flux2", task="style")
    _same(nexts.followed(promoted_again, nexts.after_knowledge_promote), again)

    merged = merge_ema(web.workspace, finished, beta=0.9)
    assert isinstance(merged, EmaMerge) and merged.labels == ("epoch 1", "final")
    assert merged.betas == (0.9,) and merged.beta2 == 0.9
    merged_doc = _cli(*ws, "export", "merge-ema", finished, "--beta", "0.9")
    _same(nexts.followed(merged, nexts.after_ema), merged_doc)


def test_measured_facts_are_there_only_when_their_file_is() -> None:
    assert Measured().to_dict() == {}
    planned = Measured(planned=True, gpu="RTX 4090", estimated_peak_gib=20)
    assert planned.to_dict() == {"gpu": "RTX 4090", "estimated_peak_gib": 20}
    launched = Measured(launched=True, state="failed")
    assert launched.to_dict() == {"state": "failed", "seconds_per_step": None, "steps": None}


def test_dataset_set_and_list_are_their_documents(web: WebWorkspace) -> None:
    ws = ["-w", str(web.workspace.root)]
    changed = set_dataset_values(web.workspace, "myaku", ["intent.task=character"])
    assert isinstance(changed, DatasetSet) and changed.intent.task == "character"
    document = _cli(*ws, "dataset", "set", "myaku", "intent.task=character")
    _same(nexts.followed(changed, nexts.after_dataset_set), document)
    listing = list_datasets(web.workspace)
    assert isinstance(listing, DatasetList) and [d.name for d in listing.datasets] == ["myaku"]
    _same(nexts.followed(listing, nexts.after_dataset_list), _cli(*ws, "dataset", "list"))


def test_model_verbs_are_their_documents(web: WebWorkspace, tmp_path: Path) -> None:
    ws = ["-w", str(web.workspace.root)]
    models = web.workspace.models_dir
    verified = verify_target(BUNDLE, models_dir=models)
    assert isinstance(verified, Verification) and verified.target_kind == "bundle"
    document = _cli(*ws, "model", "verify", BUNDLE)
    _same(nexts.followed(verified, nexts.after_model_verify), document)

    locked = lock_bundle(web.workspace, BUNDLE)
    assert isinstance(locked, LockWritten) and locked.bundle == BUNDLE and locked.written
    document = _cli(*ws, "model", "lock", BUNDLE)
    assert document["written"] is False  # the same files: the same bytes
    again = lock_bundle(web.workspace, BUNDLE)
    _same(nexts.followed(again, nexts.after_model_lock), document)

    missing = tmp_path / "nothing.safetensors"
    checked = check_files([missing])
    assert isinstance(checked, ModelCheck) and checked.unreadable and not checked.ok
    (entry,) = checked.files
    assert entry.report is None and entry.error is not None
    assert entry.to_dict()["verdict"] == {
        "status": "refused",
        "refusals": [entry.verdict.refusals[0]],
        "warnings": [],
    }
    _same(nexts.followed(checked, nexts.after_model_check), _cli(*ws, "model", "check", missing))


def test_an_unreadable_file_check_names_its_error() -> None:
    refused = RoleVerdict("flux2", "dit", "refused", refusals=("bad",))
    unreadable = FileCheck("/m/a.safetensors", None, refused, error={"message": "bad"})
    assert unreadable.to_dict() == {
        "path": "/m/a.safetensors",
        "error": {"message": "bad"},
        "verdict": {"status": "refused", "refusals": ["bad"], "warnings": []},
    }


def test_a_skipped_fetch_has_no_download_facts() -> None:
    skipped = FetchedFile(
        "text_encoder", "org/repo", None, "main", "skipped", None, None, (), ("snapshot",)
    )
    assert list(skipped.to_dict()) == [
        "slot",
        "repo",
        "filename",
        "revision",
        "status",
        "path",
        "problems",
        "warnings",
    ]
    result = FetchResult("zimage-base", "cache", (skipped,))
    assert result.ok and result.to_dict()["ok"] is True


def test_doctor_documents_of_the_machine_and_of_a_backend() -> None:
    machine = DoctorResult(findings=(Finding("gpu", "warn", "none"),))
    assert list(machine.to_dict()) == ["kind", "ok", "findings", "next"]
    from kura.backends.base import DoctorReport

    failed = Finding("env", "fail", "missing", "kura backend install toy")
    report = DoctorReport("toy", (failed,), {"image": "kura/toy:1"})
    result = nexts.followed(backend_doctor(report), nexts.after_backend_doctor)
    document = result.to_dict()
    assert list(document) == ["kind", "scope", "ok", "image", "findings", "next"]
    assert document["ok"] is False and result.next == (
        NextStep("kura backend install toy", "env: missing"),
    )


def test_image_build_is_its_document(web: WebWorkspace) -> None:
    from kura.backends.registry import command_backend
    from kura.images import build_image

    built = build_image(command_backend("musubi").image(None), run=False)
    assert isinstance(built, ImageBuild) and built.argv[:2] == ("docker", "build")
    _same(
        nexts.followed(built, nexts.after_image_build),
        _cli("-w", web.workspace.root, "image", "build", "musubi"),
    )


def test_renderers_get_escaped_typed_values() -> None:
    """People's output is drawn from the typed value with its strings escaped for Rich."""
    evaluation = RunEvaluation("r", 3, "[bold]x", None, Measured(), "runs/[red]/notes.md")
    escaped = escape_value(evaluation)
    assert isinstance(escaped, RunEvaluation) and escaped.path == "runs/\\[red]/notes.md"
    assert escaped.measured == Measured()


def test_gpus_is_its_document(monkeypatch: pytest.MonkeyPatch) -> None:
    """The catalog, a detected GPU and the host facts, as ``kura gpus --json`` writes them
    (detection and host facts pinned: free RAM moves between two reads)."""
    import kura.planning.gpu_list as gpu_list

    local = LocalGpu(
        0, "NVIDIA [b]H100", 79.6, 70.1, "GPU-1", "550.54", "9.0", 5, 16, "h100", "nvml"
    )
    host = HostFacts(62.8, 40.5, "/data", 512.25, 16)
    monkeypatch.setattr(gpu_list, "detect_gpus", lambda: [local])
    monkeypatch.setattr(gpu_list, "host_facts", lambda path: host)
    listed = list_gpus()
    assert isinstance(listed, GpuList) and listed.local == (local,) and listed.host == host
    document = _cli("gpus")
    _same(listed, document)
    assert list(document["gpus"][0]) == [
        "id",
        "name",
        "memory_gib",
        "bf16_tflops",
        "fp8",
        "pcie_gbs",
        "usd_per_hour",
        "price_seen",
        "cloud_types",
    ]
    assert escape_value(listed).local[0].name == "NVIDIA \\[b]H100"


def test_model_bundles_are_their_document() -> None:
    listed = bundle_list()
    assert isinstance(listed, BundleList) and listed.bundles
    _same(listed, _cli("model", "bundles"))
    flux2 = bundle_list("flux2")
    assert flux2.bundles and {e.bundle.architecture for e in flux2.bundles} == {"flux2"}
    assert all(e.backends for e in flux2.bundles if e.bundle.supported)
    _same(flux2, _cli("model", "bundles", "--arch", "flux2"))
    assert list(_as_json(flux2)["bundles"][0])[-2:] == ["roles", "backends"]


def test_init_is_its_document(tmp_path: Path) -> None:
    fresh = initialize(tmp_path / "a")
    assert isinstance(fresh, WorkspaceInit) and "kura.toml" in fresh.created
    document = _cli("init", tmp_path / "b")
    assert list(fresh.created) == document["created"]
    again = nexts.followed(initialize(tmp_path / "b"), nexts.after_init)
    assert again.created == () and again.root == str((tmp_path / "b").resolve())
    _same(replace(again, created=fresh.created), document)
    _same(again, _cli("init", tmp_path / "b"))


def test_backend_list_is_its_document(web: WebWorkspace) -> None:
    listed = nexts.followed(list_backends(web.workspace), nexts.after_backend_list)
    assert isinstance(listed, BackendList)
    assert [e.name for e in listed.backends] == ["ai-toolkit", "kohakumoss", "musubi-tuner"]
    document = _cli("-w", web.workspace.root, "backend", "list")
    _same(listed, document)
    for entry, row in zip(listed.backends, document["backends"], strict=True):
        assert ("path" in row) is (entry.path is not None)


def test_knowledge_verbs_are_their_documents(web: WebWorkspace) -> None:
    ws = ["-w", str(web.workspace.root)]
    synced = sync_cards(web.workspace, ["zimage", "flux2"])
    assert isinstance(synced, KnowledgeSync)
    assert [(c.backend, c.architecture) for c in synced.cards] == [
        ("ai-toolkit", "zimage"),
        ("ai-toolkit", "flux2"),
        ("musubi-tuner", "zimage"),
        ("musubi-tuner", "flux2"),
    ]
    _same(synced, _cli(*ws, "knowledge", "sync", "zimage", "flux2"))

    card = show_card(web.workspace, "flux2", "musubi-tuner")
    assert isinstance(card, KnowledgeCard) and card.entries
    _same(card, _cli(*ws, "knowledge", "show", "flux2", "--backend", "musubi-tuner"))

    line = "zzz-typed [red]never -> a reminder"
    document = _cli(*ws, "knowledge", "regret", web.finished, line)
    recorded = record_regret(web.workspace, web.finished, line)
    assert (
        isinstance(recorded, RegretRecorded) and recorded.regret.trigger == "zzz-typed [red]never"
    )
    _same(recorded, document)
    assert list(document) == ["kind", "contract", "run", "trigger", "reminder", "source"]


def test_a_card_is_escaped_for_people() -> None:
    entry = CardEntry("all", "training.optimizer", ["[red]x"], "owner [b]", "owner", 3)
    escaped = escape_value(KnowledgeCard("flux2", "k/[i]f.md", (entry,), ("line [u]1",)))
    assert escaped.path == "k/\\[i]f.md" and escaped.problems == ("line \\[u]1",)
    assert escaped.entries[0].value == ["\\[red]x"] and escaped.entries[0].source == "owner \\[b]"


def test_demo_is_its_document(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The walk as quick start 1 runs it (no KohakuMoss environment), twice in one folder:
    once by the CLI, once by the library, the commands' own output thrown away. Run ids
    carry the minute; the suite's pinned id clock (tests/conftest.py) keeps the two walks
    from straddling one."""
    for variable in ("KURA_KOHAKUMOSS_ENV", "KURA_MUSUBI_ENV", "KURA_AITK_ENV"):
        monkeypatch.setenv(variable, str(tmp_path / f"no-env-{variable}"))
    document = _cli("demo", tmp_path / "demo")

    def run_command(argv: list[str], note: str) -> int:
        return main([*argv, "--json"], stdout=io.StringIO())

    walked = nexts.followed(run_demo(tmp_path / "demo", run_command), nexts.after_demo)
    assert isinstance(walked, DemoLog) and walked.workspace == f"{walked.root}/workspace"
    assert walked.steps[0] == DemoStep(("init", walked.workspace), 0, "create the workspace")
    _same(walked, document)


def test_dataset_inspection_is_its_document(web: WebWorkspace) -> None:
    """By name: the stored intent and only the questions it leaves open, after the
    inspection's keys; by path: the inspection alone."""
    ws = ["-w", str(web.workspace.root)]
    inspected = inspect_target(lambda: web.workspace, "myaku", resolution=None)
    assert isinstance(inspected, DatasetInspection) and inspected.name == "myaku"
    assert inspected.questions is not None
    assert len(inspected.questions) < len(inspected.inspection.questions)
    document = _cli(*ws, "dataset", "inspect", "myaku")
    _same(nexts.followed(inspected, nexts.after_inspection), document)
    assert list(document)[-3:] == ["name", "intent", "next"]

    media = str(web.workspace.dataset_dir("myaku") / "media")
    by_path = inspect_target(lambda: web.workspace, media, resolution=(768, 768))
    assert by_path.name is None and by_path.intent is None and by_path.questions is None
    document = _cli(*ws, "dataset", "inspect", media, "--resolution", "768")
    _same(nexts.followed(by_path, nexts.after_inspection), document)
    assert "name" not in document and document["resolution"] == [768, 768]
