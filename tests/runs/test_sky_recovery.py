"""A managed job SkyPilot recovers runs the task's ``run`` script again on a new machine,
the bucket folders as the preempted attempt left them. Simulated here: the launched task's
own script runs twice on this machine, its writable mounts a folder stand-in bucket, the
trainer a recording fake that saves a Musubi state and dies the first time. The second
start resumes with Musubi's own ``--resume <newest state>`` (``kura run resume``'s argv,
:meth:`MusubiBackend.resume_arguments`), skips the cache steps the first finished, and the
attempt record comes back with ``kura run collect``."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

from kura.execution.attempts import job_attempts
from kura.runs.approval import approve_run
from kura.runs.collect import FolderTransport, collect_outputs
from kura.runs.launching import launch_run
from kura.runs.plan import plan_run
from kura.workspace import Workspace
from kura.yamlio import load_yaml
from tests.runs.skypilot_run import SKYPILOT_TOML, new_sky_run, sky_ws

__all__ = ["sky_ws"]  # the fixture

FAKE_TRAINER = """#!{python}
import json, os, sys
argv = sys.argv[1:]
with open({calls!r}, "a") as handle:
    handle.write(json.dumps([os.path.basename(sys.argv[0]), *argv]) + "\\n")
if os.path.basename(sys.argv[0]) == "accelerate":
    output = argv[argv.index("--output_dir") + 1]
    name = argv[argv.index("--output_name") + 1]
    if "--resume" not in argv:  # the first attempt: one epoch saved, then preempted
        os.makedirs(os.path.join(output, name + "-000001-state"))
        open(os.path.join(output, name + "-000001.safetensors"), "wb").write(b"lora-1")
        sys.exit(137)
    open(os.path.join(output, name + ".safetensors"), "wb").write(b"lora-final")
"""


def _machine(tmp_path: Path) -> tuple[Path, Path]:
    """A bin folder with fake ``python`` and ``accelerate``, and the trainer's checkout."""
    bin_dir, checkout = tmp_path / "vm-bin", tmp_path / "musubi-tuner"
    bin_dir.mkdir()
    checkout.mkdir()
    for name in ("python", "accelerate"):
        path = bin_dir / name
        path.write_text(
            FAKE_TRAINER.format(python=sys.executable, calls=str(tmp_path / "trainer.jsonl"))
        )
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return bin_dir, checkout


def _start_job(script: str, bin_dir: Path) -> int:
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    return subprocess.run(["bash", "-c", script], env=env, check=False).returncode


def test_a_recovered_job_resumes_from_the_last_state_in_the_bucket(
    sky_ws: Workspace, tmp_path: Path
) -> None:
    with sky_ws.config_path.open("a") as handle:
        handle.write(SKYPILOT_TOML)
    run_id = new_sky_run(sky_ws)
    plan_run(sky_ws, run_id, gpu="h100-sxm")
    approve_run(sky_ws, run_id)
    launch_run(sky_ws, run_id, detach=False)
    task = load_yaml(sky_ws.run_dir(run_id) / "sky-task.yaml")
    bucket = tmp_path / "bucket"  # s3://kura-test-bucket/ as a folder
    mounted = bucket / "runs" / run_id  # the run's prefix: output/, logs/, cache/
    for folder in ("output", "logs", "cache"):  # SkyPilot mounts each bucket folder
        (mounted / folder).mkdir(parents=True)
    bin_dir, checkout = _machine(tmp_path)
    script = (
        task["run"].replace("/kura/run", str(mounted)).replace("/opt/musubi-tuner", str(checkout))
    )

    assert _start_job(script, bin_dir) == 137  # preempted in training
    assert _start_job(script, bin_dir) == 0  # SkyPilot's recovery runs `run` again

    calls = [json.loads(line) for line in (tmp_path / "trainer.jsonl").read_text().splitlines()]
    assert [c[0] for c in calls] == ["python", "python", "accelerate", "accelerate"]
    first, second = calls[2], calls[3]
    state = f"{mounted}/output/{run_id}-000001-state"
    assert "--resume" not in first
    assert second == [*first, "--resume", state]

    collect_outputs(sky_ws, run_id, transport=FolderTransport(bucket))
    attempts = job_attempts(sky_ws.run_dir(run_id))
    assert [(a.number, a.resumed_from) for a in attempts] == [(1, None), (2, state)]
    assert (sky_ws.run_dir(run_id) / "output" / f"{run_id}.safetensors").read_bytes() == (
        b"lora-final"
    )


def test_the_resuming_task_still_loads_with_skypilot(sky_ws: Workspace, tmp_path: Path) -> None:
    from tests.execution.skypilot_own_code import load_with_skypilot

    with sky_ws.config_path.open("a") as handle:
        handle.write(SKYPILOT_TOML)
    run_id = new_sky_run(sky_ws)
    plan_run(sky_ws, run_id, gpu="h100-sxm")
    approve_run(sky_ws, run_id)
    launch_run(sky_ws, run_id, detach=False)
    [loaded] = load_with_skypilot([sky_ws.run_dir(run_id) / "sky-task.yaml"], tmp_path / "home")
    assert "error" not in loaded, loaded
    assert loaded["has_run"]
