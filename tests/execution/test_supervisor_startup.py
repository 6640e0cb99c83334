"""The detached supervisor starts before every run's first step: it loads launch.json's schema
and nothing it does not use (the run and dataset models, the YAML parsers)."""

from __future__ import annotations

import json
import subprocess
import sys


def test_the_supervisor_imports_no_yaml_parser_nor_the_run_models() -> None:
    probe = (
        "import json, sys; import kura.execution.supervisor; "
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith(('ruamel', 'yaml', "
        "'kura.schema.run', 'kura.schema.dataset', 'kura.yamlio')))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert json.loads(done.stdout) == []
