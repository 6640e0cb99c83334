"""Estimator accuracy against the calibration points (vram.md §3).

Run: ``.venv/bin/python bench/estimator_accuracy.py``. Prints, for every memory point, the
estimate next to the measurement (or the reported OOM / fit), the median absolute error of
the measured points, whether any OOM-reported configuration is said to fit, the resulting
band per architecture, and the step-time points for information. Exits 1 when the median
error exceeds 10 % or an OOM-reported configuration fits.
"""

from __future__ import annotations

import statistics
import sys

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

TARGET_MEDIAN = 0.10


def main() -> int:
    results = evaluate_memory_points()
    print("Memory points (GiB)")
    print(f"{'point':36} {'model':20} {'measured':>9} {'estimate':>9} {'error':>7}  fits?")
    oom_fits = []
    for result in results:
        point = result.point
        fits = ""
        if point.gpu is not None:
            est = estimate(point.config, get_gpu_class(point.gpu))
            fits = f"{'fits' if est.fits else 'no fit'} on {point.gpu} (upper {est.upper_gib:.1f})"
            if point.outcome == "oom" and est.fits:
                oom_fits.append(point.id)
        measured = (
            f"{point.measured_gib:.1f}" if point.measured_gib is not None else point.outcome.upper()
        )
        error = f"{result.error:+.1%}" if result.error is not None else "–"
        print(
            f"{point.id:36} {point.config.model:20} {measured:>9} "
            f"{result.predicted_gib:9.2f} {error:>7}  {fits}"
        )
    median = median_abs_error(results)
    print(
        f"\nmedian |error| over {sum(r.error is not None for r in results)} measured points: "
        f"{median:.1%} (target <= {TARGET_MEDIAN:.0%})"
    )
    print(f"OOM-reported configurations estimated to fit: {oom_fits or 'none'}")

    print("\nBand per architecture (full width, fraction of peak)")
    seen = set()
    for point in MEMORY_POINTS:
        shape = get_shape(point.config.model)
        if shape.architecture in seen:
            continue
        seen.add(shape.architecture)
        fraction, reason = band_fraction(shape)
        print(f"  {shape.architecture:18} {fraction:.0%}  ({reason})")

    print("\nStep-time points (s/step, informational)")
    time_errors = []
    for point in TIME_POINTS:
        est = estimate(point.config, get_gpu_class(point.gpu))
        assert est.step_seconds is not None
        error = est.step_seconds / point.measured_s - 1
        time_errors.append(abs(error))
        print(
            f"  {point.id:32} {point.gpu:12} measured {point.measured_s:6.2f} "
            f"estimate {est.step_seconds:6.2f} {error:+.0%}"
        )
    print(f"median |error| step time: {statistics.median(time_errors):.0%}")
    return 0 if median <= TARGET_MEDIAN and not oom_fits else 1


if __name__ == "__main__":
    sys.exit(main())
