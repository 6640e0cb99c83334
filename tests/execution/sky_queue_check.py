"""Run in SkyPilot's own environment (never imported by Kura or its tests): parse the argv
Kura runs for a job's state with SkyPilot's own ``sky jobs queue`` command (click's
parser, no API server touched) and print, as one JSON document, the parameters SkyPilot
read and a queue of ``ManagedJobRecord`` dumps as ``--output json`` prints them
(``sky/client/cli/command.py``, ``jobs_queue``: ``r.model_dump(mode='json')``)."""

from __future__ import annotations

import json
import sys

from sky.client.cli.command import jobs_queue
from sky.jobs.state import ManagedJobStatus
from sky.schemas.api.responses import ManagedJobRecord


def main(name: str, argv: list[str]) -> None:
    context = jobs_queue.make_context("queue", list(argv))
    records = [
        ManagedJobRecord(job_id=6, job_name=name, status=ManagedJobStatus.FAILED,
                         recovery_count=0, failure_reason="preempted too often"),
        ManagedJobRecord(job_id=7, job_name=name, status=ManagedJobStatus.RECOVERING,
                         recovery_count=2),
        ManagedJobRecord(job_id=9, job_name="another-job", status=ManagedJobStatus.RUNNING,
                         recovery_count=0),
    ]  # fmt: skip
    print(
        json.dumps(
            {
                "params": context.params,
                "queue": json.dumps([r.model_dump(mode="json") for r in records]),
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
