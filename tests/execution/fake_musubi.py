"""A test double for Musubi Tuner's train and cache scripts (not a trainer).

It prints what Musubi 0.3.4 prints (startup lines, ``epoch N/M``, a tqdm bar with
``desc="steps"`` redrawn with carriage returns on stderr, ``saving checkpoint: …``), writes a
real tiny LoRA safetensors file per epoch into ``--output_dir`` named like Musubi
(``<name>-000001.safetensors`` …, then ``<name>.safetensors``), and TensorBoard scalars
(``loss/current``, ``loss/average``, ``lr/unet``, ``loss/epoch``) under
``<logging_dir>/<YYYYmmddHHMMSS>/network_train/``.

Mode (``--fake_mode`` or ``FAKE_MUSUBI_MODE``): ok, oom, crash, hang, nan, slow.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import struct
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tfevents_writer import EventWriter

OOM_TRACE = """Traceback (most recent call last):
  File "/app/musubi-tuner/src/musubi_tuner/wan_train_network.py", line 482, in <module>
    main()
  File "/app/musubi-tuner/src/musubi_tuner/training/trainer_base.py", line 2050, in train
    loss, loss_metrics = self.process_batch(
  File "/usr/lib/python3/site-packages/torch/nn/modules/module.py", line 1762, in _call_impl
    return forward_call(*args, **kwargs)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total \
capacity of 23.55 GiB of which 1.12 GiB is free. Including non-PyTorch memory, this process \
has 22.41 GiB memory in use. Of the allocated memory 21.87 GiB is allocated by PyTorch, and \
301.45 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is \
large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  \
See documentation for Memory Management  \
(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)
"""


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="wan_train_network.py")
    parser.add_argument("--output_dir")
    parser.add_argument("--output_name", default="lora")
    parser.add_argument("--logging_dir")
    parser.add_argument("--max_train_epochs", type=int, default=2)
    parser.add_argument("--steps_per_epoch", type=int, default=3)
    parser.add_argument("--fake_mode", default=os.environ.get("FAKE_MUSUBI_MODE", "ok"))
    parser.add_argument("--fake_child_pidfile")
    parser.add_argument("--fake_spam_bytes", type=int, default=0)
    parser.add_argument("--fake_step_seconds", type=float, default=0.0)
    parser.add_argument("--fake_env_report")
    return parser.parse_args()


def write_lora(path: Path, epoch: int) -> None:
    """A real safetensors file: 8-byte header length, JSON header, raw little-endian data."""
    values = [0.01 * epoch, -0.02, 0.03, 0.04]
    data = struct.pack("<4f", *values)
    header = {
        "__metadata__": {"ss_epoch": str(epoch), "ss_network_module": "networks.lora_wan"},
        "lora_unet_blocks_0_self_attn_q.lora_down.weight": {
            "dtype": "F32",
            "shape": [2, 2],
            "data_offsets": [0, len(data)],
        },
    }
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data)


def start_child(pidfile: str | None) -> None:
    if not pidfile:
        return
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    Path(pidfile).write_text(str(child.pid))


def bar(n: int, total: int, loss: str | None, seconds: float) -> str:
    pct = int(100 * n / total) if total else 0
    filled = "█" * (pct // 10) + " " * (10 - pct // 10)
    remaining = int((total - n) * max(seconds, 1.0))
    rate = f"{max(seconds, 1.0):.2f}s/it" if n else "?it/s"
    post = f", avr_loss={loss}" if loss is not None else ""
    eta = f"{remaining // 60:02d}:{remaining % 60:02d}" if n else "?"
    return f"\rsteps: {pct:3d}%|{filled}| {n}/{total} [00:{n:02d}<{eta}, {rate}{post}]"


def main() -> int:
    args = parse_args()
    mode = args.fake_mode
    token = os.environ.get("HF_TOKEN")
    digest = hashlib.sha256(token.encode()).hexdigest() if token else "unset"
    print(f"HF_TOKEN sha256={digest}", flush=True)
    if args.fake_env_report:
        Path(args.fake_env_report).write_text(
            json.dumps({k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")})
        )
    print("INFO:musubi_tuner.wan_train_network:Loading DiT model from /models/dit.safetensors")
    print("stdout line from the fake", flush=True)
    print("stderr line from the fake", file=sys.stderr, flush=True)
    if args.fake_spam_bytes:
        chunk = "x" * 1023 + "\n"
        for _ in range(args.fake_spam_bytes // 2048 + 1):
            sys.stdout.write(chunk)
            sys.stderr.write(chunk)
        sys.stdout.flush()
        sys.stderr.flush()
    if mode == "crash":
        raise RuntimeError("fake failure inside the test double")
    epochs, per_epoch = args.max_train_epochs, args.steps_per_epoch
    if mode == "slow":
        per_epoch, args.fake_step_seconds = 10_000, max(args.fake_step_seconds, 0.05)
    total = epochs * per_epoch
    print("running training / 学習開始")
    print(f"  num epochs / epoch数: {epochs}")
    print(f"  total optimization steps / 学習ステップ数: {total}", flush=True)
    if mode in ("hang", "slow"):
        start_child(args.fake_child_pidfile)
    if mode == "hang":
        while True:
            time.sleep(1)
    writer = None
    if args.logging_dir:
        stamp = time.strftime("%Y%m%d%H%M%S")
        writer = EventWriter(Path(args.logging_dir) / stamp / "network_train")
    sys.stderr.write(bar(0, total, None, 0))
    step = 0
    losses: list[float] = []
    for epoch in range(1, epochs + 1):
        print(f"\nepoch {epoch}/{epochs}", flush=True)
        for _ in range(per_epoch):
            step += 1
            if args.fake_step_seconds:
                time.sleep(args.fake_step_seconds)
            if mode == "oom" and step == 2:
                sys.stderr.write("\n" + OOM_TRACE)
                return 1
            current = 0.1 + 0.01 * (step % 3)
            losses.append(current)
            average = sum(losses) / len(losses)
            shown = "nan" if mode == "nan" and step >= 2 else f"{average:.4f}"
            sys.stderr.write(bar(step, total, shown, 1.0))
            sys.stderr.flush()
            if writer is not None:
                writer.add(
                    step, {"loss/current": current, "loss/average": average, "lr/unet": 1e-4}
                )
            if mode == "nan" and step >= 3:
                sys.stderr.write("\nValueError: loss is nan, stopping\n")
                return 2
        if writer is not None:
            writer.add(epoch, {"loss/epoch": sum(losses) / len(losses)})
        if args.output_dir and epoch < epochs:
            path = Path(args.output_dir) / f"{args.output_name}-{epoch:06d}.safetensors"
            print(f"\nsaving checkpoint: {path}", flush=True)
            write_lora(path, epoch)
    if args.output_dir:
        path = Path(args.output_dir) / f"{args.output_name}.safetensors"
        print(f"\nsaving checkpoint: {path}", flush=True)
        write_lora(path, epochs)
    print("INFO:musubi_tuner.training.trainer_base:model saved.", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
