"""The verbs every trainer behind the seam answers the same way, written once.

:class:`StandardBackend` holds the default of each verb the backends used to spell alike:
no trainer facts to prepare, no validator to run on the compiled files, no interrupt caught
and exited 0 on, no documented file rule, a prompt that carries no size, and — for what a
trainer cannot do — one refusal (:class:`~kura.errors.Unsupported`, naming the trainer and
what to do instead) in place of a missing method. :class:`CheckoutBackend` adds the
``doctor`` and ``setup`` of a trainer that runs from a Docker image or from its own virtual
environment made from a checkout (Musubi Tuner, AI-Toolkit): the two executors' findings and
the install from ``--source`` (else kura.toml's checkout), each backend supplying only its
own environment, checks and commands.

A backend subclasses one of them and keeps only the verbs whose answer is its trainer's own.
The :class:`~kura.backends.base.Backend` protocol stays the contract: each backend module
annotates its ``BACKEND`` as ``Backend``, so mypy checks the subclass (defaults included)
against every verb, and ``tests/backends/behaviour.py`` runs the same behaviour over every
registered backend.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from kura.backends.base import (
    CompileInputs,
    DoctorReport,
    FileRules,
    Finding,
    ImageRecipe,
    LoraExport,
    PlanInputs,
    ResumeRule,
    TrainerFacts,
    TrainerSetup,
)
from kura.errors import KuraError, Unsupported

if TYPE_CHECKING:
    from kura.backends.trainer_env import EnvLocation, EnvRecord
    from kura.models.identify import ModelReport
    from kura.schema.run import RunSpec
    from kura.workspace import Workspace

__all__ = ["CheckoutBackend", "CheckoutInstall", "StandardBackend", "configured_checkout"]


class StandardBackend:
    """Default verbs; a subclass sets ``name``, ``title`` and ``release`` and writes the
    verbs its trainer answers in its own way (compile, fit, estimate, progress …)."""

    name: str
    title: str
    samples_during_training: bool = True

    def sample_prompt(self, text: str, *, width: int, height: int) -> str:
        """The prompt as written: the trainer's prompts carry no size (compile or a knob
        sizes the samples)."""
        return text

    def check_settings(self, spec: RunSpec, inputs: PlanInputs) -> None:
        """Nothing to refuse before compile: the trainer's values are checked there."""
        return None

    def trainer_bin(self, workspace: Workspace, *, in_container: bool) -> str | None:
        """None: the compiled steps name their executables themselves (or the image's PATH
        has them)."""
        return None

    def prepare(self, spec: RunSpec, inputs: CompileInputs) -> TrainerFacts | None:
        """None: everything compile needs is Kura's own data (the trainer is not asked)."""
        return None

    def check_compiled(self, spec: RunSpec, compiled_dir: Path) -> tuple[str, ...]:
        """No validator of the trainer's runs on the compiled files here (the tests pin the
        files against the trainer's own parsers)."""
        return ()

    def stopped(self, log_text: str, *, step: str, exit_code: int | None) -> bool:
        """False: the trainer does not catch an interrupt and exit 0, so an exit 0 is a
        finished step."""
        return False

    def file_rules(self, report: ModelReport, architecture: str | None) -> FileRules:
        """No documented rule refuses a base-model file by its precision."""
        return FileRules()

    def image(self, workspace: Workspace | None) -> ImageRecipe:
        """Unsupported: the trainer has no Docker image (it runs on the host executor)."""
        raise Unsupported(
            f"{self.title} has no Docker image: it runs on the host executor, from an "
            "environment of this machine",
            hint=f"set execution.executor: host in run.yaml; `kura backend install {self.name}` "
            f"then `kura doctor {self.name}`",
        )

    def resume_arguments(self, run_dir: Path, *, trainer_run_dir: str) -> tuple[str, ...]:
        """Unsupported: the trainer saves no state to continue from."""
        raise Unsupported(
            f"{self.title} cannot resume run {run_dir.name}: it saves no state to continue from",
            hint=f"start the attempt over: `kura run relaunch {run_dir.name}`",
        )

    def resume_rule(self, run_id: str) -> ResumeRule:
        """Unsupported: with no saved state, a recovered cloud job cannot continue."""
        raise Unsupported(
            f"{self.title} cannot resume run {run_id}: it saves no state to continue from",
            hint=f"start the attempt over: `kura run relaunch {run_id}`",
        )

    def lora_layout(self, keys: tuple[str, ...], architecture: str) -> str:
        """Unsupported: Kura's converter does not read this trainer's LoRA files (its
        ``export`` writes them its own way)."""
        raise Unsupported(
            f"{self.title} LoRA files are not converted by Kura",
            hint=f"use `kura export RUN` (the {self.title} backend's own export)",
        )

    def export(
        self,
        workspace: Workspace,
        run_id: str,
        *,
        epoch: int | None,
        fmt: str,
        out: Path | None,
    ) -> LoraExport:
        """Kura's converter, reading the trainer's file in the layout :meth:`lora_layout`
        names (a backend whose files Kura does not convert exports them itself)."""
        from kura.export.exporting import export_run

        return export_run(workspace, run_id, epoch=epoch, fmt=fmt, out=out)


@dataclass(frozen=True)
class CheckoutInstall:
    """How a trainer installed from a checkout is named to a person.

    ``command`` is its spelling in ``kura backend install`` / ``kura image build``
    (``musubi``); ``toml_key`` kura.toml's ``executor`` key naming the default checkout;
    ``marker`` a path every checkout of it has; ``trainer`` its name with the article ("a
    Musubi Tuner"); ``pinned`` what Kura compiles for; ``image_title`` the name the image's
    release label is shown with; ``size`` what the install downloads."""

    command: str
    toml_key: str
    marker: Path
    trainer: str
    pinned: str
    image_title: str
    size: str


