"""Shared helpers for the web tests."""

from __future__ import annotations

import re
from pathlib import Path

from starlette.testclient import TestClient

from kura.web.app import create_app
from kura.workspace import Workspace

LOCAL = "http://127.0.0.1"


def client(workspace: Workspace, token: str | None = None, base_url: str = LOCAL) -> TestClient:
    return TestClient(create_app(workspace, token=token), base_url=base_url)


def csrf_of(html: str) -> str:
    match = re.search(r'name="csrf" value="([^"]+)"', html)
    assert match, "no CSRF field in the page"
    return match.group(1)


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root`` with its size and modification time."""
    return {
        str(path.relative_to(root)): (path.stat().st_size, path.stat().st_mtime_ns)
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }
