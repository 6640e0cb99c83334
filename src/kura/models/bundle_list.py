"""``kura model bundles``: the known bundles, each with the backends that accept it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from kura.models.bundles import Bundle, list_bundles

__all__ = ["BundleList", "BundleListEntry", "bundle_list"]


@dataclass(frozen=True)
class BundleListEntry:
    """A bundle and the registered backends that accept it (registry order): each trains
    its architecture and some task on it (``Backend.tasks``), so a Musubi bundle does not
    list AI-Toolkit, which loads its own layout."""

    bundle: Bundle
    backends: tuple[str, ...]

    def to_dict(self) -> dict[str, object]:
        document = self.bundle.to_dict()
        return {"bundle": document.pop("id"), **document, "backends": list(self.backends)}


@dataclass(frozen=True)
class BundleList:
    """``kura model bundles``: the bundle table in table order (one architecture's, or all)."""

    bundles: tuple[BundleListEntry, ...]

    kind: ClassVar[str] = "model-bundles"

    def to_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "bundles": [entry.to_dict() for entry in self.bundles]}


def bundle_list(architecture: str | None = None) -> BundleList:
    """Every bundle, or only those of ``architecture`` (an unknown one lists none)."""
    from kura.backends.registry import backends_serving, get_backend

    def accepting(bundle: Bundle) -> tuple[str, ...]:
        return tuple(
            name
            for name in backends_serving(bundle.architecture)
            if get_backend(name).tasks(bundle)
        )

    return BundleList(
        bundles=tuple(
            BundleListEntry(bundle, accepting(bundle))
            for bundle in list_bundles()
            if architecture in (None, bundle.architecture)
        )
    )
