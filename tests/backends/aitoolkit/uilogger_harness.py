"""Drive AI-Toolkit's own ``toolkit/logging_aitk.py::UILogger`` (opt-in tests only).

``python uilogger_harness.py DB`` with ``PYTHONPATH`` at an AI-Toolkit checkout reads JSON:
a list of ``(step, loss, wall_time)`` from stdin (NaN allowed) and logs each row as one
training process does (``log({...})`` then ``commit(step)``; ``loss/loss`` and
``learning_rate``), with the clock set to the row's wall time, then ``finish()``. Only
``toolkit.config_modules`` is replaced (it imports torch and torchaudio for the config
classes; the logger uses none of them).
"""

import json
import sys
import time
import types

stub = types.ModuleType("toolkit.config_modules")
stub.LoggingConfig = object
sys.modules["toolkit.config_modules"] = stub

from toolkit.logging_aitk import UILogger  # noqa: E402

clock = [0.0]
time.time = lambda: clock[0]
rows = json.loads(sys.stdin.read())
logger = UILogger(log_file=sys.argv[1])
for step, loss, wall in rows:
    clock[0] = wall
    logger.log({"loss/loss": loss, "learning_rate": 1e-4})
    logger.commit(step=step)
logger.finish()
