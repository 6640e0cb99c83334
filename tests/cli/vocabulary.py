"""The JSON vocabulary's one name per concept (contract 2): a run is ``run``, a bundle
``bundle``, a sweep ``sweep``. :func:`synonyms` lists every key of a document that names one
of them otherwise."""

from __future__ import annotations

from typing import Any

SYNONYMS = {
    "run_id": "run",
    "runId": "run",
    "base": "bundle",
    "bundle_id": "bundle",
    "sweep_id": "sweep",
}
"""Keys that are another name of a concept the vocabulary names once."""

ID_OF = {"runs": "run", "damaged": "run", "bundles": "bundle"}
"""Lists whose entries are runs or bundles: their entries name it, never ``id``."""

VERBATIM = {"metadata", "schema", "config", "backend_config"}
"""Subtrees written as another program keeps them (a LoRA file's header metadata, run.yaml's
JSON schema, a trainer's own config): their keys are that program's, not this contract's."""


def synonyms(document: dict[str, Any]) -> list[str]:
    """``path: key (say X)`` for each synonym in ``document``; a missing contract too."""
    found = [] if document.get("contract") == 2 else ["contract: missing or not 2"]
    if "id" in document:
        found.append(f"id (say {document.get('kind', '?').split('-')[0]})")
    _walk(document, "", found)
    return found


def _walk(value: Any, path: str, found: list[str]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if key in SYNONYMS:
                found.append(f"{path}.{key} (say {SYNONYMS[key]})")
            if key in VERBATIM:
                continue
            if key in ID_OF and isinstance(item, list):
                found += [
                    f"{path}.{key}[].id (say {ID_OF[key]})"
                    for entry in item
                    if isinstance(entry, dict) and "id" in entry
                ][:1]
            _walk(item, f"{path}.{key}", found)
    elif isinstance(value, list):
        for item in value:
            _walk(item, f"{path}[]", found)
