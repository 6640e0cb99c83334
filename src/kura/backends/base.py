"""The backend seam: what every trainer package gives the layers above it.

A backend is one package (``kura.backends.musubi``, ``kura.backends.kohakumoss`` …) that
knows one external trainer. Nothing above this seam spells a trainer's flags: ``runs/``,
``planning/``, ``execution/``, ``export/``, ``web/`` and ``cli/`` speak these types only.

``Backend`` is a :class:`typing.Protocol`, not an ABC: a backend is checked by shape, so the
test seam (a fake trainer of the tests' own invention) and a backend living in its own
package need no common base class and no import of each other; mypy still checks every
registered backend against the protocol where the registry hands it out.

The values that cross the seam are frozen dataclasses. The step, mount and container are
the compiled files' own types (:mod:`kura.schema.compiled`, pydantic dataclasses), so the
files Kura writes and reads hold exactly what a backend returned. Steps are argv lists,
never shell strings (DESIGN invariant 6); env values never hold secrets (invariant 7): a
step names the variables it needs passed through, and the executor reads them at start.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal, Protocol, runtime_checkable

from kura.schema.compiled import ContainerSpec, Mount, Step, StepKind

if TYPE_CHECKING:
    from kura.backends.trainer_env import EnvRecord
    from kura.gpu_class import GpuClass
    from kura.models.bundles import Bundle
    from kura.models.identify import ModelReport
    from kura.schema.dataset import DatasetSpec
    from kura.schema.run import RunSpec
    from kura.workspace import Workspace

__all__ = [
    "TASKS",
    "AidChoice",
    "AttemptLoss",
    "AttemptRef",
    "Backend",
    "ClipFact",
    "CompileInputs",
    "CompiledRun",
    "ContainerSpec",
    "Contingency",
    "DatasetBuckets",
    "DatasetInput",
    "DatasetMedia",
    "Diagnosis",
    "DoctorReport",
    "DraftedConfig",
    "Evaluation",
    "FileRules",
    "Finding",
    "FindingStatus",
    "FitProblem",
    "ImageRecipe",
    "ImportedRun",
    "Importer",
    "KnownValue",
    "LoraExport",
    "LossHistory",
    "LossLabels",
    "LossPoint",
    "MemoryAid",
    "Mount",
    "OutputLayout",
    "PlanFit",
    "PlanInputs",
    "RecipeItem",
    "Remedy",
    "ResumeRule",
    "Rung",
    "SearchKey",
    "SearchKeys",
    "Step",
    "StepCost",
    "StepKind",
    "StepProgress",
    "TrainerBucket",
    "TrainerFacts",
    "TrainerKnowledge",
    "TrainerRecipe",
    "TrainerSetup",
    "attempt_at",
]

# ---------------------------------------------------------------------------------------
# Compile: run spec + resolved inputs → files and steps


@dataclass(frozen=True)
class ClipFact:
    """One video of a dataset as inspection read it: its name (relative to the media
    folder), frame count, frame rate and the bucket (width, height) it falls into; None
    where inspection could not tell."""

    name: str
    frames: int | None
    fps: float | None
    bucket: tuple[int, int] | None = None


@dataclass(frozen=True)
class DatasetMedia:
    """What inspection knows of a dataset's media beyond its facts: every video, the
    number of images, and the control images per item when every item has the same."""

    clips: tuple[ClipFact, ...] = ()
    images: int = 0
    control_count: int | None = None
    image_sizes: tuple[tuple[int, int, int], ...] = ()
    """``(width, height, count)`` of the readable images, when the caller read them (a
    trainer buckets each image by its own size: the plan's items per bucket)."""


@dataclass(frozen=True)
class DatasetInput:
    """One dataset of the run, resolved from the workspace by the caller.

    Paths are as the trainer sees them. ``control_count`` is the number of control images
    per item when inspection knows it; ``source_fps`` the videos' frame rate, if known (and
    the same for every video). ``clips`` are the videos inspection read and ``images`` the
    number of images in the folder (a folder may hold both).
    """

    name: str
    media_dir: str
    caption_ext: str
    control_dir: str | None
    kind: Literal["image", "video"]
    control_count: int | None = None
    source_fps: float | None = None
    clips: tuple[ClipFact, ...] = ()
    images: int = 0
    items: int | None = None
    """Images or videos in the dataset (inspection's counts), for trainers that count steps."""
    trigger: str | None = None
    """The trigger word the dataset's captions open with, when its intent records one."""
    image_sizes: tuple[tuple[int, int, int], ...] = ()
    """``(width, height, count)`` of its readable images (a trainer that batches per bucket
    counts an epoch's batches from them)."""


@dataclass(frozen=True)
class TrainerFacts:
    """What a backend's ``prepare`` learned from the installed trainer for one compile (its
    own frozen subclass: preset paths, knob types, a model's shape read by the trainer's own
    loader). ``compile`` stays pure by receiving these in ``CompileInputs.trainer_facts``."""


@dataclass(frozen=True)
class CompileInputs:
    """Facts a backend's compiler needs besides the run spec, all resolved by the caller.

    ``model_paths`` maps a bundle role to its file as the trainer sees it; ``weight_dtypes``
    a role to its weight dtype (``bf16``, ``fp16``, ``fp8``) read from the header.
    ``trainer_dir`` is the trainer's checkout or install as the step sees it (the image's
    path for container executors). ``container_image`` overrides the backend's image name.
    ``model_root`` is run.yaml's ``model.root`` (a pipeline root) as the trainer sees it.
    ``trainer_facts`` is what the backend's ``prepare`` returned (None until then, and for a
    backend that needs nothing from its trainer to compile).
    """

    architecture: str
    model_version: str | None
    model_paths: Mapping[str, str]
    datasets: tuple[DatasetInput, ...]
    run_dir: str
    trainer_dir: str
    weight_dtypes: Mapping[str, str] = field(default_factory=dict)
    container_image: str | None = None
    validation: tuple[DatasetInput, ...] = ()
    """Held-out datasets: the trainer reports its loss on them and never trains on them
    (a backend whose trainer cannot refuses them, see ``SearchKeys.heldout_loss``)."""
    bundle: str = ""
    """The run's bundle id (a backend whose model layout differs per bundle checks it)."""
    model_root: str | None = None
    trainer_facts: TrainerFacts | None = None
    trainer_bin: str | None = None
    """The trainer environment's executables folder (``Backend.trainer_bin``); None: the
    step's own PATH (an image)."""


@dataclass(frozen=True)
class CompiledRun:
    """Everything one run needs, as the trainer ``release`` accepts it.

    ``files`` are written under ``<run>/compiled/`` (names relative to it); the steps refer
    to them there. ``container`` is None for a backend that only runs on the host.
    """

    backend: str
    release: str
    files: Mapping[str, str]
    steps: tuple[Step, ...]
    container: ContainerSpec | None
    warnings: tuple[str, ...] = ()
    escape_hatch: bool = False


@dataclass(frozen=True)
class DraftedConfig:
    """``backend.config`` values a backend proposes for a new run, each with its reason."""

    config: Mapping[str, object]
    reasons: Mapping[str, str]


# ---------------------------------------------------------------------------------------
# Knowledge: what the trainer's own docs, examples and code say a run uses

TASKS = ("character", "style", "concept", "paired-edit", "video")
"""The run tasks (run.yaml ``task``), in the order cards and the conformance matrix list them."""


@dataclass(frozen=True)
class KnownValue:
    """One recipe value (a run.yaml ``training.*`` path's) and where the trainer says it:
    a file of its docs, example configs or code, with the line where it can."""

    value: object
    source: str


@dataclass(frozen=True)
class TrainerKnowledge:
    """What one trainer's own docs, examples and code give a run on one architecture.

    ``baselines`` are the card's upstream lines per section (``all`` or a task): what the
    trainer documents for this architecture. ``defaults`` covers every recipe key: the value
    ``kura run new`` drafts when nothing ranked above it gives one (the trainer's own
    default, or where it has no such setting the value meaning "not passed", its source
    saying which of the trainer's own settings applies instead). A value another trainer has
    is never here."""

    backend: str
    architecture: str
    defaults: Mapping[str, KnownValue]
    baselines: Mapping[str, Mapping[str, KnownValue]]
    video: Mapping[str, KnownValue] = field(default_factory=dict)
    """A video dataset's entry values (``frames``, ``frame_extraction``, ``max_frames`` …)
    the trainer documents for this architecture, drafted for a dataset of videos."""


# ---------------------------------------------------------------------------------------
# The recipe as the compiled trainer configuration holds it (plan.md's "Recipe")

RECIPE_ITEMS = (
    "network",
    "optimizer",
    "schedule",
    "length",
    "batch",
    "precision",
    "memory",
    "timesteps",
)
"""The parts of a recipe every backend reads back, in plan order."""


@dataclass(frozen=True)
class RecipeItem:
    """One part of the recipe as the trainer's compiled files hold it.

    ``runs`` says it in the trainer's own terms, ``source`` names the compiled file and the
    keys or flags it was read from, ``values`` are those settings (JSON values). ``intent``
    is what run.yaml asks for this part (None where run.yaml has no say in it), and
    ``differs`` says how the trainer's configuration departs from that intent (None when it
    follows it)."""

    item: str
    runs: str
    source: str
    values: Mapping[str, object] = field(default_factory=dict)
    intent: str | None = None
    differs: str | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "item": self.item,
            "runs": self.runs,
            "source": self.source,
            "values": dict(self.values),
            "intent": self.intent,
            "differs": self.differs,
        }


