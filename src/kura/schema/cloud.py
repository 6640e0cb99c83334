"""The SkyPilot settings a person gives once: ``[skypilot]`` in kura.toml, and
``execution.skypilot`` in run.yaml to override any of them for one run.

Every field is optional in both places; the run's value wins over the workspace's
(:meth:`SkyPilotSettings.over`). What a launch cannot do without (an output bucket for a run
that writes, an accelerator name for the planned GPU class) is checked by ``kura run plan``
(:mod:`kura.runs.cloud`), so a plan that cannot launch says so before approval.
"""

from __future__ import annotations

from pydantic import Field, field_validator, model_validator

from kura.schema.base import StrictModel
from kura.schema.machine import MachineFile

__all__ = ["BUCKET_SCHEMES", "CloudJobFile", "SkyPilotLaunch", "SkyPilotSettings"]

BUCKET_SCHEMES = ("s3", "gs", "r2", "cos", "oci")
"""Bucket URL schemes SkyPilot's ``Storage`` mounts by ``source`` (``sky/data/storage.py``,
``StoreType.from_store_url``); Azure's ``https://…blob.core.windows.net`` is not offered: its
URL names no bucket scheme Kura can sync back from."""


class SkyPilotSettings(StrictModel):
    bucket: str | None = Field(
        None,
        description="Where a SkyPilot run's outputs go (e.g. s3://my-bucket/kura): each run "
        "writes under <bucket>/<run id>/, and `kura run collect` copies them back.",
    )
    cloud: str | None = Field(None, description="Pin one cloud (aws, gcp, …); any when unset.")
    region: str | None = Field(None, description="Pin one region of that cloud.")
    use_spot: bool | None = Field(
        None, description="Spot (preemptible) instances; on-demand when unset or false."
    )
    disk_size_gb: int | None = Field(
        None, ge=50, le=65536, description="The VM's disk in GB (SkyPilot's default when unset)."
    )

    @field_validator("bucket")
    @classmethod
    def _bucket_url(cls, bucket: str | None) -> str | None:
        if bucket is None:
            return None
        scheme, sep, rest = bucket.partition("://")
        if not sep or scheme not in BUCKET_SCHEMES or not rest.strip("/"):
            raise ValueError(
                f"bucket {bucket!r} is not a bucket URL: write "
                + " or ".join(f"{s}://NAME[/PATH]" for s in BUCKET_SCHEMES)
            )
        if "$" in bucket:
            raise ValueError("bucket holds a '$', which SkyPilot expands in file_mounts")
        return bucket.rstrip("/")

    @model_validator(mode="after")
    def _region_names_a_cloud(self) -> SkyPilotSettings:
        if self.region is not None and self.cloud is None:
            raise ValueError("skypilot.region needs skypilot.cloud (a region is a cloud's)")
        return self

    def over(self, defaults: SkyPilotSettings) -> SkyPilotSettings:
        """These settings, each unset one taken from ``defaults``."""
        merged = defaults.model_dump()
        merged.update(self.model_dump(exclude_none=True))
        return SkyPilotSettings.model_validate(merged)


class SkyPilotLaunch(StrictModel):
    """A SkyPilot run's resolved launch settings as the plan made them: plan.json carries
    them (bound by its digest in approval.json, which copies them), and launch runs these
    and refuses when the settings resolved now differ (:mod:`kura.runs.cloud`)."""

    accelerator: str = Field(description="SkyPilot's name of the planned GPU class (H100, …).")
    count: int = Field(ge=1, description="GPUs on the one node (run.yaml execution.gpus).")
    settings: SkyPilotSettings = Field(
        description="kura.toml [skypilot] under run.yaml execution.skypilot, resolved."
    )


class CloudJobFile(MachineFile):
    """``runs/<id>/cloud-job.json``: the managed job as SkyPilot last reported it, when
    that was, and when the outputs were collected after it ended (once; a failed collect
    is retried at the next refresh). Written by ``kura run status|watch`` and the web page
    (:mod:`kura.runs.cloudfollow`)."""

    job_name: str
    job_id: int | None
    status: str
    recovery_count: int
    failure_reason: str | None
    checked_at: float
    collected_at: str | None = None
    collect_error: str | None = None
