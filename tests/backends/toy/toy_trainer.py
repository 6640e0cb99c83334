"""A trainer of the tests' own invention ("toy"), driven by the toy backend (a test double).

``toy_trainer.py prepare CACHE.json`` writes ``prepared.txt`` into the cache folder (the
caching pass a sweep shares between trials); ``train CONFIG`` refuses to start without it,
prints ``toy: step i/N loss=x`` lines, ``toy: val_loss=x`` when validation datasets are
given, and writes ``output/toy-lora.safetensors``. Its losses are a smooth function of the
learning rate and rank (best near lr 3e-4, rank 32), so a search has something to find.
A file ``mode`` beside this script set to ``oom`` makes training fail the way the toy's
device would: ``ToyOOM: device memory exhausted at batch B`` and exit 3; ``crash`` makes it
fail for a reason no memory aid fixes (``ToyError: the toy device fell over``, exit 5).
"""

import json
import math
import sys
import time
from pathlib import Path

verb, config_path = sys.argv[1], Path(sys.argv[2])
config = json.loads(config_path.read_text())
cache = Path(config["cache_dir"])
if verb == "prepare":
    cache.mkdir(parents=True, exist_ok=True)
    listing = sorted(str(p) for d in config["datasets"] for p in Path(d).iterdir())
    (cache / "prepared.txt").write_text("\n".join(listing) + "\n")
    print(f"toy: prepared {len(listing)} files", flush=True)
    sys.exit(0)
output = Path(config["output_dir"])
output.mkdir(parents=True, exist_ok=True)
mode_file = Path(__file__).with_name("mode")
mode = mode_file.read_text().strip() if mode_file.exists() else "ok"
if not (cache / "prepared.txt").is_file():
    print(f"ToyError: no cache at {cache}; run the prepare step first", flush=True)
    sys.exit(4)
if mode == "crash":
    print("ToyError: the toy device fell over", flush=True)
    sys.exit(5)
if mode == "oom" and not config["shrink_activations"]:
    print(f"ToyOOM: device memory exhausted at batch {config['batch']}", flush=True)
    sys.exit(3)
lr = float(config.get("learning_rate", 1e-4))
rank = int(config.get("rank", 16))
floor = 0.2 + 0.3 * (math.log10(lr) - math.log10(3e-4)) ** 2 + 0.02 * abs(math.log2(rank / 32))
if config.get("optimizer") == "sgd":
    floor += 0.1
steps = int(config["steps"])
for step in range(1, steps + 1):
    print(f"toy: step {step}/{steps} loss={floor + 1.0 / step:.4f}", flush=True)
    time.sleep(float(config.get("step_sleep", 0.01)))
if config.get("validation"):
    held_out = sum(1 for d in config["validation"] for _ in Path(d).iterdir())
    print(f"toy: val_loss={floor + 0.05 + 1.0 / steps:.4f} over {held_out} files", flush=True)
(output / "toy-lora.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}      ")
print("toy: done", flush=True)