@dataclass(frozen=True)
class TrainerRecipe:
    """``Backend.recipe``: what the trainer will run, read back from the compiled files.

    ``items`` has one entry per :data:`RECIPE_ITEMS` name, in that order; ``lora_scale`` is
    the factor the trainer multiplies the LoRA update by (alpha / rank where it applies
    alpha; 1.0 where its format ignores alpha); ``total_steps`` the optimizer steps it will
    take (None when it cannot be known before the trainer's own data pass)."""

    backend: str
    files: tuple[str, ...]
    items: tuple[RecipeItem, ...]
    lora_scale: float | None = None
    total_steps: int | None = None

    @property
    def differences(self) -> tuple[RecipeItem, ...]:
        return tuple(item for item in self.items if item.differs)

    def item(self, name: str) -> RecipeItem:
        for entry in self.items:
            if entry.item == name:
                return entry
        raise KeyError(name)

    def to_dict(self) -> dict[str, object]:
        return {
            "backend": self.backend,
            "files": list(self.files),
            "items": [item.to_dict() for item in self.items],
            "lora_scale": self.lora_scale,
            "total_steps": self.total_steps,
            "differences": [item.item for item in self.differences],
        }


@dataclass(frozen=True)
class LossLabels:
    """What the numbers Kura shows are, in the trainer's own terms (the run page and
    ``kura run status``): ``loss`` is :attr:`StepProgress.loss` (Musubi's running average,
    another trainer's last raw value), ``raw`` the series ``loss_history`` reads (the chart),
    ``learning_rate`` its learning-rate series."""

    loss: str
    raw: str
    learning_rate: str

    def to_dict(self) -> dict[str, str]:
        return {"loss": self.loss, "raw": self.raw, "learning_rate": self.learning_rate}


