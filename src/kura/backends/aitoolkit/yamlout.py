"""The job file's bytes: block-style YAML, keys in schema order, no comments, no tags.

AI-Toolkit substitutes ``${VAR}`` on the raw text before parsing (``toolkit/config.py``),
comments included, and replaces ``[name]`` everywhere after parsing: a value holding
either is refused here rather than written. Floats are written by PyYAML's representer,
which always keeps a dot or an exponent (``0.0001``, ``2.0e-05``), so AI-Toolkit's loader
(SafeLoader plus an exponent resolver) reads them back as floats.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from kura.errors import SpecError

__all__ = ["dump_job"]

_FORBIDDEN = ("${", "[name]")


class _Dumper(yaml.SafeDumper):
    """SafeDumper that never emits aliases (every value is written out)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _check(value: Any, where: str) -> None:
    if isinstance(value, str):
        for token in _FORBIDDEN:
            if token in value:
                raise SpecError(
                    f"AI-Toolkit job value {where} contains {token!r}: {value!r}",
                    hint="AI-Toolkit rewrites `${VAR}` and `[name]` in the job text; "
                    "remove them from prompts, paths and names",
                )
    elif isinstance(value, Mapping):
        for key, item in value.items():
            _check(key, where)
            _check(item, f"{where}.{key}")
    elif isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        for index, item in enumerate(value):
            _check(item, f"{where}[{index}]")


def dump_job(document: Mapping[str, Any]) -> str:
    """The job document as YAML text: the same document always gives the same bytes."""
    _check(document, "job")
    text: str = yaml.dump(
        document,
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        width=4096,
        indent=2,
    )
    return text
