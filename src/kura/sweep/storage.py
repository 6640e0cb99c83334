"""Where a sweep's study lives: Optuna's journal file (default) or PostgreSQL (a fleet).

``journal`` is ``sweeps/<id>/study.journal``, an append-only log on this machine (or a
shared file system); ``postgresql://user@host:port/db`` reaches a server every GPU machine
can see. A password is never written to ``sweep.json``: pass it through ``PGPASSWORD`` or
``~/.pgpass`` (libpq reads both); one given in the URL is used and then forgotten.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from kura.errors import CheckFailed, UsageError

__all__ = ["JOURNAL", "JOURNAL_NAME", "open_storage", "redact"]

JOURNAL = "journal"
JOURNAL_NAME = "study.journal"
CONNECT_TIMEOUT_S = 5


def redact(url: str) -> str:
    """The URL without its password (what sweep.json and messages show)."""
    if url == JOURNAL:
        return url
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}@{host}" if parts.username else host
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def _sqlalchemy_url(url: str) -> str:
    scheme, _, rest = url.partition("://")
    if scheme in ("postgresql", "postgres"):
        return f"postgresql+psycopg://{rest}"
    if scheme == "postgresql+psycopg":
        return url
    raise UsageError(
        f"--storage {redact(url)!r} is not a storage Kura opens",
        hint="use `journal` (the default: a file in the sweep folder) or "
        "postgresql://user@host:port/database for several machines",
    )


def open_storage(url: str, folder: Path) -> Any:
    """An Optuna storage for ``url``; an unreachable server is a CheckFailed naming it."""
    if url == JOURNAL:
        from optuna.storages import JournalStorage
        from optuna.storages.journal import JournalFileBackend, JournalFileOpenLock

        path = folder / JOURNAL_NAME
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = JournalFileOpenLock(str(path))
        return JournalStorage(JournalFileBackend(str(path), lock_obj=lock))
    from optuna.storages import RDBStorage
    from sqlalchemy.exc import SQLAlchemyError

    try:
        return RDBStorage(
            _sqlalchemy_url(url),
            engine_kwargs={"connect_args": {"connect_timeout": CONNECT_TIMEOUT_S}},
        )
    except (SQLAlchemyError, OSError) as exc:
        first = str(getattr(exc, "orig", exc)).strip().splitlines()[0] if str(exc) else repr(exc)
        raise CheckFailed(
            f"cannot reach the sweep storage {redact(url)}: {first}",
            hint="start PostgreSQL there (or check host, port, database and credentials: "
            "PGPASSWORD or ~/.pgpass), pass --storage with a reachable URL, or use the "
            "journal file (omit --storage) on one machine; nothing of the sweep was changed",
        ) from None
