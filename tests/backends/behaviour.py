"""The behaviour every backend shows, whichever trainer it wraps.

As Optuna ships one suite its storages all pass, :class:`BackendBehaviour` is the suite every
backend passes: a class of tests over a ``backend`` fixture (a registered
:class:`~kura.backends.base.Backend`). ``tests/backends/test_behaviour.py`` runs it over
every registered backend and the toy; a backend outside Kura runs it by subclassing it with
its own ``backend`` fixture.

What it pins, verb by verb: names are registry names; every protocol verb is there; the
tasks a backend trains are run tasks on bundles of architectures it serves; its knowledge
covers every recipe key; a drafted run compiles to steps whose argv are lists of strings,
whose compiled files are relative names the steps refer to, and whose container mounts
write only inside the run; ``fit`` returns a typed ``PlanFit`` on every GPU class; a run
that wrote nothing reads as empty (progress, outputs, loss history), never as an error; a
verb a trainer cannot answer refuses with a KuraError and its hint, never with
NotImplementedError or AttributeError; ``file_rules`` accept the files of the backend's own
bundles; ``doctor`` and ``setup`` answer with typed values without the trainer's
environment. The compile cases need no trainer (KohakuMoss, which compiles only through its
environment, takes it and its tiny stand-in model, as the conformance matrix does).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import get_args

import pytest
from tests.backends.conformance import NEEDS_ENV, moss_standin
from tests.builders import character_workspace

from kura.backends.base import (
    RECIPE_ITEMS,
    TASKS,
    Backend,
    CompiledRun,
    Diagnosis,
    DoctorReport,
    DraftedConfig,
    LossHistory,
    OutputLayout,
    PlanFit,
    PlanInputs,
    SearchKeys,
    StepKind,
    StepProgress,
    TrainerKnowledge,
    TrainerSetup,
)
from kura.backends.knowledge_data import recipe_keys
from kura.backends.registry import backend_names, get_backend
from kura.errors import KuraError
from kura.models.bundles import Bundle, list_bundles
from kura.planning.gpus import GPU_CLASSES
from kura.schema.run import RunSpec
from kura.workspace import Workspace

__all__ = ["ENV_VARIABLES", "BackendBehaviour", "Drafted", "check_compiled_folder"]

ENV_VARIABLES = ("KURA_MUSUBI_ENV", "KURA_AITK_ENV", "KURA_KOHAKUMOSS_ENV")
"""The trainers' environment variables, pointed at nothing where a test answers without them."""


@dataclass(frozen=True)
class Drafted:
    """One drafted run of the backend, with its plan inputs (prepared: compile's inputs
    included) and the workspace it lives in."""

    workspace: Workspace
    spec: RunSpec
    inputs: PlanInputs


def accepted_bundles(backend: Backend) -> list[Bundle]:
    """Every bundle the backend trains some task on."""
    return [bundle for bundle in list_bundles() if backend.tasks(bundle)]


def _character_bundle(backend: Backend) -> Bundle:
    found = [b for b in accepted_bundles(backend) if "character" in backend.tasks(b)]
    assert found, f"{backend.name} trains no character LoRA on any bundle"
    return found[0]


def draft(backend: Backend, root: Path, sets: tuple[str, ...] = ()) -> Drafted:
    """``kura run new`` for a character LoRA on the backend's first such bundle (its model
    files stand-ins in the hub cache; ``sets`` what a stand-in forces), then the run's
    prepared plan inputs."""
    from kura.models.standins import install_bundle_in_hub_cache
    from kura.runs.context import load_context
    from kura.runs.new import create_run
    from kura.runs.plan import plan_inputs

    bundle = _character_bundle(backend)
    install_bundle_in_hub_cache(bundle, Path(os.environ["HF_HUB_CACHE"]))
    workspace = character_workspace(root)
    try:
        backend.image(workspace)
    except KuraError:
        sets = (*sets, "execution.executor=host")
    created = create_run(
        workspace,
        datasets=["myaku"],
        base=bundle.id,
        backend=backend.name,
        sets=list(sets),
        now=datetime(2026, 12, 1, 9, 0),
    )
    context = load_context(workspace, created.run_id)
    return Drafted(workspace, context.spec, plan_inputs(workspace, context))


