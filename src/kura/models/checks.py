"""Can this file serve that role for that architecture? And do these files fit together?

``check_role`` turns a :class:`ModelReport` and a declared ``(architecture, role)`` into a
verdict: refusals (the file cannot serve: wrong family, wrong role, diffusers layout where
Musubi wants the original) and warnings (the header cannot tell candidates apart). The
trainer's own rules on pre-quantised and reduced-precision files come from the backend whose
rules apply (its ``file_rules`` verb): the bundle's backend, or for a bare architecture the
backend that serves it by default (:func:`rules_backend`); the verdict names it (``rules``).
``cross_check`` compares a set of files: text-encoder widths against the DiT's text inputs,
VAE latent channels against the DiT's, image-encoder widths against the DiT's image inputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kura.errors import CheckFailed, UsageError
from kura.models.identify import ModelReport
from kura.models.signatures import ARCHITECTURES, COMPONENTS, ROLES, component_by_id

if TYPE_CHECKING:
    from kura.backends.base import Backend

__all__ = [
    "CrossCheck",
    "RoleVerdict",
    "check_role",
    "components_for",
    "cross_check",
    "require_role",
    "rules_backend",
]

_ROLE_WORDS = {
    "dit": "a DiT (diffusion transformer)",
    "vae": "a VAE",
    "text_encoder": "a text encoder",
    "image_encoder": "an image encoder",
    "lora": "a LoRA adapter",
    "unknown": "an unrecognised file",
}


@dataclass(frozen=True)
class RoleVerdict:
    """``status``: ``ok``, ``warning`` (usable, read the warnings), ``unverified`` (Kura has
    no signature for this architecture and role) or ``refused``. ``rules``: the backend whose
    file rules were applied (None when none were)."""

    architecture: str | None
    role: str | None
    status: str
    refusals: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    rules: str | None = None

    @property
    def accepted(self) -> bool:
        return self.status != "refused"

    def to_dict(self) -> dict[str, Any]:
        return {
            "architecture": self.architecture,
            "role": self.role,
            "status": self.status,
            "refusals": list(self.refusals),
            "warnings": list(self.warnings),
            "rules": self.rules,
        }


@dataclass(frozen=True)
class CrossCheck:
    """One comparison between two files of a set."""

    check: str
    status: str
    files: tuple[str, ...]
    message: str
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "status": self.status,
            "files": list(self.files),
            "message": self.message,
            **self.details,
        }


def components_for(architecture: str, role: str) -> list[str]:
    """Ids of the components that can serve ``role`` for ``architecture``."""
    return [c.id for c in COMPONENTS if c.role == role and architecture in c.architectures]


def rules_backend(architecture: str | None) -> Backend | None:
    """The backend whose file rules apply when no bundle names one: Kura's default backend
    (the bundles' default, Musubi) when it trains ``architecture`` (or none is declared),
    else the one backend that trains it; None when several others do (Kura does not pick
    one for you) or none does."""
    from kura.backends.registry import backends_serving, get_backend
    from kura.models.bundles import BACKEND

    default = get_backend(BACKEND)
    if architecture is None or default.serves(architecture):
        return default
    serving = backends_serving(architecture)
    return get_backend(serving[0]) if len(serving) == 1 else None


def check_role(
    report: ModelReport,
    architecture: str | None = None,
    role: str | None = None,
    *,
    backend: Backend | None = None,
) -> RoleVerdict:
    """Judge whether ``report``'s file can serve ``role`` for ``architecture``, with the file
    rules of ``backend`` (None: :func:`rules_backend` of the architecture).

    Either may be None: without an architecture only the role is checked (and the file's own
    quantisation warnings given); without a role the file's own role is assumed."""
    if architecture is not None and architecture not in ARCHITECTURES:
        raise UsageError(
            f"unknown architecture {architecture!r}",
            hint=f"choose one of {', '.join(ARCHITECTURES)}",
        )
    if role is not None and role not in ROLES:
        raise UsageError(f"unknown role {role!r}", hint=f"choose one of {', '.join(ROLES)}")
    role = role or (report.role if report.role != "unknown" else None)
    refusals: list[str] = []
    warnings: list[str] = []
    arch_name = ARCHITECTURES.get(architecture or "", "")
    expected = components_for(architecture, role) if architecture and role else []
    if report.role == "unknown":
        if architecture and role and role != "lora" and not expected:
            warnings.append(
                f"Kura has no header signature for the {arch_name} {role.replace('_', ' ')}; "
                "the file is well-formed safetensors but its identity is not verified"
            )
            return RoleVerdict(architecture, role, "unverified", (), tuple(warnings))
        if architecture is None and role is None:
            warnings.append("Kura does not recognise this file: no signature in its table matches")
            return RoleVerdict(None, None, "unverified", (), tuple(warnings))
        refusals.append(f"this is {report.title}; {_needs(architecture, role)}")
        return RoleVerdict(architecture, role, "refused", tuple(refusals), ())
    if role is not None and report.role != role:
        refusals.append(
            f"this is {report.title}, {_ROLE_WORDS[report.role]}, not {_ROLE_WORDS[role]}; "
            f"{_needs(architecture, role)}"
        )
    elif architecture is not None and architecture not in report.architectures:
        if report.role == "lora" and not report.architectures:
            warnings.append(
                "the LoRA's target architecture cannot be read from its keys or metadata; Kura "
                f"cannot confirm it is for {arch_name}"
            )
        elif report.role == "lora":
            targets = ", ".join(ARCHITECTURES[a] for a in report.architectures)
            refusals.append(f"this LoRA adapter targets {targets}, not {arch_name}")
        else:
            reason = f" ({_component_note(report)})" if _component_note(report) else ""
            refusals.append(f"this is {report.title}{reason}; {_needs(architecture, role)}")
    if report.format == "diffusers" and (
        architecture is None or architecture not in report.architectures
    ):
        note = _component_note(report) or "Musubi needs the original single-file weights"
        if not any(note in r for r in refusals):
            refusals.append(f"a diffusers-format file: {note}")
    rules: str | None = None
    if report.role != "lora":
        trainer = backend if backend is not None else rules_backend(architecture)
        if trainer is not None:
            found = trainer.file_rules(report, architecture)
            refusals += found.refusals
            warnings += found.warnings
            rules = trainer.name
    if report.candidates and not refusals:
        warnings.append(
            f"the header cannot tell {', '.join(report.candidates)} apart; Kura trusts the "
            "model version you declare"
        )
    if report.role == "dit" and report.key_prefix == "model.diffusion_model." and not refusals:
        warnings.append(
            "an all-in-one checkpoint (model.diffusion_model. prefix); Musubi strips the "
            "prefix, the standalone DiT file is smaller"
        )
    status = "refused" if refusals else "warning" if warnings else "ok"
    return RoleVerdict(architecture, role, status, tuple(refusals), tuple(warnings), rules)


def require_role(
    report: ModelReport, architecture: str, role: str, *, backend: Backend | None = None
) -> RoleVerdict:
    """Like :func:`check_role` but raise :class:`CheckFailed` on a refusal."""
    verdict = check_role(report, architecture, role, backend=backend)
    if not verdict.accepted:
        raise CheckFailed(
            f"{report.path}: {'; '.join(verdict.refusals)}",
            hint=f"use {_needs(architecture, role, bare=True)}",
            path=report.path,
        )
    return verdict


def _component_note(report: ModelReport) -> str:
    try:
        return component_by_id(report.component).note
    except KeyError:
        return ""


def _needs(architecture: str | None, role: str | None, *, bare: bool = False) -> str:
    if not architecture or not role:
        return "" if bare else "see `kura model bundles` for the files each architecture takes"
    titles = [component_by_id(c).title for c in components_for(architecture, role)]
    if not titles:
        what = f"a file Kura has no signature for ({role.replace('_', ' ')})"
    else:
        what = " or ".join(titles)
    return what if bare else f"{ARCHITECTURES[architecture]} needs {what} here"


def cross_check(reports: Sequence[ModelReport]) -> list[CrossCheck]:
    """Compare the DiT(s) in ``reports`` with the VAEs, text and image encoders beside them."""
    results: list[CrossCheck] = []
    dits = [r for r in reports if r.role == "dit" and r.facts]
    for dit in dits:
        for other in reports:
            if other is dit:
                continue
            if other.role == "vae":
                results.extend(_vae_check(dit, other))
            elif other.role in ("text_encoder", "image_encoder"):
                results.extend(_width_check(dit, other))
    return results


def _vae_check(dit: ModelReport, vae: ModelReport) -> list[CrossCheck]:
    wanted = dit.facts.get("vae_latent_channels")
    have = vae.facts.get("latent_channels")
    if wanted is None or have is None:
        return []
    files = (dit.path, vae.path)
    if wanted == have:
        return [
            CrossCheck(
                "vae-latent-channels",
                "ok",
                files,
                f"VAE latent channels {have} match the DiT ({wanted})",
                {"dit": wanted, "vae": have},
            )
        ]
    return [
        CrossCheck(
            "vae-latent-channels",
            "mismatch",
            files,
            f"{vae.title} does not fit {dit.title}: the VAE has {have} latent channels, the DiT "
            f"takes {wanted}",
            {"dit": wanted, "vae": have},
        )
    ]


def _width_check(dit: ModelReport, encoder: ModelReport) -> list[CrossCheck]:
    slot = "text_inputs" if encoder.role == "text_encoder" else "image_inputs"
    inputs: dict[str, int] = dict(dit.facts.get(slot, {}))
    width = encoder.facts.get("hidden_width")
    if not inputs or width is None:
        return []
    check = "text-encoder-width" if encoder.role == "text_encoder" else "image-encoder-width"
    files = (dit.path, encoder.path)
    widths = sorted(set(inputs.values()))
    details = {"dit": widths, "encoder": width}
    if width not in widths:
        return [
            CrossCheck(
                check,
                "mismatch",
                files,
                f"{encoder.title} does not fit {dit.title}: the encoder is {width} wide, the "
                "DiT takes "
                f"{' / '.join(map(str, widths))}-wide features",
                details,
            )
        ]
    if encoder.component not in inputs:
        names = [component_by_id(c).title for c in inputs if inputs[c] == width]
        return [
            CrossCheck(
                check,
                "mismatch",
                files,
                f"{encoder.title} has the right width ({width}) but {dit.title} was trained "
                f"with {' or '.join(names)}",
                details,
            )
        ]
    return [
        CrossCheck(check, "ok", files, f"{encoder.title} width {width} matches the DiT", details)
    ]
