"""Benchmark the web pages at 50 and 500 runs, one of them live, against the framework's
own floor.

    .venv/bin/python bench/web_pages.py [--requests 200] [--runs 50,500] [--dir DIR]

Builds the demo workspace (``kura demo``) and copies its run up to each ``--runs`` count,
the newest one "training" under a supervisor that is alive (bench/many_runs.py), then
requests the run list, another (finished) run's page and the live run's page
``--requests`` times each, sequentially through FastAPI's TestClient, after one warm-up
request. The reference is the same framework and client serving a constant HTML string of
the same size from a bare route, so the difference is the work the page itself does. Prints
p50/p95 wall time and the CPU time a request (the figure shared load disturbs least).
Targets: p50 < 20 ms at 500 runs; each page within 3x of itself at 50 runs.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from many_runs import SRC, build_many_runs


def timings(get: Callable[[], object], count: int) -> tuple[list[float], float]:
    """Wall milliseconds of each call, and the CPU milliseconds a call."""
    get()
    found = []
    cpu = time.process_time()
    for _ in range(count):
        started = time.perf_counter()
        get()
        found.append((time.perf_counter() - started) * 1000)
    return found, (time.process_time() - cpu) * 1000 / count


def report(label: str, measured: tuple[list[float], float]) -> float:
    values, cpu = measured
    ordered = sorted(values)
    p50 = statistics.median(ordered)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    print(f"{label:<30} p50 {p50:7.2f} ms   p95 {p95:7.2f} ms   CPU {cpu:6.2f} ms")
    return p50


def run(workspace: Path, pages: dict[str, str], count: int) -> None:
    sys.path.insert(0, str(SRC))
    from fastapi import FastAPI
    from fastapi.responses import HTMLResponse
    from fastapi.testclient import TestClient

    from kura.web.app import create_app
    from kura.workspace import Workspace

    client = TestClient(create_app(Workspace(workspace)), base_url="http://127.0.0.1")
    for label, url in pages.items():
        response = client.get(url)
        assert response.status_code == 200, (url, response.status_code)
        body = response.text
        reference_app = FastAPI()

        @reference_app.get("/", response_class=HTMLResponse)
        def constant(body: str = body) -> HTMLResponse:
            return HTMLResponse(body)

        reference = TestClient(reference_app, base_url="http://127.0.0.1")
        print(f"  {label} ({len(body):,} bytes), {count} requests:")
        page = report("    kura", timings(lambda url=url: client.get(url), count))
        floor = report(
            "    reference (constant HTML)", timings(lambda ref=reference: ref.get("/"), count)
        )
        print(f"    ratio: {page / floor:.1f}x the reference")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--runs", default="50,500")
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    for runs in [int(n) for n in args.runs.split(",")]:
        folder = Path(tempfile.mkdtemp(prefix=f"kura-bench-web-{runs}-", dir=args.dir))
        many = build_many_runs(folder, runs, live=True)
        try:
            assert many.live is not None
            other = many.finished[len(many.finished) // 2]
            print(f"{runs} runs, {many.live} live:")
            pages = {
                "run list  /": "/",
                "another run's page": f"/runs/{other}",
                "the live run's page": f"/runs/{many.live}",
            }
            run(many.workspace, pages, args.requests)
        finally:
            many.stop()
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