# ---------------------------------------------------------------------------------------
# Plan: per-step costs and the memory aids the one fit ladder walks


@dataclass(frozen=True)
class StepCost:
    """What one step costs on one GPU class.

    ``peak_gib`` is the expected device peak and ``upper_gib`` the top of its band;
    ``host_ram_gib`` the host memory the step needs; ``seconds`` the step's whole duration
    (None when unknown) and ``seconds_band`` its ± fraction (None: the plan's default band,
    :data:`kura.runs.timecost.TIME_BAND`). ``fits`` is None when the backend cannot size the
    step (a custom command): such a plan cannot say "fits".
    """

    step: str
    kind: StepKind
    peak_gib: float | None
    upper_gib: float | None
    host_ram_gib: float | None
    seconds: float | None
    fits: bool | None
    source: str
    notes: tuple[str, ...] = ()
    seconds_band: float | None = None


@dataclass(frozen=True)
class MemoryAid:
    """One memory aid a backend offers the fit ladder, as data.

    ``levels`` are the values the ladder may choose, off first; a ``counted`` aid (block
    swap) takes any whole number from 0 to ``limit`` and is searched by bisection, because
    memory falls with every unit. ``requires`` names aids that must be on for this one to
    apply (H2D-only swap needs checkpointing). ``keys`` are the trainer settings it writes.
    ``preferred`` marks a meaning-preserving artifact (fp8 weights): within the ladder's tie
    tolerance a fit with it wins over one without, unless it is not needed at all.
    """

    name: str
    rung: int
    keys: tuple[str, ...]
    saves: str
    costs: str
    levels: tuple[object, ...] = (False, True)
    counted: bool = False
    limit: int = 0
    requires: tuple[str, ...] = ()
    preferred: bool = False
    modifier_of: str | None = None
    """A way of taking another aid (H2D-only is a way to swap blocks), not an aid of its
    own: it is not counted as one and shares that aid's rung."""

    @property
    def off(self) -> object:
        return 0 if self.counted else self.levels[0]


AidChoice = Mapping[str, object]
"""A level for every memory aid of a problem (aid name → level)."""


@dataclass(frozen=True)
class Evaluation:
    """A backend's estimate of one aid choice: the cost of every step, and the seconds per
    training step the ladder compares choices by. ``detail`` is the backend's own estimate
    document (what plan.md renders under "estimate")."""

    costs: tuple[StepCost, ...]
    step_seconds: float | None
    detail: Mapping[str, object] = field(default_factory=dict)

    @property
    def worst(self) -> StepCost:
        """The step with the highest upper edge: the plan's verdict is this step's."""
        return max(self.costs, key=lambda c: c.upper_gib or 0.0)

    @property
    def fits(self) -> bool:
        return bool(self.costs) and all(c.fits is True for c in self.costs)

    @property
    def host_ram_gib(self) -> float:
        return max((c.host_ram_gib or 0.0) for c in self.costs) if self.costs else 0.0


@runtime_checkable
class FitProblem(Protocol):
    """One recipe on one GPU class, as the fit ladder sees it (built by a backend).

    The ladder (``kura.planning.ladder``) searches ``aids`` for the fastest choice that
    fits; the backend alone knows how a choice turns into trainer settings and what it
    costs. ``evaluate`` returns None for a choice the trainer refuses.
    """

    gpu: GpuClass
    aids: tuple[MemoryAid, ...]

    def baseline(self) -> AidChoice:
        """The recipe with no memory aid (every aid at its off level)."""
        ...

    def evaluate(self, choice: AidChoice) -> Evaluation | None: ...

    def change(self, aid: MemoryAid, choice: AidChoice) -> Mapping[str, object]:
        """What taking ``aid`` at its level in ``choice`` changes, for the plan's rung."""
        ...

    def reason(self, aid: MemoryAid, before: Evaluation, after: Evaluation) -> str:
        """Why ``aid`` is needed, in the numbers of its own estimate."""
        ...

    def settings(self, choice: AidChoice) -> Mapping[str, object]:
        """``backend.config`` values (the trainer's names) that realise ``choice``."""
        ...


@dataclass(frozen=True)
class Remedy:
    """The one change a failure's diagnosis proposes, in the backend's settings."""

    aid: str
    change: Mapping[str, object]
    why: str


