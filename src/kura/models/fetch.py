"""Download a bundle's files with huggingface_hub and check what arrived.

Files go to the Hugging Face cache (``dest="cache"``, shared with every other tool) or to
the workspace ``models/<repo>/<filename>`` (``dest="models"``). The token comes only from
``HF_TOKEN`` and is handed to huggingface_hub in memory; Kura never stores it. Within one
download huggingface_hub resumes an interrupted transfer with HTTP ``Range`` requests (its
``http_get`` retries transient failures from the byte already received); an interrupted
process leaves nothing to resume, so a second ``kura model fetch`` starts that file again.
After each download Kura checks the size, the sha256 where published, and the header role.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from kura.errors import NetworkError, NotFound, Unsupported, UsageError, file_system_error
from kura.models.bundles import Bundle, FileSpec, get_bundle
from kura.models.digests import DigestCache
from kura.models.hfcache import hf_cache_dir, hf_endpoint, hf_token
from kura.models.resolve import judge_file
from kura.nextsteps import NextStep, next_list

__all__ = [
    "DESTINATIONS",
    "Downloaded",
    "FetchResult",
    "FetchedFile",
    "fetch_bundle",
    "shard_filenames",
]

FETCHED = ("ok", "warning", "unverified", "skipped")
"""The statuses of a file that serves once fetched."""


@dataclass(frozen=True)
class Downloaded:
    """What arrived of one file: its other ``shards``, size, sha256 (and where that came
    from) and the component its header names."""

    shards: tuple[str, ...]
    size: int
    sha256: str
    sha256_source: str
    component: str | None


@dataclass(frozen=True)
class FetchedFile:
    """One role's file of ``kura model fetch``: where it went (``path``; None for a
    repository snapshot the trainer downloads itself, ``downloaded`` None then) and its
    status with the problems and warnings the checks found."""

    slot: str
    repo: str
    filename: str | None
    revision: str
    status: str
    path: str | None
    downloaded: Downloaded | None
    problems: tuple[str, ...]
    warnings: tuple[str, ...]

    def to_dict(self) -> dict[str, object]:
        document: dict[str, object] = {
            "slot": self.slot,
            "repo": self.repo,
            "filename": self.filename,
            "revision": self.revision,
            "status": self.status,
            "path": self.path,
        }
        if self.downloaded is not None:
            got = self.downloaded
            document.update(
                shards=list(got.shards),
                size=got.size,
                sha256=got.sha256,
                sha256_source=got.sha256_source,
                component=got.component,
            )
        document["problems"] = list(self.problems)
        document["warnings"] = list(self.warnings)
        return document


@dataclass(frozen=True)
class FetchResult:
    """``kura model fetch``: each asked role's file of ``bundle`` at ``dest``; ``ok`` when
    every one serves."""

    bundle: str
    dest: str
    files: tuple[FetchedFile, ...]
    next: tuple[NextStep, ...] = ()

    kind: ClassVar[str] = "model-fetch"

    @property
    def ok(self) -> bool:
        return all(f.status in FETCHED for f in self.files)

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "bundle": self.bundle,
            "dest": self.dest,
            "ok": self.ok,
            "files": [f.to_dict() for f in self.files],
            "next": next_list(*self.next),
        }


DESTINATIONS = ("cache", "models")
_SHARD_RE = re.compile(r"^(?P<stem>.+)-(?P<index>\d{5})-of-(?P<count>\d{5})\.safetensors$")


def shard_filenames(filename: str) -> list[str]:
    """All shard names of a ``…-00001-of-0000N.safetensors`` filename (itself otherwise)."""
    found = _SHARD_RE.match(filename)
    if not found:
        return [filename]
    count = found["count"]
    return [
        f"{found['stem']}-{i:0{len(count)}d}-of-{count}.safetensors"
        for i in range(1, int(count) + 1)
    ]


def fetch_bundle(
    bundle: Bundle | str,
    *,
    slots: Sequence[str] = (),
    dest: str = "cache",
    models_dir: Path | None = None,
    hf_cache: Path | None = None,
    digests: DigestCache | None = None,
) -> FetchResult:
    """Download the files of ``bundle`` (all roles, or ``slots``) and validate each."""
    bundle = get_bundle(bundle) if isinstance(bundle, str) else bundle
    if not bundle.supported:
        raise Unsupported(
            f"bundle {bundle.id} is not supported by {bundle.backend}: {bundle.note}",
            hint="choose another bundle (`kura model bundles`)",
        )
    if dest not in DESTINATIONS:
        raise UsageError(f"unknown destination {dest!r}", hint="use --dest cache or --dest models")
    if dest == "models" and models_dir is None:
        raise UsageError(
            "--dest models needs a workspace", hint="run inside a workspace, or use --dest cache"
        )
    unknown = [s for s in slots if s not in bundle.slots]
    if unknown:
        raise UsageError(
            f"bundle {bundle.id} has no role {unknown[0]!r}",
            hint=f"its roles: {', '.join(bundle.slots)}",
        )
    digests = digests or DigestCache()
    cache = hf_cache or hf_cache_dir()
    entries = []
    for spec in bundle.files:
        if slots and spec.slot not in slots:
            continue
        entries.append(_fetch_one(bundle, spec, dest, models_dir, cache, digests))
    return FetchResult(bundle=bundle.id, dest=dest, files=tuple(entries))


def _fetch_one(
    bundle: Bundle,
    spec: FileSpec,
    dest: str,
    models_dir: Path | None,
    cache: Path,
    digests: DigestCache,
) -> FetchedFile:
    if spec.format == "hf-repo" or spec.filename is None:
        return FetchedFile(
            slot=spec.slot,
            repo=spec.repo,
            filename=spec.filename,
            revision=spec.revision,
            status="skipped",
            path=None,
            downloaded=None,
            problems=(),
            warnings=("a repository snapshot: the trainer downloads it by id",),
        )
    paths = [
        _download(spec, name, dest, models_dir, cache) for name in shard_filenames(spec.filename)
    ]
    verdict = judge_file(paths[0], spec, bundle, source="downloaded")
    problems = list(verdict.problems)
    record = digests.digest(paths[0], verify=spec.sha256 is not None)
    if spec.sha256 is not None and record.sha256 != spec.sha256:
        problems.append(f"sha256 {record.sha256} differs from the published {spec.sha256}")
    return FetchedFile(
        slot=spec.slot,
        repo=spec.repo,
        filename=spec.filename,
        revision=spec.revision,
        status="refused" if problems else verdict.status,
        path=str(paths[0]),
        downloaded=Downloaded(
            shards=tuple(str(p) for p in paths[1:]),
            size=paths[0].stat().st_size,
            sha256=record.sha256,
            sha256_source=record.source,
            component=verdict.report.component if verdict.report else None,
        ),
        problems=tuple(problems),
        warnings=tuple(verdict.warnings),
    )


def _download(
    spec: FileSpec, filename: str, dest: str, models_dir: Path | None, cache: Path
) -> Path:
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import (
        EntryNotFoundError,
        GatedRepoError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    where = f"{spec.repo}/{filename}@{spec.revision}"
    kwargs: dict[str, Any] = {
        "revision": spec.revision,
        "token": hf_token(),
        "endpoint": hf_endpoint(),
    }
    if dest == "models":
        assert models_dir is not None
        kwargs["local_dir"] = models_dir / spec.repo
    else:
        kwargs["cache_dir"] = cache
    try:
        return Path(hf_hub_download(spec.repo, filename, **kwargs))
    except GatedRepoError:
        raise NetworkError(
            f"{spec.repo} is gated: the hub refused {where}",
            hint=f"accept the licence at https://huggingface.co/{spec.repo} and export HF_TOKEN "
            "with a token that can read it",
        ) from None
    except LocalEntryNotFoundError as error:
        raise NetworkError(
            f"cannot reach the hub for {where}: {error}",
            hint="check the network (or HF_ENDPOINT) and try again",
        ) from None
    except RepositoryNotFoundError:
        raise NotFound(
            f"the hub has no repository {spec.repo} (or it is private)",
            hint="export HF_TOKEN if it is private",
        ) from None
    except (EntryNotFoundError, RevisionNotFoundError):
        raise NotFound(
            f"the hub has no file {where}", hint="the bundle table may be out of date: report it"
        ) from None
    except HfHubHTTPError as error:
        raise NetworkError(
            f"the hub answered an error for {where}: {error}",
            hint="try again later; partial data is not kept",
        ) from None
    except OSError as error:
        if error.errno is not None:  # the disk refused (a connection error carries none)
            raise file_system_error(error) from None
        raise NetworkError(
            f"downloading {where} failed: {error}",
            hint="check free disk space and the network, then run the command again",
        ) from None
