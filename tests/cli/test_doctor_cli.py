"""`kura doctor BACKEND` and `kura image build BACKEND` dispatch through the registry: every
registered backend answers (the toy too), `musubi` stays a spelling of musubi-tuner."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KURA_BACKEND_MODULES", "toy-trainer=tests.backends.toy.backend")
    monkeypatch.setenv("PYTHONPATH", f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")


def test_the_toys_doctor_answers_through_the_registry(kura, toy: None) -> None:
    result = kura("doctor", "toy-trainer", "--json")
    assert result.exit_code == 0, result.stdout
    doc = result.json()
    assert (doc["kind"], doc["scope"], doc["ok"]) == ("doctor", "toy-trainer", True)
    assert [f["check"] for f in doc["findings"]] == ["toy trainer"]
    assert doc["trainer"].endswith("toy_trainer.py")


def test_musubi_is_a_spelling_of_musubi_tuner(kura) -> None:
    short = kura("image", "build", "musubi", "--json").json()
    full = kura("image", "build", "musubi-tuner", "--json").json()
    assert short == full
    assert short["backend"] == "musubi-tuner"


def test_a_backend_without_an_image_refuses_with_its_install(kura, toy: None) -> None:
    result = kura("image", "build", "kohakumoss", "--json")
    assert result.exit_code != 0
    assert "kura backend install kohakumoss" in result.json()["error"]["hint"]
    toy_image = kura("image", "build", "toy-trainer", "--json")
    assert toy_image.exit_code != 0 and "host" in toy_image.json()["error"]["hint"]


def test_an_unknown_backend_lists_the_registered_ones(kura) -> None:
    result = kura("doctor", "no-such-trainer", "--json")
    assert result.exit_code != 0
    assert "musubi-tuner" in result.json()["error"]["hint"]


def test_the_machine_doctor_points_at_every_backends_doctor(kura, toy: None) -> None:
    doc = kura("doctor", "--json").json()
    assert doc["kind"] == "doctor"
    assert "kura doctor toy-trainer" in {step["command"] for step in doc["next"]}
