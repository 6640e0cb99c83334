"""Benchmark the web pages on the demo workspace against the framework's own floor.

    .venv/bin/python bench/web_pages.py [--requests 200] [--dir DIR]

Builds the demo workspace (``kura demo``) in ``--dir`` (a temporary folder by default),
then requests the run list and the run page ``--requests`` times each through FastAPI's
TestClient, after one warm-up request. The reference is the same framework and client
serving a constant HTML string of the same size from a bare route, so the difference is
the work the page itself does.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def build_demo(folder: Path) -> Path:
    workspace = folder / "workspace"
    if not (workspace / "runs").is_dir():
        subprocess.run(
            [sys.executable, "-m", "kura", "demo", str(folder)],
            check=True,
            capture_output=True,
            env={**os.environ, "PYTHONPATH": str(SRC)},
        )
    return workspace


def timings(get: Callable[[], object], count: int) -> list[float]:
    get()
    found = []
    for _ in range(count):
        started = time.perf_counter()
        get()
        found.append((time.perf_counter() - started) * 1000)
    return found


def report(label: str, values: list[float]) -> float:
    ordered = sorted(values)
    p50 = statistics.median(ordered)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    print(f"{label:<34} p50 {p50:7.2f} ms   p95 {p95:7.2f} ms")
    return p50


def run(workspace: Path, count: int) -> None:
    sys.path.insert(0, str(SRC))
    from fastapi import FastAPI
    from fastapi.responses import HTMLResponse
    from fastapi.testclient import TestClient

    from kura.runs.store import list_run_ids
    from kura.web.app import create_app
    from kura.workspace import Workspace

    ws = Workspace(workspace)
    client = TestClient(create_app(ws), base_url="http://127.0.0.1")
    run_id = list_run_ids(ws)[-1]
    pages = {"run list  /": "/", f"run page  /runs/{run_id}": f"/runs/{run_id}"}
    for label, url in pages.items():
        response = client.get(url)
        assert response.status_code == 200, (url, response.status_code)
        body = response.text
        reference_app = FastAPI()

        @reference_app.get("/", response_class=HTMLResponse)
        def constant(body: str = body) -> HTMLResponse:
            return HTMLResponse(body)

        reference = TestClient(reference_app, base_url="http://127.0.0.1")
        print(f"{label} ({len(body):,} bytes), {count} requests:")
        page = report("  kura", timings(lambda url=url: client.get(url), count))
        floor = report(
            "  reference (constant HTML)", timings(lambda ref=reference: ref.get("/"), count)
        )
        print(f"  ratio: {page / floor:.1f}x the reference")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    folder = args.dir or Path(tempfile.mkdtemp(prefix="kura-bench-web-"))
    try:
        run(build_demo(folder), args.requests)
    finally:
        if args.dir is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