@dataclass(frozen=True)
class PlanInputs:
    """What a backend plans from besides the run spec, loaded once by the caller.

    ``compile`` is the run's resolved compile inputs (``prepare``'s facts included) when the
    caller has them (``kura run plan``/``estimate``): a backend whose trainer estimates from
    its compiled configuration needs them; one that plans from the spec alone ignores them."""

    bundle: Bundle
    datasets: Mapping[str, DatasetSpec]
    media: Mapping[str, DatasetMedia] = field(default_factory=dict)
    """Per dataset, the videos and images inspection read (empty when not loaded)."""
    compile: CompileInputs | None = None


@dataclass(frozen=True)
class Rung:
    """One memory aid the fit ladder applied (``kura.planning.ladder`` makes them)."""

    aid: str
    change: Mapping[str, object]
    reason: str
    slowdown: float
    ask_first: bool
    peak_gib: float
    upper_gib: float

    def to_dict(self) -> dict[str, object]:
        return {
            "aid": self.aid,
            "change": dict(self.change),
            "reason": self.reason,
            "slowdown": round(self.slowdown, 2),
            "ask_first": self.ask_first,
            "peak_gib": round(self.peak_gib, 2),
            "upper_gib": round(self.upper_gib, 2),
        }


@dataclass(frozen=True)
class PlanFit:
    """A backend's fit for one run on one GPU class, after the ladder's walk.

    ``settings`` are the ladder-managed ``backend.config`` values the choice needs (off
    values included, so an aid an earlier plan set can be undone); ``reasons`` say why each
    key is set; ``document`` is the JSON the plan shows (``kind: fit-plan``).
    """

    gpu: str
    fits: bool
    rungs: tuple[Rung, ...]
    settings: Mapping[str, object]
    reasons: Mapping[str, str]
    document: Mapping[str, object]
    aid_keys: tuple[str, ...] = ()
    """The ``backend.config`` keys of the memory aids (plan.md lists those that are on)."""

    @property
    def ask_first(self) -> bool:
        return any(rung.ask_first for rung in self.rungs)


@dataclass(frozen=True)
class Contingency:
    """The one change the plan approves in advance for an out-of-memory in training."""

    on: str
    rung: Mapping[str, object]
    change: Mapping[str, object]

    def to_dict(self) -> dict[str, object]:
        return {"on": self.on, "rung": dict(self.rung), "change": dict(self.change)}


# ---------------------------------------------------------------------------------------
# Follow: progress of a running step, where its results land


@dataclass(frozen=True)
class StepProgress:
    """Where a step stands, read from the trainer's own log or metrics; fields are None
    until the trainer shows them."""

    step: int | None = None
    total: int | None = None
    epoch: int | None = None
    epochs: int | None = None
    loss: float | None = None
    loss_ema: float | None = None
    seconds_per_step: float | None = None
    elapsed_seconds: int | None = None
    eta_seconds: int | None = None
    last_checkpoint: str | None = None
    validation_loss: float | None = None
    """The newest loss the trainer reported on the held-out datasets."""

    @property
    def fraction(self) -> float | None:
        if self.step is None or not self.total:
            return None
        return self.step / self.total

    def to_dict(self) -> dict[str, object]:
        """The fields plus ``fraction``, as ``kura run status`` shows them."""
        return {**asdict(self), "fraction": self.fraction}


@dataclass(frozen=True)
class Diagnosis:
    """Why a step failed: one plain finding, the log line that proves it, the next action.

    Codes shared by every backend: ``cuda_oom``, ``host_oom``, ``missing_files``,
    ``offline``, ``bad_arguments``, ``dataset_config``, ``nan_loss``, ``unknown``; a backend
    may add its own. For ``cuda_oom`` ``next`` is the backend's remedy (one rung up its
    memory aids).
    """

    code: str
    step: str
    message: str
    evidence: str
    next: Mapping[str, object]
    phase: str | None = None
    exit_code: int | None = None
    details: dict[str, object] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> Diagnosis:
        """The diagnosis ``to_dict`` wrote (as state.json stores it); ValueError naming the
        field when ``data`` is not one."""
        known = {f: data.get(f) for f in ("code", "step", "message", "evidence")}
        for name, value in known.items():
            if not isinstance(value, str):
                raise ValueError(f"diagnosis.{name} must be a string, not {value!r}")
        next_step, details = data.get("next", {}), data.get("details", {})
        phase, exit_code = data.get("phase"), data.get("exit_code")
        if not isinstance(next_step, Mapping) or not isinstance(details, Mapping):
            raise ValueError("diagnosis.next and diagnosis.details must be objects")
        if phase is not None and not isinstance(phase, str):
            raise ValueError(f"diagnosis.phase must be a string or null, not {phase!r}")
        if exit_code is not None and (
            isinstance(exit_code, bool) or not isinstance(exit_code, int)
        ):
            raise ValueError(f"diagnosis.exit_code must be a whole number, not {exit_code!r}")
        extra = set(data) - {*known, "next", "details", "phase", "exit_code"}
        if extra:
            raise ValueError(f"unknown diagnosis field(s): {', '.join(sorted(extra))}")
        return cls(
            code=str(known["code"]),
            step=str(known["step"]),
            message=str(known["message"]),
            evidence=str(known["evidence"]),
            next=dict(next_step),
            phase=phase,
            exit_code=exit_code,
            details=dict(details),
        )


