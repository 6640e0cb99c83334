"""Read a Musubi run's TensorBoard scalars with TensorBoard's own reader (run by path with
Musubi's environment, which holds ``tensorboard``), so the tests compare Kura's reading of
the event files with the format's reference implementation, not with itself.

    <env>/bin/python musubi_events.py LOGGING_DIR  ->  {"tag": [[step, value], ...], ...}
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)


def main(logging_dir: str) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    scalars: dict[str, list[list[float]]] = {}
    for folder in sorted({p.parent for p in Path(logging_dir).rglob("events.out.tfevents.*")}):
        events = EventAccumulator(str(folder))
        events.Reload()
        for tag in events.Tags()["scalars"]:
            scalars.setdefault(tag, []).extend([e.step, e.value] for e in events.Scalars(tag))
    print(json.dumps(scalars))


if __name__ == "__main__":
    main(sys.argv[1])
