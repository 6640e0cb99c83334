"""The agent contract's ``next``, decided for every command the CLI has.

``DECISIONS`` holds, for each command, the kind of document it prints and whether that
document carries ``next`` (a list of ``{command, why}``; empty when the document's state has
nothing to follow). A command added without a decision fails the first test; the second runs
the commands in one workspace (a finished run launched through the fake Musubi checkout)
and checks every document against its decision. Commands that cannot run here (a pip
install, a download, a server, a whole demo, a sweep's trials) name the test that holds
their document instead; their ``next`` functions are checked on documents of their kind.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import pytest
from tests.cli.vocabulary import synonyms
from tests.web.workspace_builder import BUNDLE, WebWorkspace, build_workspace

from kura.cli import nexts
from kura.cli.main import cli, main


@dataclass(frozen=True)
class Decision:
    kind: str
    next: bool
    why: str = ""
    """Why a document carries no ``next``, or where a document not run here is tested."""


NO_FOLLOW_UP = "a reference document: what follows is the reader's choice"
DECISIONS: dict[str, Decision] = {
    "backend install": Decision("backend-install", True, "pip install: test_backend_docs"),
    "backend list": Decision("backend-list", True),
    "dataset add": Decision("dataset-add", True),
    "dataset inspect": Decision("dataset-inspection", True),
    "dataset list": Decision("dataset-list", True),
    "dataset set": Decision("dataset-set", True),
    "dataset validate": Decision("dataset-validation", True),
    "demo": Decision("demo", True, "a whole demo run: test_the_demo_documents_next"),
    "doctor": Decision(
        "doctor", True, "it checks this machine: test_a_backend_doctor_points_at_each_fix…"
    ),
    "estimate": Decision("run-estimate", True),
    "export lora": Decision("lora-export", True),
    "export merge-ema": Decision("lora-ema", True),
    "gpus": Decision("gpus", False, NO_FOLLOW_UP),
    "image build": Decision("image-build", True),
    "init": Decision("workspace-init", True),
    "knowledge promote": Decision("knowledge-promote", True),
    "knowledge regret": Decision("knowledge-regret", False, "the next plan reads it itself"),
    "knowledge show": Decision("knowledge-card", False, NO_FOLLOW_UP),
    "knowledge sync": Decision("knowledge-sync", False, NO_FOLLOW_UP),
    "model bundles": Decision("model-bundles", False, NO_FOLLOW_UP),
    "model check": Decision("model-check", True),
    "model fetch": Decision("model-fetch", True, "a download: test_model_documents_next"),
    "model lock": Decision("model-lock", True),
    "model resolve": Decision("model-resolve", True),
    "model verify": Decision("model-verify", True),
    "run approve": Decision("run-approval", True),
    "run cancel": Decision("run-cancel", True),
    "run collect": Decision(
        "run-collect", True, "a SkyPilot run: test_cli_collects_from_a_mounted_folder"
    ),
    "run compile": Decision("run-compile", True),
    "run estimate": Decision("run-estimate", True),
    "run evaluate": Decision("run-evaluation", True),
    "run import-aitk": Decision(
        "imported-run", True, "an AI-Toolkit job: test_an_import_documents_next"
    ),
    "run launch": Decision("run-launch", True),
    "run list": Decision("run-list", False, NO_FOLLOW_UP + " (each run's is in its status)"),
    "run logs": Decision("run-logs", False, "the diagnosis and its next are in run status"),
    "run new": Decision("run-new", True),
    "run plan": Decision("run-plan", True),
    "run relaunch": Decision("run-launch", True, "needs a failed attempt: tests/runs"),
    "run resume": Decision("run-launch", True, "needs a saved state: tests/runs"),
    "run status": Decision("run-status", True),
    "run watch": Decision("run-status", True),
    "schema": Decision("schema", False, NO_FOLLOW_UP),
    "serve": Decision("serve", False, "a server that runs until stopped"),
    "skills install": Decision("skills-install", False, "the agent tool reads the folder itself"),
    "skills list": Decision("skill-list", True, "tests/skills/test_skills_cli.py"),
    "skills show": Decision("skill", False, NO_FOLLOW_UP),
    "sweep approve": Decision("sweep-approval", True, "tests/sweep/test_cli.py"),
    "sweep collect": Decision("sweep-collect", True, "test_sweep_documents_next"),
    "sweep launch": Decision("sweep-launch", True, "tests/sweep/test_sweep_cloud_workers.py"),
    "sweep new": Decision("sweep", True, "tests/sweep/test_cli.py"),
    "sweep plan": Decision("sweep-plan", True, "tests/sweep/test_cli.py"),
    "sweep promote": Decision("sweep-promote", True, "test_sweep_documents_next"),
    "sweep report": Decision("sweep-report", True, "tests/sweep/test_cli.py"),
    "sweep status": Decision("sweep-status", True, "tests/sweep/test_cli.py"),
    "sweep worker": Decision("sweep-worker", True, "tests/sweep/test_cli.py"),
}


def _leaf_commands() -> set[str]:
    ctx = click.Context(cli)
    found: set[str] = set()

    def walk(command: click.Command, path: list[str]) -> None:
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                child = command.get_command(ctx, name)
                assert child is not None
                walk(child, [*path, name])
        else:
            found.add(" ".join(path))

    walk(cli, [])
    return found


def test_every_command_has_a_next_decision() -> None:
    commands = _leaf_commands()
    assert sorted(commands - set(DECISIONS)) == [], "decide `next` for the new command(s)"
    assert sorted(set(DECISIONS) - commands) == [], "a decided command no longer exists"
    assert all(d.why for d in DECISIONS.values() if not d.next), "say why there is no next"


def _json(*argv: str | Path) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    code = main(["--json", *map(str, argv)], stdout=out)
    lines = [line for line in out.getvalue().splitlines() if line.strip()]
    text = out.getvalue() if argv[:2] != ("run", "watch") else lines[-1]
    return code, json.loads(text)


def _well_formed(steps: object) -> bool:
    return isinstance(steps, list) and all(
        isinstance(s, dict)
        and set(s) == {"command", "why"}
        and str(s["command"]).startswith(("kura ", "cp "))
        and s["why"]
        for s in steps
    )


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebWorkspace]:
    """The web tests' workspace; the finished run's LoRA files (the fake's are tiny) are
    replaced by Musubi-layout files of the base model's modules, so export verifies them."""
    from tests.export.lorafiles import musubi_lora, write_lora

    with pytest.MonkeyPatch.context() as monkeypatch:
        built = build_workspace(tmp_path_factory.mktemp("next"), monkeypatch)
        output = built.workspace.run_dir(built.finished) / "output"
        for seed, path in enumerate(sorted(output.glob("*.safetensors"))):
            write_lora(path, musubi_lora("flux2", seed=seed))
        yield built


def test_every_document_run_here_matches_its_decision(web: WebWorkspace, tmp_path: Path) -> None:
    ws = ["-w", str(web.workspace.root)]
    finished = web.finished
    folder = tmp_path / "more"
    folder.mkdir()
    for index in range(2):
        from PIL import Image

        Image.new("RGB", (640, 640), (90 * index, 40, 40)).save(folder / f"{index}.png")
        (folder / f"{index}.txt").write_text(f"myaku, more {index}\n")
    _, resolved = _json(*ws, "model", "resolve", BUNDLE)
    model_file = next(r["path"] for r in resolved["roles"] if r["path"])
    _, new = _json(
        *ws,
        "run",
        "new",
        "--dataset",
        "myaku",
        "--base",
        BUNDLE,
        "--set",
        "execution.executor=host",
        "--set",
        "training.sample_prompts=[]",
    )
    run = new["run"]
    commands: list[tuple[str, list[str | Path]]] = [
        ("init", ["init", tmp_path / "fresh"]),
        ("run new", [*ws, "run", "new", "--dataset", "myaku", "--base", BUNDLE]),
        ("schema", [*ws, "schema", "run"]),
        ("backend list", [*ws, "backend", "list"]),
        ("dataset add", [*ws, "dataset", "add", "more", folder]),
        ("dataset inspect", [*ws, "dataset", "inspect", "myaku"]),
        ("dataset inspect", [*ws, "dataset", "inspect", folder]),
        ("dataset set", [*ws, "dataset", "set", "myaku", "intent.task=character"]),
        ("dataset validate", [*ws, "dataset", "validate", "myaku"]),
        ("dataset list", [*ws, "dataset", "list"]),
        ("model bundles", [*ws, "model", "bundles", "--arch", "flux2"]),
        ("model resolve", [*ws, "model", "resolve", BUNDLE]),
        ("model check", [*ws, "model", "check", model_file]),
        ("model check", [*ws, "model", "check", folder / "0.txt"]),
        ("model verify", [*ws, "model", "verify", BUNDLE]),
        ("model lock", [*ws, "model", "lock", BUNDLE]),
        ("gpus", [*ws, "gpus"]),
        ("estimate", [*ws, "estimate", "--base", BUNDLE, "--gpu", "rtx-4090"]),
        ("image build", [*ws, "image", "build", "musubi"]),
        ("run compile", [*ws, "run", "compile", run]),
        ("run estimate", [*ws, "run", "estimate", run, "--gpu", "rtx-4090"]),
        ("run plan", [*ws, "run", "plan", run, "--gpu", "rtx-4090"]),
        ("run approve", [*ws, "run", "approve", run]),
        ("run launch", [*ws, "run", "launch", run, "--foreground"]),
        ("run status", [*ws, "run", "status", finished]),
        ("run watch", [*ws, "run", "watch", finished]),
        ("run logs", [*ws, "run", "logs", finished]),
        ("run list", [*ws, "run", "list"]),
        ("run cancel", [*ws, "run", "cancel", run]),
        ("run evaluate", [*ws, "run", "evaluate", finished, "--rating", "4", "--epoch", "2"]),
        ("export lora", [*ws, "export", "lora", finished]),
        ("export merge-ema", [*ws, "export", "merge-ema", finished]),
        (
            "knowledge promote",
            [*ws, "knowledge", "promote", finished, "--arch", "flux2", "--task", "character"],
        ),
        ("knowledge show", [*ws, "knowledge", "show", "flux2", "--backend", "musubi-tuner"]),
        ("knowledge sync", [*ws, "knowledge", "sync", "flux2"]),
        ("knowledge regret", [*ws, "knowledge", "regret", finished, "fp8 -> check the skin"]),
    ]
    wrong: list[str] = []
    for name, argv in commands:
        code, doc = _json(*argv)
        decision = DECISIONS[name]
        if "error" in doc:
            wrong.append(f"{name}: exit {code}: {doc['error']['message']}")
        elif doc.get("kind") != decision.kind:
            wrong.append(f"{name}: kind {doc.get('kind')!r}, decided {decision.kind!r}")
        elif ("next" in doc) != decision.next:
            wrong.append(
                f"{name}: next {'present' if 'next' in doc else 'absent'}, decided "
                f"{'present' if decision.next else 'absent'}"
            )
        elif "next" in doc and not _well_formed(doc["next"]):
            wrong.append(f"{name}: next is not a list of {{command, why}}: {doc['next']}")
        wrong += [f"{name}: {synonym}" for synonym in synonyms(doc)]
    assert wrong == []
    assert {name for name, _ in commands} | {
        name for name, d in DECISIONS.items() if d.why and d.next
    } >= {name for name, d in DECISIONS.items() if d.next}, "a next decision nobody checks"


def test_follow_ups_name_the_documents_own_objects(web: WebWorkspace, tmp_path: Path) -> None:
    """The steps point at what the document is about: its run, dataset, bundle, file."""
    ws = ["-w", str(web.workspace.root)]
    _, inspected = _json(*ws, "dataset", "inspect", str(tmp_path))
    assert inspected["next"][0]["command"] == f"kura dataset add NAME {tmp_path}"
    _, listed = _json(*ws, "dataset", "list")
    assert [s["command"] for s in listed["next"]] == []  # every dataset is ready
    _, bad = _json(*ws, "model", "check", str(tmp_path / "nothing.safetensors"))
    assert bad["ok"] is False and bad["next"][0]["command"].startswith("kura model verify ")
    _, exported = _json(*ws, "export", "lora", web.finished)
    commands = [s["command"] for s in exported["next"]]
    assert commands[0].startswith(f"cp {exported['out']} ") and "ComfyUI" in commands[0]
    assert f"kura knowledge promote {web.finished}" in commands  # its architecture and task


def test_sweep_documents_next() -> None:
    report = {"sweep": "sw-1", "best": {"number": 3}}
    assert nexts.after_sweep_report(report)[0]["command"] == "kura sweep promote sw-1"
    assert nexts.after_sweep_report({"sweep": "sw-1", "best": None})[0]["command"] == (
        "kura sweep worker sw-1"
    )
    running = {"sweep": "sw-1", "approved": True, "trials": 4, "counts": {"complete": 2}}
    assert [s["command"] for s in nexts.after_sweep_status(running)] == [
        "kura sweep worker sw-1",
        "kura sweep report sw-1",
    ]
    done = {**running, "counts": {"complete": 3, "failed": 1}}
    assert [s["command"] for s in nexts.after_sweep_status(done)] == ["kura sweep report sw-1"]
    unapproved = {**running, "approved": False}
    assert nexts.after_sweep_status(unapproved)[0]["command"] == "kura sweep plan sw-1"
    collect = nexts.after_sweep_collect({"sweep": "sw-1", "counts": {"missing": 2}})
    assert "2 artifact(s)" in collect[0]["why"] and collect[-1]["command"] == (
        "kura sweep report sw-1"
    )
    promoted = nexts.after_sweep_promote({"card": "knowledge/zimage.md", "section": "style"})
    assert "knowledge/zimage.md" in promoted[0]["why"]


def test_model_documents_next() -> None:
    failed = {"bundle": "zimage-base", "ok": False, "files": []}
    assert nexts.after_model_fetch(failed)[0]["command"] == "kura model fetch zimage-base"
    fetched = nexts.after_model_fetch({**failed, "ok": True})
    assert fetched[0]["command"] == "kura model lock zimage-base"
    verify = {
        "target": "zimage-base",
        "target_kind": "bundle",
        "ok": False,
        "files": [{"path": "/m/dit.safetensors", "status": "mismatch"}],
    }
    assert nexts.after_model_verify(verify)[0]["command"] == "kura model fetch zimage-base"
    assert nexts.after_model_verify({**verify, "ok": True}) == []


def test_an_import_documents_next() -> None:
    doc = {"bundle": "aitk-flux1-dev", "backend": "ai-toolkit", "gpu": None}
    (step,) = nexts.after_import(doc)
    assert step["command"].endswith("--base aitk-flux1-dev --backend ai-toolkit")
    assert "--gpu" in step["why"]
    assert nexts.after_import({**doc, "bundle": None}) == []


def test_the_demo_documents_next() -> None:
    steps = nexts.after_demo({"workspace": "/tmp/demo ws"})
    assert steps[0]["command"] == "kura --workspace '/tmp/demo ws' run list"


def test_backend_docs() -> None:
    listed = {
        "backends": [
            {"name": "kohakumoss", "present": False, "kura_installs": True},
            {"name": "musubi-tuner", "present": None, "kura_installs": False},
            {"name": "ai-toolkit", "present": False, "kura_installs": False},
        ]
    }
    assert [s["command"] for s in nexts.after_backend_list(listed)] == [
        "kura backend install kohakumoss",
        "kura doctor ai-toolkit",
    ]
    installed = nexts.after_backend_install({"backend": "kohakumoss"})
    assert installed[0]["command"] == "kura doctor kohakumoss"


def test_people_read_the_same_next_steps(web: WebWorkspace) -> None:
    out = io.StringIO()
    argv = ["-w", str(web.workspace.root), "dataset", "set", "myaku", "intent.task=character"]
    assert main(argv, stdout=out) == 0
    assert "next: `kura dataset validate myaku` — check it with what you recorded" in (
        out.getvalue()
    )


def test_a_backend_doctor_points_at_each_fix_that_is_a_command() -> None:
    doc = {
        "scope": "kohakumoss",
        "ok": False,
        "findings": [
            {
                "check": "environment",
                "status": "fail",
                "detail": "missing",
                "fix": "kura backend install kohakumoss",
            },
            {"check": "gpu", "status": "warn", "detail": "no GPU", "fix": "run on a GPU machine"},
            {"check": "python", "status": "ok", "detail": "3.11", "fix": ""},
        ],
    }
    assert [s["command"] for s in nexts.after_backend_doctor(doc)] == [
        "kura backend install kohakumoss"
    ]
    ready = {"scope": "kohakumoss", "ok": True, "findings": []}
    assert nexts.after_backend_doctor(ready)[0]["command"].endswith("--backend kohakumoss")


def test_an_image_build_says_run_it_then_check_it() -> None:
    printed = {"backend": "ai-toolkit", "ran": False, "exit_code": None}
    assert nexts.after_image_build(printed)[0]["command"] == "kura image build ai-toolkit --run"
    failed = {**printed, "ran": True, "exit_code": 1}
    assert "rerun" in nexts.after_image_build(failed)[0]["why"]
    built = {**printed, "ran": True, "exit_code": 0}
    assert nexts.after_image_build(built)[0]["command"] == "kura doctor ai-toolkit"


def test_a_whatif_estimate_leads_to_a_run() -> None:
    doc = {
        "whatif": {"bundle": "zimage-base"},
        "backend": "musubi-tuner",
        "verdict": {"fits": False},
    }
    (step,) = nexts.after_whatif(doc)
    assert step["command"] == (
        "kura run new --dataset NAME --base zimage-base --backend musubi-tuner"
    )
    assert "memory aids" in step["why"]
