"""Model files: header reading, identification, bundles, digests, resolve, fetch, lock.

The names below are the package's public API; each lives in a module of its own::

    header      read_header, parse_header            the strict, bounded safetensors reader
    identify    identify, ModelReport                what a file is, from its header alone
    signatures  COMPONENTS, ARCHITECTURES            the signature table (data)
    checks      check_role, require_role, cross_check can it serve; do the files fit together
    filecheck   check_files                          the `kura model check` result
    bundles     get_bundle, list_bundles             the bundle table (data in bundle_table)
    digests     DigestCache                          sha256 once per unchanged file
    resolve     resolve_bundle                       find and validate each role's file
    lockdoc     build_lock, write_lock               the deterministic lock document
    fetch       fetch_bundle                         downloads through huggingface_hub
    layouts     component_layout, write_sparse_safetensors   key layouts; sparse files
    standins    install_bundle_in_hub_cache                 demo hub-cache stand-ins

None of them imports huggingface_hub, numpy or safetensors at import time.
"""

from __future__ import annotations

import importlib
from typing import Any

# Bound eagerly: the submodule has the same name as the function, and importing the
# submodule later would otherwise leave the package attribute pointing at the module.
from kura.models.identify import ModelReport, identify

_HOMES = {
    "Bundle": "bundles",
    "FileSpec": "bundles",
    "get_bundle": "bundles",
    "list_bundles": "bundles",
    "CrossCheck": "checks",
    "RoleVerdict": "checks",
    "check_role": "checks",
    "cross_check": "checks",
    "require_role": "checks",
    "check_files": "filecheck",
    "DigestCache": "digests",
    "DigestRecord": "digests",
    "SafetensorsHeader": "header",
    "TensorInfo": "header",
    "read_header": "header",
    "build_lock": "lockdoc",
    "write_lock": "lockdoc",
    "Resolution": "resolve",
    "RoleResolution": "resolve",
    "resolve_bundle": "resolve",
}


def __getattr__(name: str) -> Any:
    """Load the public names lazily, so ``python -m kura.models.bundles`` runs cleanly and
    importing the package costs nothing until a name is used."""
    if name not in _HOMES:
        raise AttributeError(f"module 'kura.models' has no attribute {name!r}")
    return getattr(importlib.import_module(f"kura.models.{_HOMES[name]}"), name)


__all__ = [
    "Bundle",
    "CrossCheck",
    "DigestCache",
    "DigestRecord",
    "FileSpec",
    "ModelReport",
    "Resolution",
    "RoleResolution",
    "RoleVerdict",
    "SafetensorsHeader",
    "TensorInfo",
    "build_lock",
    "check_files",
    "check_role",
    "cross_check",
    "get_bundle",
    "identify",
    "list_bundles",
    "read_header",
    "require_role",
    "resolve_bundle",
    "write_lock",
]
