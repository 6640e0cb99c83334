"""A test double standing in for AI-Toolkit's ``run.py`` (never the real program).

Reads Kura's job file and behaves the way ``run.py`` + ``BaseSDTrainProcess`` do at
27a03a9, on a small scale: prints the job banner, a tqdm-style bar on stderr redrawn with
``\\r`` (``<name>:  n%|…| i/N [mm:ss<mm:ss,  x.xxs/it, lr: … loss: …]``), writes
``loss_log.db`` rows (the UILogger schema, key ``loss/loss``) every ``log_every`` steps,
samples as ``samples/<ms>__<step:09d>_<i>.jpg`` and LoRA files
``<name>_<step:09d>.safetensors`` / ``<name>.safetensors`` into
``<training_folder>/<process name>``, and prints ``#### IMPORTANT RESUMING FROM … ####``
when a checkpoint of the name is already there. ``KURA_FAKE_AITK`` chooses a failure:
``oom`` (three skipped batches, then the RuntimeError and a non-zero exit), ``sigint``
(interrupts itself at step 3: "Job stopped", exit 0), ``crash`` (an error).
"""

import os
import signal
import sqlite3
import sys
import time

import yaml

MODE = os.environ.get("KURA_FAKE_AITK", "ok")
LORA = b"\x08\x00\x00\x00\x00\x00\x00\x00{}      "


def write(path, data):
    with open(path, "wb") as handle:
        handle.write(data)


def bar(name, step, total, loss):
    pct = int(100 * step / total)
    timing = f"[00:0{step % 10}<00:10,  1.25s/it, lr: 1.0e-04 loss: {loss:.3e}]"
    sys.stderr.write(f"\r{name}:  {pct}%|##| {step}/{total} {timing}")
    sys.stderr.flush()


def main():
    with open(sys.argv[1]) as handle:
        job = yaml.safe_load(handle)
    name = job["config"]["name"]
    process = job["config"]["process"][0]
    root = os.path.join(process["training_folder"], process["name"])
    os.makedirs(os.path.join(root, "samples"), exist_ok=True)
    print(f"Running 1 job\n# Running job: {name}", flush=True)
    steps = process["train"]["steps"]
    save_every = process["save"]["save_every"]
    log_every = process["logging"]["log_every"]
    sample = process.get("sample")
    start = 0
    saved = sorted(f for f in os.listdir(root) if f.startswith(name) and f.endswith(".safetensors"))
    if saved:
        print(f"#### IMPORTANT RESUMING FROM {os.path.join(root, saved[-1])} ####", flush=True)
        start = int(saved[-1][len(name) + 1 : -len(".safetensors")] or 0)
    db = sqlite3.connect(os.path.join(root, "loss_log.db"))
    db.executescript(
        "CREATE TABLE IF NOT EXISTS steps (step INTEGER PRIMARY KEY, wall_time REAL NOT NULL);"
        "CREATE TABLE IF NOT EXISTS metric_keys (key TEXT PRIMARY KEY, first_seen_step INTEGER,"
        " last_seen_step INTEGER);"
        "CREATE TABLE IF NOT EXISTS metrics (step INTEGER NOT NULL, key TEXT NOT NULL,"
        " value_real REAL, value_text TEXT, PRIMARY KEY (step, key));"
    )
    try:
        if MODE == "oom":
            print("Caching latents for dataset", flush=True)
            for n in range(1, 4):
                print(
                    f"\n################################################\n"
                    f"# OOM during training step, skipping batch {n}/3 #\n"
                    f"################################################\n",
                    flush=True,
                )
            print(
                "Error running job: OOM during training step 3 times in a row, aborting training",
                flush=True,
            )
            raise RuntimeError("OOM during training step 3 times in a row, aborting training")
        if MODE == "crash":
            print("Error running job: Model path /nope does not exist", flush=True)
            raise ValueError("Model path /nope does not exist")
        for step in range(start + 1, steps + 1):
            loss = 1.0 / step
            bar(name, step, steps, loss)
            if step % log_every == 0:
                db.execute("INSERT OR REPLACE INTO steps VALUES (?, ?)", (step, time.time()))
                db.execute(
                    "INSERT OR REPLACE INTO metrics VALUES (?, 'loss/loss', ?, NULL)", (step, loss)
                )
                db.execute(
                    "INSERT OR REPLACE INTO metrics VALUES (?, 'learning_rate', 1e-4, NULL)",
                    (step,),
                )
                db.commit()
            if sample and step % sample["sample_every"] == 0:
                for i, _ in enumerate(sample["samples"]):
                    stamp = int(time.time() * 1000)
                    write(os.path.join(root, "samples", f"{stamp}__{step:09d}_{i}.jpg"), b"jpg")
            if step % save_every == 0 and step != steps:
                write(os.path.join(root, f"{name}_{step:09d}.safetensors"), LORA)
            if MODE == "sigint" and step == 3:
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(1)
            time.sleep(0.01)
        write(os.path.join(root, f"{name}.safetensors"), LORA)
        print(
            "\n\n========================================\nResult:\n - 1 completed job\n"
            "========================================",
            flush=True,
        )
    except KeyboardInterrupt:
        print(
            "\n========================================\nJob stopped\n"
            "========================================",
            flush=True,
        )
        sys.exit(0)


if __name__ == "__main__":
    main()
