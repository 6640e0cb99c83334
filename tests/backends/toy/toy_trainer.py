"""A trainer of the tests' own invention ("toy"), driven by the toy backend (a test double).

``toy_trainer.py prepare CONFIG`` writes ``prepared.txt`` next to the output; ``train``
prints ``toy: step i/N loss=x`` lines and writes ``output/toy-lora.safetensors``. A file
``mode`` beside this script set to ``oom`` makes training fail the way the toy's device
would: ``ToyOOM: device memory exhausted at batch B`` and exit 3.
"""

import json
import sys
import time
from pathlib import Path

verb, config_path = sys.argv[1], Path(sys.argv[2])
config = json.loads(config_path.read_text())
output = Path(config["output_dir"])
output.mkdir(parents=True, exist_ok=True)
mode_file = Path(__file__).with_name("mode")
mode = mode_file.read_text().strip() if mode_file.exists() else "ok"
if verb == "prepare":
    (output / "prepared.txt").write_text("prepared\n")
    print("toy: prepared", flush=True)
    sys.exit(0)
if mode == "oom" and not config["shrink_activations"]:
    print(f"ToyOOM: device memory exhausted at batch {config['batch']}", flush=True)
    sys.exit(3)
steps = int(config["steps"])
for step in range(1, steps + 1):
    print(f"toy: step {step}/{steps} loss={1.0 / step:.4f}", flush=True)
    time.sleep(0.01)
(output / "toy-lora.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}      ")
print("toy: done", flush=True)
