"""Calibration: the accuracy target and the OOM guarantee, and the bench script itself."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from kura.backends.musubi.estimator.calibration import (
    MEMORY_POINTS,
    TIME_POINTS,
    band_fraction,
    evaluate_memory_points,
    median_abs_error,
)
from kura.backends.musubi.estimator.estimate import estimate
from kura.planning.gpus import get_gpu_class
from kura.sizing.shapes import get_shape

BENCH = Path(__file__).resolve().parents[4] / "bench" / "estimator_accuracy.py"


def test_points_are_sourced_and_well_formed() -> None:
    assert len({point.id for point in MEMORY_POINTS}) == len(MEMORY_POINTS)
    for point in MEMORY_POINTS:
        assert point.source
        if point.outcome == "measured":
            assert point.measured_gib is not None
        else:
            assert point.gpu is not None
    for point in TIME_POINTS:
        assert point.source
        assert point.measured_s > 0


def test_median_error_meets_the_target() -> None:
    assert median_abs_error() <= 0.10


@pytest.mark.parametrize(
    "point", [p for p in MEMORY_POINTS if p.outcome == "oom"], ids=lambda p: p.id
)
def test_oom_reports_never_fit(point) -> None:
    est = estimate(point.config, get_gpu_class(point.gpu))
    assert est.fits is False


@pytest.mark.parametrize(
    "point", [p for p in MEMORY_POINTS if p.outcome == "fits"], ids=lambda p: p.id
)
def test_reported_fits_fit(point) -> None:
    assert estimate(point.config, get_gpu_class(point.gpu)).fits is True


def test_band_covers_every_measurement_of_its_architecture() -> None:
    for result in evaluate_memory_points():
        if result.error is None:
            continue
        fraction, _ = band_fraction(get_shape(result.point.config.model))
        assert abs(result.error) <= fraction / 2 + 1e-9


def test_bench_script_passes(capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location("estimator_accuracy", BENCH)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main() == 0
    out = capsys.readouterr().out
    assert "median |error|" in out
    for point in MEMORY_POINTS:
        assert point.id in out
