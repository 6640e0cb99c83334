"""The Musubi compiler's inputs and output are the seam's own types (``kura.backends.base``).

All paths are as the trainer sees them (inside the container for the docker executor). The
compiled files are written under ``<CompileInputs.run_dir>/compiled/``: the steps refer to
``<run_dir>/compiled/dataset.toml`` and ``…/compiled/sample_prompts.txt``.
"""

from __future__ import annotations

from kura.backends.base import (
    CompiledRun,
    CompileInputs,
    ContainerSpec,
    DatasetInput,
    Mount,
    Step,
)

__all__ = ["CompileInputs", "CompiledRun", "ContainerSpec", "DatasetInput", "Mount", "Step"]
