"""The gate after approval: model files, the approval record itself, the plan pair, the
datasets the trainer reads, and a run that already ran (issue 15 §1, issue 12 items 1–2)."""

from __future__ import annotations

import io
import json
import os
import shutil
import threading
from datetime import datetime
from pathlib import Path

import pytest
from PIL import Image

from kura.errors import CheckFailed, StateConflict
from kura.runs.approval import approve_run, check_approval
from kura.runs.launching import launch_run, relaunch_run, resume_run
from kura.runs.new import create_run
from kura.runs.plan import plan_run
from kura.workspace import Workspace
from tests.runs.fake_checkout import set_mode, use_fake_checkout

BUNDLE = "flux2-klein-base-4b"


@pytest.fixture
def host_ws(ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    use_fake_checkout(ws, tmp_path, BUNDLE, monkeypatch)
    return ws


def _new(ws: Workspace, hour: int = 8, *extra: str) -> str:
    return create_run(
        ws,
        datasets=["myaku"],
        base=BUNDLE,
        sets=["execution.executor=host", "training.epochs=2", *extra],
        now=datetime(2026, 11, 30, hour, 0),
    ).run_id


def _approved(ws: Workspace) -> str:
    run_id = _new(ws)
    plan_run(ws, run_id, gpu="rtx-4090")
    approve_run(ws, run_id)
    return run_id


def _lock(ws: Workspace, run_id: str) -> dict:
    return json.loads((ws.run_dir(run_id) / "compiled" / "run.lock").read_text())


def _role_path(ws: Workspace, run_id: str, slot: str) -> Path:
    return Path(os.path.realpath(_lock(ws, run_id)["models"]["roles"][slot]["path"]))


def _refused(ws: Workspace, run_id: str, pattern: str) -> CheckFailed:
    with pytest.raises(CheckFailed, match=pattern) as info:
        launch_run(ws, run_id, detach=False)
    assert not (ws.run_dir(run_id) / "state.json").exists(), "nothing may start"
    return info.value


def _rewrite_keeping_stat(path: Path, change) -> None:  # type: ignore[no-untyped-def]
    before = path.stat()
    data = bytearray(path.read_bytes())
    change(data)
    path.write_bytes(bytes(data))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


# --- model files (issue 15 §1) -------------------------------------------------------


def test_a_dit_swapped_for_the_vae_is_refused_naming_file_and_role(host_ws: Workspace) -> None:
    run_id = _approved(host_ws)
    dit, vae = _role_path(host_ws, run_id, "dit"), _role_path(host_ws, run_id, "vae")
    shutil.copyfile(vae, dit)
    error = _refused(host_ws, run_id, r"model file for dit \(dit\)")
    assert "flux2-klein-base-4b.safetensors" in error.message


def test_a_truncated_model_file_is_refused(host_ws: Workspace) -> None:
    run_id = _approved(host_ws)
    vae = _role_path(host_ws, run_id, "vae")
    with open(vae, "r+b") as handle:
        handle.truncate(vae.stat().st_size - 8)
    _refused(host_ws, run_id, r"model file for vae \(vae\).*bytes, the approved file had")


def test_a_data_byte_changed_in_place_with_its_mtime_restored_is_refused(
    host_ws: Workspace,
) -> None:
    run_id = _approved(host_ws)
    vae = _role_path(host_ws, run_id, "vae")

    def flip(data: bytearray) -> None:
        data[-1] ^= 0xFF

    _rewrite_keeping_stat(vae, flip)
    _refused(host_ws, run_id, r"model file for vae \(vae\)")


def test_a_deleted_model_file_is_refused(host_ws: Workspace) -> None:
    run_id = _approved(host_ws)
    _role_path(host_ws, run_id, "text_encoder").unlink()
    _refused(host_ws, run_id, r"model file for text_encoder .* is gone")


def test_an_unchanged_model_file_is_not_rehashed(
    host_ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kura.models import digests

    run_id = _approved(host_ws)
    calls: list[Path] = []
    real = digests.hash_file
    monkeypatch.setattr(digests, "hash_file", lambda p, progress=None: calls.append(p) or real(p))
    from kura.runs.approval import check_gate

    check_gate(host_ws, run_id)
    assert calls == []


# --- the approval record and the plan pair --------------------------------------------


def test_an_edited_contingency_in_the_approval_is_refused(host_ws: Workspace) -> None:
    run_id = _approved(host_ws)
    path = host_ws.run_dir(run_id) / "approval.json"
    record = json.loads(path.read_text())
    assert record["contingency"] is not None
    record["contingency"]["change"] = {"mixed_precision": "fp16", "max_data_loader_n_workers": 64}
    path.write_text(json.dumps(record))
    with pytest.raises(CheckFailed, match="edited after approval"):
        check_approval(host_ws, run_id)
    with pytest.raises(CheckFailed, match="edited after approval"):
        relaunch_run(host_ws, run_id, detach=False)


def test_an_approval_with_its_digest_recomputed_still_matches_only_its_plan(
    host_ws: Workspace,
) -> None:
    """Even a forger who recomputes record_digest cannot approve a contingency the plan did
    not contain: the contingency must be plan.json's (and plan.json is bound by digest)."""
    from kura.runs.approval import _record_digest
    from kura.schema.approval import ApprovalRecord

    run_id = _approved(host_ws)
    path = host_ws.run_dir(run_id) / "approval.json"
    record = ApprovalRecord.model_validate_json(path.read_text())
    assert record.contingency is not None
    forged = record.model_copy(
        update={"contingency": record.contingency.model_copy(update={"change": {"x": 1}})}
    )
    forged = forged.model_copy(update={"record_digest": _record_digest(forged)})
    path.write_text(forged.model_dump_json())
    with pytest.raises(CheckFailed, match="does not match the plan it approved"):
        check_approval(host_ws, run_id)


def test_plan_files_from_two_plans_are_not_approved(host_ws: Workspace) -> None:
    run_id = _new(host_ws)
    plan_run(host_ws, run_id, gpu="rtx-4090")
    old_md = (host_ws.run_dir(run_id) / "plan.md").read_text()
    plan_run(host_ws, run_id, gpu="h100-sxm")
    (host_ws.run_dir(run_id) / "plan.md").write_text(old_md)  # as if killed between writes
    with pytest.raises(CheckFailed, match="not from the same plan"):
        approve_run(host_ws, run_id)


def test_a_hand_edited_plan_json_gets_the_file_key_and_fix(host_ws: Workspace) -> None:
    from kura.errors import SpecError

    run_id = _new(host_ws)
    plan_run(host_ws, run_id, gpu="rtx-4090")
    path = host_ws.run_dir(run_id) / "plan.json"
    record = json.loads(path.read_text())
    record["surprise"] = 1
    path.write_text(json.dumps(record))
    with pytest.raises(SpecError, match=r"plan\.json.*unknown key `surprise`") as info:
        approve_run(host_ws, run_id)
    assert "kura run plan" in info.value.hint


# --- datasets (issue 15 §1, issue 12 item 1) --------------------------------------------


def test_a_dataset_file_rewritten_in_place_with_its_mtime_restored_is_seen(
    host_ws: Workspace,
) -> None:
    run_id = _approved(host_ws)
    caption = host_ws.dataset_dir("myaku") / "media" / "0.txt"

    def swap(data: bytearray) -> None:
        data[:5] = b"other"

    _rewrite_keeping_stat(caption, swap)
    _refused(host_ws, run_id, "dataset myaku changed after approval")


def test_media_pointed_at_a_copy_is_refused(host_ws: Workspace) -> None:
    run_id = _approved(host_ws)
    folder = host_ws.dataset_dir("myaku")
    shutil.copytree(folder / "media", folder / "copy")
    spec = folder / "dataset.yaml"
    spec.write_text(spec.read_text().replace("media: media", "media: copy"))
    _refused(host_ws, run_id, "dataset myaku now points at .*copy but run .* reads")


def _truncated_jpeg(path: Path) -> None:
    buffer = io.BytesIO()
    Image.new("RGB", (512, 512), (10, 200, 30)).save(buffer, "JPEG")
    path.write_bytes(buffer.getvalue()[:-400])


def test_plan_rechecks_files_added_since_the_inspection(host_ws: Workspace) -> None:
    run_id = _new(host_ws)
    media = host_ws.dataset_dir("myaku") / "media"
    _truncated_jpeg(media / "late.jpg")
    (media / "late.txt").write_text("myaku, late\n")
    report = plan_run(host_ws, run_id, gpu="rtx-4090").to_dict()
    dataset = next(c for c in report["checks"] if c["check"] == "dataset myaku")
    assert dataset["status"] == "failed" and dataset["blocking"]
    assert dataset["files"] == ["late.jpg"]
    assert report["next"][0]["command"] == "kura dataset validate myaku"
    with pytest.raises(CheckFailed, match=r"blocking problems: late\.jpg \(broken-media\)"):
        approve_run(host_ws, run_id)


def test_approve_names_the_files_changed_since_the_plan(host_ws: Workspace) -> None:
    run_id = _new(host_ws)
    plan_run(host_ws, run_id, gpu="rtx-4090")
    (host_ws.dataset_dir("myaku") / "media" / "1.txt").write_text("myaku, rewritten\n")
    with pytest.raises(CheckFailed, match=r"changed since the plan was made: 1\.txt"):
        approve_run(host_ws, run_id)


def test_launch_names_a_broken_file_rather_than_a_changed_dataset(host_ws: Workspace) -> None:
    run_id = _approved(host_ws)
    _truncated_jpeg(host_ws.dataset_dir("myaku") / "media" / "late.jpg")
    _refused(host_ws, run_id, r"blocking problems: late\.jpg")


# --- a run that already ran (issue 12 item 2) -------------------------------------------


def test_launching_a_finished_run_again_is_refused_with_the_commands_that_apply(
    host_ws: Workspace,
) -> None:
    run_id = _approved(host_ws)
    assert launch_run(host_ws, run_id, detach=False).state.status == "succeeded"
    lora = host_ws.run_dir(run_id) / "output" / f"{run_id}.safetensors"
    before = lora.read_bytes()
    with pytest.raises(StateConflict, match="already ran") as info:
        launch_run(host_ws, run_id, detach=False)
    # A finished run trains no further on resume: a new run from it is the way on.
    assert f"kura run new --from {run_id}" in info.value.hint
    assert "resume" not in info.value.hint
    assert lora.read_bytes() == before


def test_each_attempt_keeps_its_own_logs_and_outputs(host_ws: Workspace) -> None:
    run_id = _approved(host_ws)
    checkout = Path(host_ws.config().executor.musubi_checkout or "")
    set_mode(checkout, "oom")
    assert launch_run(host_ws, run_id, detach=False).state.status == "failed"
    first_log = (host_ws.run_dir(run_id) / "logs" / "train.log").read_text()
    with pytest.raises(StateConflict, match="already ran") as info:
        launch_run(host_ws, run_id, detach=False)
    assert f"kura run relaunch {run_id}" in info.value.hint
    set_mode(checkout, "ok")
    assert relaunch_run(host_ws, run_id, detach=False).state.status == "succeeded"
    archived = host_ws.run_dir(run_id) / "attempts" / "1"
    assert (archived / "logs" / "train.log").read_text() == first_log
    current = (host_ws.run_dir(run_id) / "logs" / "train.log").read_text()
    assert "out of memory" not in current.lower()
    assert (host_ws.run_dir(run_id) / "output" / f"{run_id}.safetensors").is_file()


def test_resume_needs_a_run_that_ran(host_ws: Workspace) -> None:
    run_id = _approved(host_ws)
    with pytest.raises(StateConflict, match="never been launched"):
        resume_run(host_ws, run_id, detach=False)


def test_relaunch_shows_what_actually_ran_in_the_plan(host_ws: Workspace) -> None:
    run_id = _approved(host_ws)
    checkout = Path(host_ws.config().executor.musubi_checkout or "")
    set_mode(checkout, "oom")
    launch_run(host_ws, run_id, detach=False)
    set_mode(checkout, "ok")
    relaunch_run(host_ws, run_id, detach=False)
    plan = json.loads((host_ws.run_dir(run_id) / "plan.json").read_text())
    assert plan["attempts"][0]["attempt"] == 2
    (key, change), *_ = plan["attempts"][0]["change"].items()
    text = (host_ws.run_dir(run_id) / "plan.md").read_text()
    assert "## Attempt 2: what changed" in text
    assert f"- {key}: {change['from']} → {change['to']}" in text


# --- a plan that does not fit (the generic guard behind --accept-risk) ------------------


def test_a_plan_that_does_not_fit_is_approved_only_with_a_reason(host_ws: Workspace) -> None:
    run_id = _new(host_ws, 8, "training.network.rank=1024")
    report = plan_run(host_ws, run_id, gpu="rtx-3060-12g").to_dict()
    assert report["fits"] is False
    assert any("--accept-risk" in step["command"] for step in report["next"])
    with pytest.raises(CheckFailed, match="does not fit") as info:
        approve_run(host_ws, run_id)
    assert "--accept-risk" in info.value.hint
    assert not (host_ws.run_dir(run_id) / "approval.json").exists()
    approval = approve_run(host_ws, run_id, accept_risk="testing the OOM path on purpose")
    assert approval.accepted_risk is not None
    assert approval.accepted_risk["reason"] == "testing the OOM path on purpose"
    record = check_approval(host_ws, run_id)
    assert record.accepted_risk is not None and record.accepted_risk.problems


def test_the_cli_records_an_accepted_risk(kura, host_ws: Workspace) -> None:
    run_id = _new(host_ws, 8, "training.network.rank=1024")
    plan_run(host_ws, run_id, gpu="rtx-3060-12g")
    refused = kura("-w", host_ws.root, "run", "approve", run_id, "--json")
    assert refused.exit_code == 1
    assert "--accept-risk" in refused.json()["error"]["hint"]
    done = kura(
        "-w", host_ws.root, "run", "approve", run_id, "--accept-risk", "on purpose", "--json"
    )
    assert done.exit_code == 0, done.stdout
    assert done.json()["accepted_risk"]["reason"] == "on purpose"
    assert done.json()["next"][0]["command"] == f"kura run launch {run_id}"


def test_watch_json_follows_with_one_document_per_line_and_the_final_last(
    kura, host_ws: Workspace
) -> None:
    from tests.cli.test_json_contract import strict_json

    run_id = _approved(host_ws)
    checkout = Path(host_ws.config().executor.musubi_checkout or "")
    set_mode(checkout, "slow")
    launch_run(host_ws, run_id, detach=True)
    from kura.runs.following import cancel

    stopper = threading.Timer(2.0, cancel, (host_ws, run_id))
    stopper.start()
    try:
        result = kura("-w", host_ws.root, "run", "watch", run_id, "--interval", "0.2", "--json")
    finally:
        stopper.join()
    assert result.exit_code == 0, result.stderr
    documents = [strict_json(line) for line in result.stdout.splitlines()]
    assert len(documents) >= 2
    assert all(d["kind"] == "run-status" for d in documents)
    assert documents[-1]["state"]["status"] == "cancelled"
    assert all(d["state"]["status"] != "cancelled" for d in documents[:-1])


def test_watch_exits_11_on_a_failed_run_after_its_final_document(kura, host_ws: Workspace) -> None:
    from tests.cli.test_json_contract import strict_json

    run_id = _approved(host_ws)
    set_mode(Path(host_ws.config().executor.musubi_checkout or ""), "crash")
    assert launch_run(host_ws, run_id, detach=False).state.status == "failed"
    watched = kura("-w", host_ws.root, "run", "watch", run_id, "--json")
    assert watched.exit_code == 11, watched.stdout
    (line,) = watched.stdout.splitlines()
    document = strict_json(line)
    assert (document["kind"], document["contract"]) == ("run-status", 2)
    assert document["state"]["status"] == "failed"
    assert kura("-w", host_ws.root, "run", "watch", run_id).exit_code == 11
