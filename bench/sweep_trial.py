"""A sweep trial's cost: Kura's worker against a bare Optuna loop over the same toy trainer.

    .venv/bin/python bench/sweep_trial.py [--trials 8]

Both use journal storage and run the tests' toy trainer (``tests/backends/toy/toy_trainer.py``,
8 steps of 10 ms) as a subprocess per trial, on a 5-image dataset. Kura's side is
``kura.sweep.worker.run_worker`` after ``new_sweep``/``plan_sweep``/``approve_sweep``: each
trial is an ordinary run (run.yaml, plan, compile, launch, follow, record). The bare loop
asks Optuna for the same two values, writes the trainer's config and runs it. The difference
per trial is Kura's bookkeeping (issue 27's target: < 150 ms a trial).

Both sides are timed per trial from the study's own stamps: the steady cost of a trial is
the median time between one trial's completion and the next's (the first trial, which pays
for one-time imports, the first caches and the fork server's warm-up, is left out and the
whole loop's time per trial is printed beside it). Bytecode caches are written, as an
installed Kura has them (a ``PYTHONDONTWRITEBYTECODE`` in the environment is dropped).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TRAINER = REPO / "tests" / "backends" / "toy" / "toy_trainer.py"
SPACE = """\
axes:
  training.learning_rate: {low: 1.0e-5, high: 1.0e-2, log: true}
  training.network.rank: {choices: [16, 32]}
objective: {metric: heldout_loss, validation_fraction: 0.2}
early_stop: {enabled: false}
"""


def kura_seconds(root: Path, trials: int) -> tuple[float, float]:
    """Seconds of ``run_worker`` for ``trials`` trials (set-up and approval not counted),
    and the steady seconds a trial (:func:`steady`)."""
    sys.path[:0] = [str(REPO), str(REPO / "src")]
    os.environ["KURA_BACKEND_MODULES"] = "toy-trainer=tests.backends.toy.backend"
    os.environ["PYTHONPATH"] = f"{REPO}{os.pathsep}{REPO / 'src'}"
    os.environ["HF_HUB_CACHE"] = str(root / "hf-cache")
    from tests.sweep.conftest import BUNDLE, base_run, write_folder

    from kura.dataset.registry import add_dataset, set_dataset_values
    from kura.initialize import init_workspace
    from kura.models.bundles import get_bundle
    from kura.models.standins import install_bundle_in_hub_cache
    from kura.sweep.envelope import approve_sweep, plan_sweep
    from kura.sweep.new import new_sweep
    from kura.sweep.records import load_sweep
    from kura.sweep.worker import run_worker

    install_bundle_in_hub_cache(get_bundle(BUNDLE), root / "hf-cache")
    workspace, _ = init_workspace(root / "ws")
    add_dataset(workspace, "myaku", write_folder(root / "incoming", 5), resolution=(1024, 1024))
    set_dataset_values(workspace, "myaku", ["intent.task=character"])
    (root / "space.yaml").write_text(SPACE)
    sweep = new_sweep(
        workspace, base_run=base_run(workspace), space=root / "space.yaml", trials=trials
    )
    plan_sweep(workspace, sweep["sweep"], gpu="h100-pcie")
    approve_sweep(workspace, sweep["sweep"])
    started = time.perf_counter()
    run_worker(workspace, sweep["sweep"], gpu="h100-pcie", seed=3)
    elapsed = time.perf_counter() - started
    from kura.sweep.study import load_study

    study = load_study(workspace, load_sweep(workspace, sweep["sweep"]))
    return elapsed, steady(study)


def steady(study: object) -> float:
    """Median seconds between consecutive trials' completions, the first trial left out."""
    ends = sorted(t.datetime_complete for t in study.trials if t.datetime_complete)  # type: ignore[attr-defined]
    gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(ends)]
    return statistics.median(gaps)


def bare_seconds(root: Path, trials: int) -> tuple[float, float]:
    """Seconds of a bare Optuna loop (journal storage) running the toy trainer per trial."""
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    data = root / "bare-data"
    data.mkdir()
    for index in range(4):
        (data / f"{index}.txt").write_text("x")
    cache = root / "bare-cache"
    base = {"cache_dir": str(cache), "datasets": [str(data)], "validation": [str(data)]}
    base |= {"steps": 8, "batch": 1, "shrink_activations": False}
    prepare = root / "prepare.json"
    prepare.write_text(json.dumps(base))
    subprocess.run([sys.executable, str(TRAINER), "prepare", str(prepare)], check=True)
    storage = JournalStorage(JournalFileBackend(str(root / "bare.journal")))
    study = optuna.create_study(storage=storage, sampler=optuna.samplers.TPESampler(seed=3))

    def objective(trial: optuna.Trial) -> float:
        config = base | {
            "learning_rate": trial.suggest_float("learning_rate", 1e-5, 1e-2, log=True),
            "rank": trial.suggest_categorical("rank", [16, 32]),
            "output_dir": str(root / f"bare-out-{trial.number}"),
        }
        path = root / f"bare-{trial.number}.json"
        path.write_text(json.dumps(config))
        out = subprocess.run(
            [sys.executable, str(TRAINER), "train", str(path)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        return float(out.split("val_loss=")[1].split()[0])

    started = time.perf_counter()
    study.optimize(objective, n_trials=trials)
    return time.perf_counter() - started, steady(study)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=8)
    args = parser.parse_args()
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.dont_write_bytecode = False
    with tempfile.TemporaryDirectory(prefix="kura-bench-sweep-") as tmp:
        bare, bare_steady = bare_seconds(Path(tmp), args.trials)
        kura, kura_steady = kura_seconds(Path(tmp), args.trials)
    print(f"trials: {args.trials} (toy trainer, journal storage)")
    print(
        f"bare Optuna loop: {1000 * bare_steady:.0f} ms/trial steady, "
        f"{1000 * bare / args.trials:.0f} ms/trial over the whole loop"
    )
    print(
        f"Kura's worker:    {1000 * kura_steady:.0f} ms/trial steady, "
        f"{1000 * kura / args.trials:.0f} ms/trial over the whole loop"
    )
    print(
        f"Kura's bookkeeping: {1000 * (kura_steady - bare_steady):.0f} ms/trial steady "
        "(target < 150)"
    )


if __name__ == "__main__":
    main()
