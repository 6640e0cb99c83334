"""Run by ``kura doctor ai-toolkit`` with the AI-Toolkit environment's Python, from the
checkout (the working folder ``run.py`` needs): does it import the way a job will?

Standard library at import; the trainer's packages are imported inside, in the order
``run.py`` meets them: the checkout on ``sys.path`` first (``run.py`` inserts the working
folder), then torch, then every extension through AI-Toolkit's own
``toolkit.extension.get_all_extensions`` (one extension that fails to import stops every job:
its try/except is commented out). The answer is one line on stdout, after whatever the
imports print: ``MARKER`` and a JSON object.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import platform
import sys
import traceback

MARKER = "KURA-AITK-PROBE "


def _failure(error: BaseException) -> str:
    lines = traceback.format_exception(type(error), error, error.__traceback__)
    return "".join(lines[-6:]).strip()


def probe() -> dict[str, object]:
    answer: dict[str, object] = {"python": platform.python_version()}
    sys.path.insert(0, os.getcwd())
    try:
        torch = importlib.import_module("torch")
    except (Exception, SystemExit) as error:  # the doctor reports any import failure
        answer["torch_error"] = _failure(error)
        return answer
    answer["torch"] = str(torch.__version__)
    answer["cuda"] = bool(torch.cuda.is_available())
    answer["triton"] = importlib.util.find_spec("triton") is not None
    try:
        extension = importlib.import_module("toolkit.extension")
        found = extension.get_all_extensions()
    except (Exception, SystemExit) as error:
        answer["extensions_error"] = _failure(error)
        return answer
    answer["extensions"] = sorted(str(e.uid) for e in found)
    return answer


def main() -> int:
    answer = probe()
    sys.stdout.flush()
    print(MARKER + json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
