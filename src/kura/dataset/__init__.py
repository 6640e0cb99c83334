"""Dataset inspection: what Musubi Tuner will see in a folder, and what will go wrong.

``inspect_dataset(folder)`` returns an :class:`Inspection` (``to_dict()`` is the JSON
document); ``BLOCKING_CODES`` names the problem codes that break or damage training. Heavy
libraries (Pillow, PyAV) load only when an inspection runs.
"""

from __future__ import annotations

from kura.dataset.inspect import Inspection, inspect_dataset
from kura.dataset.problems import BLOCKING_CODES, Problem

__all__ = ["BLOCKING_CODES", "Inspection", "Problem", "inspect_dataset"]
