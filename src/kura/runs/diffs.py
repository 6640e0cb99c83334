"""What changed between two plain documents, leaf by leaf, in the words a refusal shows."""

from __future__ import annotations

from typing import Any

__all__ = ["diff_values"]


def diff_values(before: Any, after: Any, prefix: str = "") -> list[str]:
    """``backend.config.KEY old → new`` for every leaf that differs."""
    if isinstance(before, dict) and isinstance(after, dict):
        out: list[str] = []
        for key in sorted(set(before) | set(after)):
            path = f"{prefix}.{key}" if prefix else str(key)
            if key not in before:
                out.append(f"{path} added ({after[key]!r})")
            elif key not in after:
                out.append(f"{path} removed (was {before[key]!r})")
            else:
                out += diff_values(before[key], after[key], path)
        return out
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        out = []
        for index, (old, new) in enumerate(zip(before, after, strict=True)):
            out += diff_values(old, new, f"{prefix}.{index}")
        return out
    if before != after:
        return [f"{prefix} {before!r} → {after!r}"]
    return []