def _refuses_with_a_hint(call: Callable[[], object]) -> None:
    """``call`` answers, or refuses as a KuraError saying what to do (any other exception
    propagates and fails the test)."""
    refusal: KuraError | None = None
    try:
        call()
    except KuraError as raised:
        refusal = raised
    if refusal is not None:
        assert refusal.hint, f"{type(refusal).__name__} without a hint: {refusal.message}"


class BackendBehaviour:
    """The suite; a subclass provides the ``backend`` fixture."""

    @pytest.fixture
    def no_trainer_envs(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        for variable in ENV_VARIABLES:
            monkeypatch.setenv(variable, str(tmp_path / "no-env"))

    @pytest.fixture
    def drafted(self, backend: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Drafted:
        monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
        sets: tuple[str, ...] = ()
        if backend.name in NEEDS_ENV:
            sets = moss_standin(tmp_path / "weights", monkeypatch)
        return draft(backend, tmp_path, sets)

    # -- names and verbs ----------------------------------------------------------------

    def test_its_name_is_the_registry_name(self, backend: Backend) -> None:
        assert backend.name in backend_names()
        assert get_backend(backend.name) is backend
        assert backend.title and isinstance(backend.title, str)
        assert backend.release and isinstance(backend.release, str)
        assert isinstance(backend.samples_during_training, bool)

    def test_it_has_every_verb_of_the_protocol(self, backend: Backend) -> None:
        """The registry hands backends out as ``Backend`` by import name, so a verb added
        to the protocol must be on every backend or the layer calling it fails at run time."""
        verbs = [name for name in vars(Backend) if not name.startswith("_")]
        assert [verb for verb in verbs if not hasattr(backend, verb)] == []

    # -- what it trains -----------------------------------------------------------------

    def test_it_trains_run_tasks_on_bundles_of_architectures_it_serves(
        self, backend: Backend
    ) -> None:
        bundles = accepted_bundles(backend)
        assert bundles, f"{backend.name} accepts no bundle"
        for bundle in bundles:
            assert backend.serves(bundle.architecture), bundle.id
            tasks = backend.tasks(bundle)
            assert set(tasks) <= set(TASKS) and len(set(tasks)) == len(tasks), (bundle.id, tasks)

    def test_its_knowledge_covers_every_recipe_key(self, backend: Backend) -> None:
        for architecture in sorted({b.architecture for b in accepted_bundles(backend)}):
            known = backend.knowledge(architecture)
            assert isinstance(known, TrainerKnowledge)
            assert (known.backend, known.architecture) == (backend.name, architecture)
            assert set(recipe_keys()) <= set(known.defaults), architecture
            assert all(value.source for value in known.defaults.values())

    def test_an_architecture_it_does_not_serve_is_refused_with_a_hint(
        self, backend: Backend
    ) -> None:
        assert not backend.serves("no-such-architecture")
        with pytest.raises(KuraError) as refused:
            backend.knowledge("no-such-architecture")
        assert refused.value.hint

    def test_its_drafts_and_search_keys_are_typed(self, backend: Backend) -> None:
        bundle = _character_bundle(backend)
        drafted = backend.draft_config(bundle, {})
        assert isinstance(drafted, DraftedConfig)
        assert set(drafted.reasons) == set(drafted.config)
        config_keys = backend.config_keys(bundle.architecture)
        assert isinstance(config_keys, frozenset)
        assert set(drafted.config) <= config_keys or backend.name in NEEDS_ENV
        search = backend.search_keys(bundle.architecture)
        assert isinstance(search, SearchKeys) and search.source
        assert all(key.key == name for name, key in search.keys.items())
        prompt = backend.sample_prompt("myaku smiling", width=1024, height=768)
        assert isinstance(prompt, str) and "myaku smiling" in prompt

    def test_file_rules_accept_the_files_of_its_own_bundles(
        self, backend: Backend, tmp_path: Path
    ) -> None:
        """A bundle the backend accepts is laid out for its trainer: none of its files is
        one the trainer's documented rules refuse."""
        from kura.models.identify import identify
        from kura.models.standins import install_bundle_in_hub_cache

        refused = {}
        for bundle in accepted_bundles(backend):
            placed = install_bundle_in_hub_cache(bundle, tmp_path / bundle.id)
            for slot, path in placed.items():
                rules = backend.file_rules(identify(path), bundle.architecture)
                if rules.refusals:
                    refused[f"{bundle.id}:{slot}"] = rules.refusals
        assert refused == {}

    # -- compile and plan ---------------------------------------------------------------

    def test_a_draft_compiles_to_argv_lists_and_relative_files(self, drafted: Drafted) -> None:
        backend = get_backend(drafted.spec.backend.name)
        assert drafted.inputs.compile is not None
        backend.check_settings(drafted.spec, drafted.inputs)
        compiled = backend.compile(drafted.spec, drafted.inputs.compile)
        assert isinstance(compiled, CompiledRun)
        assert (compiled.backend, compiled.release) == (backend.name, backend.release)
        assert compiled.steps, "no step"
        names = [step.name for step in compiled.steps]
        assert len(set(names)) == len(names), names
        kinds = set(get_args(StepKind))
        run_dir = drafted.inputs.compile.run_dir
        for step in compiled.steps:
            assert isinstance(step.argv, tuple) and step.argv, step.name
            assert all(isinstance(part, str) and part for part in step.argv), step.argv
            assert step.kind in kinds and step.cwd, step.name
            assert all(isinstance(v, str) for v in step.env.values()), step.env
            for part in step.argv:
                compiled_file = _compiled_name(part, run_dir)
                if compiled_file is not None:
                    assert compiled_file in compiled.files, f"{step.name} reads {part}"
        for name in compiled.files:
            assert not Path(name).is_absolute() and ".." not in Path(name).parts, name

    def test_a_container_writes_only_inside_the_run(self, drafted: Drafted) -> None:
        backend = get_backend(drafted.spec.backend.name)
        assert drafted.inputs.compile is not None
        compiled = backend.compile(drafted.spec, drafted.inputs.compile)
        if drafted.spec.execution.executor == "host":
            assert compiled.container is None
            return
        container = compiled.container
        assert container is not None, f"{backend.name} compiles no container for a docker run"
        run_dir = Path(drafted.inputs.compile.run_dir)
        targets = [mount.target for mount in container.mounts]
        assert len(set(targets)) == len(targets), targets
        assert str(run_dir) in targets
        for mount in container.mounts:
            assert Path(mount.target).is_absolute(), mount
            if not mount.read_only:
                assert Path(mount.target).is_relative_to(run_dir), mount
        for dataset in drafted.inputs.compile.datasets:
            assert dataset.media_dir in targets, dataset.name

    def test_fit_answers_a_plan_fit_on_every_gpu_class(self, drafted: Drafted) -> None:
        backend = get_backend(drafted.spec.backend.name)
        for gpu in GPU_CLASSES.values():
            fit = backend.fit(drafted.spec, drafted.inputs, gpu, host_ram_gib=64.0)
            assert isinstance(fit, PlanFit) and fit.gpu == gpu.id
            assert isinstance(fit.fits, bool), gpu.id
            assert set(fit.reasons) <= set(fit.settings) | set(fit.aid_keys), gpu.id
            if not fit.fits:
                assert dict(fit.settings) == {}, gpu.id

    def test_its_recipe_reads_every_item_back_from_the_compiled_files(
        self, drafted: Drafted
    ) -> None:
        from kura.runs.compile import compile_in_workspace

        backend = get_backend(drafted.spec.backend.name)
        compile_in_workspace(drafted.workspace, drafted.spec.id)
        compiled_dir = drafted.workspace.run_dir(drafted.spec.id) / "compiled"
        recipe = backend.recipe(drafted.spec, drafted.inputs, compiled_dir)
        assert recipe.backend == backend.name
        # every part in plan order; a trainer may add its own after them (AI-Toolkit's
        # ``sampling``: its job file samples on its own schedule)
        names = tuple(item.item for item in recipe.items)
        assert names[: len(RECIPE_ITEMS)] == RECIPE_ITEMS and len(set(names)) == len(names)
        assert all(item.runs and item.source for item in recipe.items), recipe.items

    # -- following a run ----------------------------------------------------------------

    def test_a_run_that_wrote_nothing_reads_as_empty(
        self, backend: Backend, tmp_path: Path
    ) -> None:
        run_dir = tmp_path / "runs" / "20261201-0900"
        (run_dir / "logs").mkdir(parents=True)
        progress = backend.progress(run_dir / "logs" / "train.log")
        assert isinstance(progress, StepProgress) and progress.step is None
        outputs = backend.outputs(run_dir)
        assert isinstance(outputs, OutputLayout)
        assert outputs.lora_files == () and outputs.samples == ()
        history = backend.loss_history(run_dir, ())
        assert isinstance(history, LossHistory) and history.attempts == ()
        labels = backend.loss_labels()
        assert labels.loss and labels.raw and labels.learning_rate

    def test_a_failure_is_diagnosed_with_a_next_action(self, backend: Backend) -> None:
        found = backend.diagnose("Traceback: it broke\n", step="train", exit_code=1, config={})
        assert isinstance(found, Diagnosis) and found.step == "train"
        assert found.code and "action" in found.next
        assert backend.stopped("", step="train", exit_code=1) is False

    def test_what_it_cannot_do_is_refused_with_a_hint(
        self, backend: Backend, tmp_path: Path, no_trainer_envs: None
    ) -> None:
        """Each verb a trainer may lack (an image, a state to resume, a layout Kura reads,
        an export of a run with no LoRA) answers or raises a KuraError with its hint:
        never NotImplementedError or AttributeError."""
        workspace = character_workspace(tmp_path / "ws")
        run_dir = workspace.run_dir("20261201-0900")
        (run_dir / "output").mkdir(parents=True)
        _refuses_with_a_hint(lambda: backend.image(workspace))
        with pytest.raises(KuraError) as no_state:
            backend.resume_arguments(run_dir, trainer_run_dir=str(run_dir))
        assert no_state.value.hint
        _refuses_with_a_hint(lambda: backend.lora_layout(("a.weight",), "zimage"))
        with pytest.raises(KuraError) as no_lora:
            backend.export(workspace, run_dir.name, epoch=None, fmt="comfyui", out=None)
        assert no_lora.value.hint

    # -- this machine -------------------------------------------------------------------

    def test_doctor_answers_a_typed_report_without_the_trainer_env(
        self, backend: Backend, no_trainer_envs: None
    ) -> None:
        report = backend.doctor(None)
        assert isinstance(report, DoctorReport) and report.backend == backend.name
        assert report.findings
        for finding in report.findings:
            assert finding.status in ("ok", "warn", "fail"), finding
            if finding.status != "ok":
                assert finding.fix, finding

    def test_setup_answers_how_it_installs_without_the_trainer_env(
        self, backend: Backend, tmp_path: Path, no_trainer_envs: None
    ) -> None:
        setup = backend.setup(None)
        assert isinstance(setup, TrainerSetup) and setup.backend == backend.name
        assert setup.how
        if setup.path == tmp_path / "no-env":  # an environment of its own, not made yet
            assert setup.present is False
        for argv in setup.install:
            assert isinstance(argv, tuple) and all(isinstance(p, str) for p in argv), argv


def check_compiled_folder(compiled: Path) -> None:
    """A run's written ``compiled/`` folder as launch reads it: ``steps.json``'s steps are
    argv lists of strings, and ``container.json`` (a container run's) binds writable only
    the run's own folders (``/kura/run`` inside the container)."""
    import json

    from kura.runs.launching import CONTAINER_RUN_DIR

    steps = json.loads((compiled / "steps.json").read_text())["steps"]
    assert steps
    for step in steps:
        argv = step["argv"]
        assert isinstance(argv, list) and argv, step["name"]
        assert all(isinstance(part, str) and part for part in argv), argv
    container = compiled / "container.json"
    if container.is_file():
        mounts = json.loads(container.read_text())["mounts"]
        for mount in mounts:
            if not mount["read_only"]:
                assert Path(mount["target"]).is_relative_to(CONTAINER_RUN_DIR), mount


def _compiled_name(part: str, run_dir: str) -> str | None:
    """The name under ``compiled/`` an argv part refers to, None when it names none."""
    prefix = f"{run_dir.rstrip('/')}/compiled/"
    return part.removeprefix(prefix) if part.startswith(prefix) else None