def configured_checkout(workspace: Workspace | None, raw: str | None) -> Path | None:
    """kura.toml's checkout ``raw`` (relative to the workspace root), None when unset."""
    if not raw:
        return None
    path = Path(raw).expanduser()
    return path if path.is_absolute() or workspace is None else workspace.root / path


class CheckoutBackend(StandardBackend, ABC):
    """A trainer run from its Docker image or from its own environment made from a
    checkout: ``doctor`` checks both executors (the Docker one's failures are warnings
    where the host environment passes), ``setup`` installs from ``--source`` or kura.toml's
    checkout. The subclass supplies its environment, its checks and its commands."""

    @property
    @abstractmethod
    def install(self) -> CheckoutInstall:
        """How the trainer's install is named (read when a verb needs it: the facts come
        from the backend's own modules, imported only then)."""

    @abstractmethod
    def environment(self, workspace: Workspace | None) -> EnvLocation:
        """The environment the variable, kura.toml or the default names."""

    @abstractmethod
    def environment_findings(
        self, workspace: Workspace | None
    ) -> tuple[list[Finding], dict[str, str]]:
        """The host executor's environment checked as a run uses it, and the facts found
        (``details`` of the doctor's report)."""

    @abstractmethod
    def installed(self, location: EnvLocation) -> bool:
        """Whether Kura's install of the trainer finished in ``location``."""

    @abstractmethod
    def check_source(self, folder: Path) -> Path:
        """``folder`` resolved when it is a checkout at the pinned release; a KuraError
        naming the folder and what it lacks otherwise."""

    @abstractmethod
    def install_commands(
        self, location: EnvLocation, checkout: Path, python: str | None
    ) -> tuple[tuple[str, ...], ...]:
        """The argv lists that make the environment from ``checkout``, in order."""

    @abstractmethod
    def env_record(self, checkout: Path) -> EnvRecord:
        """What ``kura-env.json`` says once the install commands succeeded."""

    def doctor(self, workspace: Workspace | None) -> DoctorReport:
        """GPUs, Docker and its GPU runtime, the image at the pinned release; the host
        environment as a run uses it; kura.toml's checkout, when it names one."""
        from kura.doctor import docker_findings, docker_optional, gpu_findings, image_findings

        recipe = self.image(workspace)
        docker = docker_findings()
        if not any(f.check == "docker" and f.status == "fail" for f in docker):
            docker += image_findings(
                recipe,
                check=f"{self.install.command} image",
                title=self.install.image_title,
                command=f"kura image build {self.install.command} --run",
            )
        host, details = self.environment_findings(workspace)
        findings = [*gpu_findings(), *docker_optional(docker, host), *host]
        findings += self._checkout_findings(workspace)
        return DoctorReport(self.name, tuple(findings), {"image": recipe.tag, **details})

    def _checkout_findings(self, workspace: Workspace | None) -> list[Finding]:
        from kura.doctor import checkout_finding

        raw = self._toml_checkout(workspace)
        if not raw:
            return []
        finding = checkout_finding(
            raw,
            check=f"{self.install.command} checkout",
            marker=self.install.marker,
            trainer=self.install.trainer,
            pinned=self.install.pinned,
            toml_key=self.install.toml_key,
        )
        return [finding]

    def _toml_checkout(self, workspace: Workspace | None) -> str | None:
        if workspace is None:
            return None
        raw = getattr(workspace.config().executor, self.install.toml_key)
        return str(raw) if raw else None

    def setup(
        self,
        workspace: Workspace | None,
        *,
        python: str | None = None,
        source: Path | None = None,
    ) -> TrainerSetup:
        """The trainer's own virtual environment, installed from ``source`` (else kura.toml's
        checkout) for the host executor; the image is built by ``kura image build``. Only
        looks (and checks the checkout)."""
        location = self.environment(workspace)
        checkout, problem = self._source(workspace, source)
        base = TrainerSetup(
            backend=self.name,
            how=self._how(checkout, problem),
            present=self.installed(location),
            path=location.path,
            source=location.source,
            python=str(location.python),
            size=self.install.size,
            checkout=checkout,
        )
        if checkout is None:
            return replace(base, needs_source=True)
        return replace(
            base,
            install=self.install_commands(location, checkout, python),
            record=self.env_record(checkout),
        )

    def _source(self, workspace: Workspace | None, source: Path | None) -> tuple[Path | None, str]:
        """The checkout to install from, or why there is none. An explicit ``--source``
        that fails its check raises (the person named it); kura.toml's is only reported, so
        that ``kura backend list`` still lists every backend."""
        if source is not None:
            return self.check_source(source), ""
        configured = configured_checkout(workspace, self._toml_checkout(workspace))
        key = f"executor.{self.install.toml_key}"
        if configured is None:
            return None, f"no checkout named (--source, or {key} in kura.toml)"
        try:
            return self.check_source(configured), ""
        except KuraError as err:
            return None, f"kura.toml's {key}: {err.message}"

    def _how(self, checkout: Path | None, problem: str) -> str:
        command = self.install.command
        own = (
            f"its own virtual environment for the host executor, made from "
            f"{self.install.trainer} checkout ({self.install.pinned}) by "
            f"`kura backend install {command} --source DIR`"
        )
        where = f"from {checkout}" if checkout is not None else problem
        return (
            f"{own} ({where}); or the Docker image `kura image build {self.name} --run` for "
            "the docker executor"
        )