@dataclass(frozen=True)
class SearchKey:
    """One recipe key a sweep may search, with the values the trainer accepts.

    ``key`` is a run.yaml recipe path (``training.learning_rate``). Numbers take
    ``minimum``/``maximum`` (None: unbounded on that side; ``exclusive_minimum`` when the
    trainer refuses the bound itself, as a learning rate of 0). Choices list the values the
    trainer knows; ``open_pattern`` (a regular expression) admits others the trainer also
    accepts by form, as Musubi accepts any optimizer class by dotted path. ``source`` says
    where the limits come from (the trainer's own parser, Kura's schema).
    """

    key: str
    kind: Literal["float", "int", "choice"]
    source: str
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    choices: tuple[object, ...] = ()
    open_pattern: str | None = None


@dataclass(frozen=True)
class SearchKeys:
    """What a backend lets a sweep search for one architecture.

    Memory aids are never here: the fit ladder sets them per trial. ``heldout_loss`` says
    whether the trainer reports a loss on validation datasets (``CompileInputs.validation``).
    """

    keys: Mapping[str, SearchKey]
    heldout_loss: bool
    source: str


@dataclass(frozen=True)
class TrainerBucket:
    """One bucket as a trainer makes it: its size (and frames, for clips), the items in it
    (repeats counted) and the batches they make."""

    width: int
    height: int
    items: int
    batches: int
    frames: int = 1

    def to_dict(self) -> dict[str, int]:
        return {
            "width": self.width,
            "height": self.height,
            "frames": self.frames,
            "items": self.items,
            "batches": self.batches,
        }


@dataclass(frozen=True)
class DatasetBuckets:
    """``Backend.dataset_buckets``: how the run's trainer buckets and batches one of its
    datasets (at the run's resolution, with its bucket ``step`` and micro-batch), and
    where that rule is written (``rule``)."""

    dataset: str
    resolution: tuple[int, int]
    step: int
    batch_size: int
    buckets: tuple[TrainerBucket, ...]
    rule: str

    @property
    def batches(self) -> int:
        return sum(bucket.batches for bucket in self.buckets)

    def to_dict(self) -> dict[str, object]:
        return {
            "dataset": self.dataset,
            "resolution": list(self.resolution),
            "step": self.step,
            "batch_size": self.batch_size,
            "buckets": [bucket.to_dict() for bucket in self.buckets],
            "batches": self.batches,
            "rule": self.rule,
        }


@dataclass(frozen=True)
class OutputLayout:
    """Where a finished (or running) run's LoRA files and samples are, newest last."""

    lora_files: tuple[Path, ...]
    samples: tuple[Path, ...]


@dataclass(frozen=True)
class ResumeRule:
    """How the trainer continues from its newest saved state, as data a job's shell script
    applies where Kura does not run (a SkyPilot job SkyPilot recovered on a new machine).

    The saved states are what ``pattern`` matches under the run folder as the step sees
    it (a glob of plain path characters and ``*``); the newest is the first by ``newest``
    (``mtime``: modification time, ``name``: the greatest name). When one exists, the train
    step gets ``argv`` appended with ``{state}`` replaced by that match's path; when none
    does, it starts over. An ``argv`` without ``{state}`` turns the trainer's own search for
    its state on (empty: the trainer resumes by itself). The same rule as
    :meth:`Backend.resume_arguments`, which applies it to a run folder on this machine.
    """

    pattern: str
    argv: tuple[str, ...]
    newest: Literal["mtime", "name"] = "mtime"

    def under(self, folder: str) -> ResumeRule:
        """The rule with ``pattern`` under ``folder`` (the run folder as the step sees it)."""
        return ResumeRule(f"{folder.rstrip('/')}/{self.pattern}", self.argv, self.newest)


@dataclass(frozen=True)
class AttemptRef:
    """One attempt of a run, as a backend credits the trainer's loss files to it.

    ``folder`` is where the attempt's own files are: the run folder for the current
    attempt, ``attempts/<n>/`` for an archived one (its ``logs/``, and its ``output/`` when a
    relaunch moved that). ``started`` is when it began (Unix seconds; None when unknown).
    Files an earlier attempt left in the run folder (a resume keeps ``output/``, TensorBoard
    folders stay in ``logs/``) are credited by their time with :func:`attempt_at`."""

    number: int
    started: float | None
    current: bool
    folder: Path


def attempt_at(
    attempts: Sequence[AttemptRef], when: float | None, default: AttemptRef | None = None
) -> AttemptRef | None:
    """The attempt that was running at ``when`` (Unix seconds): the last one that started
    by then (a second's tolerance: the trainer's clock and the supervisor's), else the
    first. ``default`` (else None) when ``when`` is unknown or there are no attempts."""
    if when is None or not attempts:
        return default
    owner = attempts[0]
    for attempt in attempts:
        if attempt.started is not None and attempt.started <= when + 1:
            owner = attempt
    return owner


@dataclass(frozen=True)
class LossPoint:
    """One logged training step: its raw loss (NaN or infinite when the trainer logged a
    diverged step) and, when the trainer records it, its wall time (Unix seconds)."""

    step: int
    loss: float
    wall_time: float | None = None


Series = tuple[tuple[int, float], ...]
"""(step, value) pairs, by step."""


