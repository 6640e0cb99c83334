"""CLI start-up time: `kura --help` and `kura --json gpus` against two references.

References: `python -c pass` (the interpreter alone) and a click-only group's `--help` (the
framework alone). Prints the median of N runs of each; no assertion (a bench, not a test).

    .venv/bin/python bench/cli_startup.py [--runs 15]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

CLICK_ONLY = (
    "import click\n"
    "@click.group()\n"
    "def cli():\n    'x'\n"
    "@cli.command()\n"
    "def a():\n    'a'\n"
    "cli(['--help'], standalone_mode=False)\n"
)
CASES = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "click-only --help": [sys.executable, "-c", CLICK_ONLY],
    "kura --help": [sys.executable, "-m", "kura", "--help"],
    "kura --json gpus": [sys.executable, "-m", "kura", "--json", "gpus"],
}


def median_seconds(argv: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    base = None
    for name, argv in CASES.items():
        seconds = median_seconds(argv, runs)
        base = base or seconds
        print(f"{name:20s} {seconds * 1000:7.1f} ms  ({seconds / base:4.1f}x python -c pass)")


if __name__ == "__main__":
    main()
