"""`kura run list` at 50 and 500 runs (one live), CPU time and wall, beside two references.

The first listing reads every run.yaml (and keeps what it shows in the user cache); the
ones after it read only what changed. References, measured in the same run: `kura --json
gpus` (Kura's start-up with a command that reads no run) and the workspace's files read raw
(every run.yaml and state.json, bytes only, in one process: the floor of touching each run
once). It also prints what one run.yaml costs to parse (see ``PARSE``), most of a first
listing. Target: < 0.5 s CPU at 500 runs.

    .venv/bin/python bench/run_list.py [--runs 50,500] [--repeats 3] [--dir DIR]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from many_runs import SRC, build_many_runs

PARSE = (
    "import sys, time, pathlib, yaml\n"
    "from kura import plainyaml\n"
    "texts = [p.read_text() for p in sorted(pathlib.Path(sys.argv[1]).glob('*/run.yaml'))]\n"
    "def per_file(read):\n"
    "    started = time.process_time()\n"
    "    for text in texts: read(text)\n"
    "    return (time.process_time() - started) / len(texts) * 1000\n"
    "quick = per_file(plainyaml.quick_build)\n"
    "full = per_file(lambda t: plainyaml.full_load(t, source='run.yaml'))\n"
    "c_loader = per_file(lambda t: yaml.load(t, Loader=yaml.CSafeLoader))\n"
    "print(f'{quick:.2f} {full:.2f} {c_loader:.2f}')\n"
)
"""Milliseconds of CPU a run.yaml takes to parse: Kura's quick path (plain data built from
libyaml's events), its full path (PyYAML's composer and constructor over the same events,
with Kura's refusals) and, as the reference, PyYAML's own C loader (no refusals, YAML 1.1)."""

RAW_READ = (
    "import sys, pathlib\n"
    "for p in sorted(pathlib.Path(sys.argv[1]).glob('*/run.yaml')):\n"
    "    p.read_bytes(); (p.parent / 'state.json').read_bytes()\n"
)


def measure(argv: list[str], cwd: Path, repeats: int) -> tuple[float, float]:
    """Median (CPU seconds, wall seconds) of ``argv`` run ``repeats`` times."""
    cpus, walls = [], []
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run(argv, cwd=cwd, check=True, capture_output=True, env=env)
        walls.append(time.perf_counter() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(cpus), statistics.median(walls)


def line(label: str, figures: tuple[float, float]) -> None:
    cpu, wall = figures
    print(f"  {label:<40} CPU {cpu * 1000:7.0f} ms   wall {wall * 1000:7.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default="50,500")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    for count in [int(n) for n in args.runs.split(",")]:
        folder = Path(tempfile.mkdtemp(prefix=f"kura-bench-list-{count}-", dir=args.dir))
        many = build_many_runs(folder, count, live=True)
        try:
            ws = many.workspace
            print(f"{count} runs (one live):")
            kura = [sys.executable, "-m", "kura", "--json"]
            listing = [*kura, "run", "list"]
            line("kura --json run list, first", measure(listing, ws, 1))
            line("kura --json run list, again", measure(listing, ws, args.repeats))
            line("reference: kura --json gpus", measure([*kura, "gpus"], ws, args.repeats))
            raw = [sys.executable, "-c", RAW_READ, str(ws / "runs")]
            line("reference: raw read of each run's files", measure(raw, ws, args.repeats))
            parse = [sys.executable, "-c", PARSE, str(ws / "runs")]
            env = {**os.environ, "PYTHONPATH": str(SRC)}
            quick, full, c_loader = subprocess.run(
                parse, check=True, capture_output=True, text=True, env=env
            ).stdout.split()
            print(
                f"  parse one run.yaml: quick path {quick} ms, full path {full} ms;"
                f" reference: PyYAML's C loader {c_loader} ms (CPU)"
            )
        finally:
            many.stop()
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