@dataclass(frozen=True)
class AttemptLoss:
    """The loss one attempt logged, read from the trainer's own files.

    ``points`` are the raw per-step training loss by step; ``learning_rates`` every
    learning-rate series the trainer logged (its names: ``lr/unet``, ``learning_rate``);
    ``others`` the trainer's other scalars (``loss/average``, ``grad_norm``); ``sources``
    the files read."""

    attempt: int
    points: tuple[LossPoint, ...]
    learning_rates: Mapping[str, Series] = field(default_factory=dict)
    others: Mapping[str, Series] = field(default_factory=dict)
    sources: tuple[Path, ...] = ()

    @property
    def series(self) -> Series:
        return tuple((point.step, point.loss) for point in self.points)


@dataclass(frozen=True)
class LossHistory:
    """Every attempt's training loss (oldest first; an attempt that logged nothing is left
    out). ``metric`` names the loss as the trainer's files do (``loss/current`` in
    TensorBoard, ``loss/loss`` in ``loss_log.db``) and ``source`` where the backend reads it."""

    metric: str
    source: str
    attempts: tuple[AttemptLoss, ...] = ()

    def of(self, number: int) -> AttemptLoss | None:
        return next((a for a in self.attempts if a.attempt == number), None)


@dataclass(frozen=True)
class ImportedRun:
    """A run made outside Kura (the trainer's own job and logs), read as evidence.

    ``status`` is what the trainer's files show (``succeeded`` when the final file is
    there, ``stopped`` when only step checkpoints are, ``unknown`` otherwise); ``config``
    holds the run's settings in this backend's ``backend.config`` names."""

    backend: str
    source: str
    name: str
    architecture: str | None
    bundle: str | None
    config: Mapping[str, object]
    total_steps: int | None
    last_step: int | None
    losses: tuple[tuple[int, float], ...]
    seconds_per_step: float | None
    status: Literal["succeeded", "stopped", "unknown"]
    lora_files: tuple[str, ...]
    job_text: str
    notes: tuple[str, ...] = ()


# ---------------------------------------------------------------------------------------
# Set up: what this machine has for a trainer, and the image its container executor runs

FindingStatus = Literal["ok", "warn", "fail", "skip"]


@dataclass(frozen=True)
class Finding:
    """One check of ``kura doctor``: what was looked at, its status, and the fix."""

    check: str
    status: FindingStatus
    detail: str
    fix: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"check": self.check, "status": self.status, "detail": self.detail, "fix": self.fix}


@dataclass(frozen=True)
class DoctorReport:
    """``kura doctor BACKEND``: the trainer's setup on this machine, each finding with its
    fix. ``details`` are plain facts the backend adds to the document (the environment it
    looked at, its Python); ``ok`` is false when any finding failed."""

    backend: str
    findings: tuple[Finding, ...]
    details: Mapping[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not any(f.status == "fail" for f in self.findings)


@dataclass(frozen=True)
class TrainerSetup:
    """How the trainer gets onto this machine (``kura backend list|install``). ``how`` says
    it in one sentence; ``path`` is where Kura installs or finds it (None when it lives in an
    image or a checkout the person names); ``present`` whether it is there (None: Kura cannot
    tell without starting it); ``install`` the argv lists ``kura backend install`` runs, in
    order, with ``python`` the interpreter that makes it and ``size`` what it costs (empty:
    Kura installs nothing for this trainer, and ``how`` says what to do instead). ``source``
    says what chose ``path`` (an environment variable, ``kura.toml``, ``default``)."""

    backend: str
    how: str
    present: bool | None
    path: Path | None = None
    source: str | None = None
    python: str | None = None
    install: tuple[tuple[str, ...], ...] = ()
    size: str | None = None
    checkout: Path | None = None
    """The trainer's source folder the environment is installed from (``--source``)."""
    record: EnvRecord | None = None
    """What ``kura backend install`` writes into the environment once every command in
    ``install`` succeeded (``kura-env.json``)."""
    needs_source: bool = False
    """Whether the trainer installs from a checkout and none was given or configured (then
    ``install`` is empty and ``kura backend install`` asks for ``--source``)."""


@dataclass(frozen=True)
class ImageRecipe:
    """How ``kura image build BACKEND`` builds the image the backend's container executor
    runs: the Dockerfile Kura ships in the backend's package, its build context, the tag,
    and the trainer release the image is labelled with (the launch gate reads it back)."""

    backend: str
    tag: str
    dockerfile: Path
    context: Path
    release: str


@dataclass(frozen=True)
class LoraExport:
    """``kura export RUN``'s result (the ``lora-export`` document): the LoRA file written
    at ``out`` from ``source``, how (``copied`` as is, or converted by ``mode``, ``why``),
    and what it was verified against (``keys`` tensors, ``modules`` modules, none
    ``unmapped``). ``epoch`` or ``step`` names the checkpoint (None: the final file);
    ``metadata`` is the file's safetensors metadata. ``rank`` and ``fused_qkv`` are what a
    backend's own check of the file read (None where it reads neither; then the document
    leaves them out)."""

    run: str
    epoch: int | None
    step: int | None
    format: str
    architecture: str
    source: str
    out: str
    copied: bool
    mode: str
    why: str
    verified_against: str
    keys: int
    modules: int
    unmapped: tuple[str, ...] = ()
    metadata: Mapping[str, str] = field(default_factory=dict)
    rank: int | None = None
    fused_qkv: bool | None = None
    expert: str | None = None
    """The expert of a two-expert model (Wan 2.2 A14B) this file holds, else None."""
    companions: tuple[LoraExport, ...] = ()
    """The other experts' files of the same save, each exported and verified the same way."""

    kind: ClassVar[str] = "lora-export"

    def to_dict(self) -> dict[str, object]:
        document: dict[str, object] = {
            "kind": self.kind,
            "run": self.run,
            "epoch": self.epoch,
            "step": self.step,
            "format": self.format,
            "architecture": self.architecture,
            "source": self.source,
            "out": self.out,
            "copied": self.copied,
            "mode": self.mode,
            "why": self.why,
            "verified_against": self.verified_against,
            "keys": self.keys,
            "modules": self.modules,
        }
        if self.rank is not None or self.fused_qkv is not None:
            document |= {"rank": self.rank, "fused_qkv": self.fused_qkv}
        if self.expert is not None:
            document |= {
                "expert": self.expert,
                "companions": [c.to_dict() for c in self.companions],
            }
        return document | {"unmapped": list(self.unmapped), "metadata": dict(self.metadata)}


@dataclass(frozen=True)
class FileRules:
    """What one trainer's own documented rules say of a model file for an architecture:
    ``refusals`` (the trainer will not load it) and ``warnings`` (it loads only with some
    setting, or its support is undocumented). Empty when the trainer documents none."""

    refusals: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


@runtime_checkable
class Importer(Protocol):
    """A backend that can read a run made with its trainer outside Kura."""

    def import_job(self, path: Path) -> ImportedRun:
        """Read the trainer's job file (or its output folder) at ``path``; InvalidInput
        naming the file when it is not one."""
        ...


class Backend(Protocol):
    """One trainer behind Kura. See the module docstring for why this is a Protocol."""

    name: str
    """The ``backend.name`` in run.yaml (``musubi-tuner``)."""
    title: str

    @property
    def release(self) -> str:
        """The trainer release this backend compiles for (read-only: a backend may read it
        from its own modules when asked)."""
        ...

    samples_during_training: bool
    """Whether the trainer renders ``training.sample_prompts`` while it trains (then
    ``kura run new`` drafts a few for a character LoRA, and the plan costs a sample step)."""

    def serves(self, architecture: str) -> bool:
        """Whether this backend trains ``architecture`` (a ``kura.architectures`` id)."""
        ...

    def sample_prompt(self, text: str, *, width: int, height: int) -> str:
        """A drafted sample prompt as one line of the trainer's prompt syntax, rendered at
        ``width``×``height`` where that syntax carries the size (a trainer whose compile
        sizes the samples itself returns ``text``)."""
        ...

    def draft_config(self, bundle: Bundle, explicit: Mapping[str, object]) -> DraftedConfig:
        """``backend.config`` defaults for a new run (keys in ``explicit`` left out)."""
        ...

    def knowledge(self, architecture: str) -> TrainerKnowledge:
        """What this trainer's own docs, examples and code give a run on ``architecture``
        (the card's upstream lines and the defaults ``kura run new`` drafts from);
        Unsupported when it does not train ``architecture``."""
        ...

    def tasks(self, bundle: Bundle) -> tuple[str, ...]:
        """The run tasks (:data:`TASKS`) this trainer trains on ``bundle``; empty when it
        does not accept the bundle (laid out for another trainer, or not supported)."""
        ...

    def recipe(self, spec: RunSpec, inputs: PlanInputs, compiled_dir: Path) -> TrainerRecipe:
        """The recipe read back from the files ``compile`` wrote under ``compiled_dir`` (plan.md
        shows this, not run.yaml's intent), each part with where run.yaml's intent differs."""
        ...

    def loss_labels(self) -> LossLabels:
        """What :attr:`StepProgress.loss` and the ``loss_history`` series are, in the
        trainer's own names."""
        ...

    def config_keys(self, architecture: str) -> frozenset[str]:
        """The ``backend.config`` keys this backend reads for ``architecture``."""
        ...

    def search_keys(self, architecture: str) -> SearchKeys:
        """The recipe keys a sweep may search on ``architecture``, with their valid ranges."""
        ...

    def check_settings(self, spec: RunSpec, inputs: PlanInputs) -> None:
        """Refuse explicit values the trainer would refuse (more swapped blocks than the
        model has, say) before anything is written, as SpecError/InvalidInput naming the
        key. A backend whose trainer checks them only at compile says so and returns."""
        ...

    def trainer_dir(self, workspace: Workspace, *, in_container: bool) -> str:
        """The trainer's checkout or install as a step sees it (SpecError when unknown)."""
        ...

    def trainer_bin(self, workspace: Workspace, *, in_container: bool) -> str | None:
        """The folder of the trainer environment's executables (``python``, ``accelerate``)
        as a host step sees it, so the approved argv names the exact interpreter; None where
        the step finds them on its own PATH (an image) or the backend names them otherwise."""
        ...

    def prepare(self, spec: RunSpec, inputs: CompileInputs) -> TrainerFacts | None:
        """Ask the installed trainer what ``compile`` needs (run before it; may call the
        trainer's environment). A backend that needs nothing returns None."""
        ...

    def compile(self, spec: RunSpec, inputs: CompileInputs) -> CompiledRun:
        """The exact files and steps the trainer runs; pure (no I/O). Refusals raise
        SpecError/Unsupported naming the key and the fix."""
        ...

    def check_compiled(self, spec: RunSpec, compiled_dir: Path) -> tuple[str, ...]:
        """Blocking problems the trainer's own validator finds in the files ``compile``
        wrote under ``compiled_dir`` (empty when none, or when the trainer has no validator)."""
        ...

    def fit(
        self, spec: RunSpec, inputs: PlanInputs, gpu: GpuClass, *, host_ram_gib: float | None
    ) -> PlanFit:
        """Walk the one fit ladder (``kura.planning.ladder``) over this trainer's aids."""
        ...

    def estimate(self, spec: RunSpec, inputs: PlanInputs, gpu: GpuClass | None) -> Evaluation:
        """Every step's cost with the run exactly as written (no aid added)."""
        ...

    def contingency(self, spec: RunSpec, inputs: PlanInputs) -> Contingency | None:
        """The change to approve in advance for an out-of-memory in training."""
        ...

    def failure_config(self, spec: RunSpec, inputs: PlanInputs) -> Mapping[str, object]:
        """What a failure's diagnosis needs to know of the run's settings (JSON values)."""
        ...

    def remedy(self, config: Mapping[str, object], *, step: str, phase: str) -> dict[str, object]:
        """The next memory aid after an out-of-memory in ``step`` during ``phase``, as a
        rung document (``action``, ``key``, ``from``/``to`` or ``why``)."""
        ...

    def resume_arguments(self, run_dir: Path, *, trainer_run_dir: str) -> tuple[str, ...]:
        """Extra train arguments that continue from the newest saved state (CheckFailed
        when there is none). ``trainer_run_dir`` is the run folder as the step sees it."""
        ...

    def resume_rule(self, run_id: str) -> ResumeRule:
        """:meth:`resume_arguments` as data, for a job that resumes without Kura
        (Unsupported when the trainer cannot resume)."""
        ...

    def diagnose(
        self, log_text: str, *, step: str, exit_code: int | None, config: Mapping[str, object]
    ) -> Diagnosis:
        """Why ``step`` failed, from the log it wrote in this attempt."""
        ...

    def progress(self, log_path: Path) -> StepProgress:
        """Progress of a step from its log file."""
        ...

    def loss_history(self, run_dir: Path, attempts: Sequence[AttemptRef]) -> LossHistory:
        """Each attempt's training loss (and learning rates) from the trainer's own files
        under ``run_dir`` (the run page's chart, ``kura run status``'s loss EMA); empty
        series, never an error, before the trainer logged anything."""
        ...

    def stopped(self, log_text: str, *, step: str, exit_code: int | None) -> bool:
        """Whether a step that exited with ``exit_code`` was stopped (an interrupt the
        trainer caught and exited 0 on) rather than finished: recorded as a cancel."""
        ...

    def lora_layout(self, keys: tuple[str, ...], architecture: str) -> str:
        """The ``kura export`` layout (``musubi``, ``diffusers``) a LoRA file with these
        keys is written in, so export reads it from there."""
        ...

    def outputs(self, run_dir: Path) -> OutputLayout:
        """The run's LoRA files and samples as the trainer wrote them."""
        ...

    def dataset_buckets(self, spec: RunSpec, inputs: PlanInputs) -> tuple[DatasetBuckets, ...]:
        """Each run dataset's buckets and batches per epoch as the trainer makes them
        (``kura dataset inspect NAME --run RUN``), from the image sizes and clips inspection
        read (``inputs.media``, ``inputs.compile``); Unsupported where Kura cannot tell."""
        ...

    def file_rules(self, report: ModelReport, architecture: str | None) -> FileRules:
        """The trainer's documented rules on a base-model file (not a LoRA) serving
        ``report.role`` for ``architecture`` (None: not declared): pre-quantised, fp8 or
        fp16 files it refuses or takes only with some setting (``kura model check`` and
        bundle resolution). A trainer that documents none returns ``FileRules()``."""
        ...

    def doctor(self, workspace: Workspace | None) -> DoctorReport:
        """``kura doctor NAME``: this machine's setup for the trainer (its image, its
        environment, the GPU it sees), each finding with its fix. Only looks."""
        ...

    def setup(
        self,
        workspace: Workspace | None,
        *,
        python: str | None = None,
        source: Path | None = None,
    ) -> TrainerSetup:
        """How the trainer is installed here and, where Kura installs it, the commands that
        do (``python`` makes the environment, None: Kura's own; ``source`` is the trainer's
        checkout to install from, checked by the backend, for a trainer installed from
        source). Only looks."""
        ...

    def image(self, workspace: Workspace | None) -> ImageRecipe:
        """The image the Docker executor runs for this trainer (the workspace's image name
        where kura.toml sets one); Unsupported naming how the trainer is installed instead
        when it has no image."""
        ...

    def export(
        self,
        workspace: Workspace,
        run_id: str,
        *,
        epoch: int | None,
        fmt: str,
        out: Path | None,
    ) -> LoraExport:
        """``kura export RUN``: one LoRA file in the layout ``fmt`` loads, verified against
        the base model, written under the run (or ``out``)."""
        ...
