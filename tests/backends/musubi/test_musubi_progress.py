"""Progress from Musubi's tqdm bar and epoch lines, as they land in a log file."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from kura.backends.musubi.progress import parse_progress, tail_progress
from kura.execution.summary import ema

# tqdm redraws with "\r" and no newline: one log line holds many redraws.
REAL_LINES = (
    "running training / 学習開始\n"
    "  num epochs / epoch数: 16\n"
    "\rsteps:   0%|          | 0/1000 [00:00<?, ?it/s]\n"
    "epoch 1/16\n"
    "\rsteps:   0%|          | 1/1000 [00:03<52:10,  3.13s/it, avr_loss=0.131]"
    "\rsteps:   0%|          | 2/1000 [00:04<40:00,  2.41s/it, avr_loss=0.125]"
    "\rsteps:  12%|█▏        | 120/1000 [02:00<14:40,  1.00s/it, avr_loss=0.0912]"
)


def test_parses_the_last_redraw() -> None:
    progress = parse_progress(REAL_LINES)
    assert progress.step == 120
    assert progress.total == 1000
    assert progress.epoch == 1
    assert progress.epochs == 16
    assert progress.loss == pytest.approx(0.0912)
    assert progress.seconds_per_step == pytest.approx(1.0)
    assert progress.elapsed_seconds == 120
    assert progress.eta_seconds == 14 * 60 + 40
    assert progress.fraction == pytest.approx(0.12)
    expected = ema([0.131, 0.125, 0.0912])
    assert progress.loss_ema == pytest.approx(expected)


def test_iterations_per_second_and_hours() -> None:
    line = "\rsteps:   5%|▌         | 50/1000 [00:21<1:06:43,  2.50it/s, avr_loss=1.23e-5]"
    progress = parse_progress(line)
    assert progress.seconds_per_step == pytest.approx(0.4)
    assert progress.eta_seconds == 3600 + 6 * 60 + 43
    assert progress.loss == pytest.approx(1.23e-5)


def test_before_the_first_step() -> None:
    progress = parse_progress("steps:   0%|          | 0/500 [00:00<?, ?it/s]")
    assert (progress.step, progress.total) == (0, 500)
    assert progress.seconds_per_step is None
    assert progress.eta_seconds is None
    assert progress.loss is None


def test_extra_postfix_keys_from_scale_weight_norms() -> None:
    line = (
        "steps:  1%|| 5/500 [00:05<08:15, 1.00s/it, "
        "Average key norm=0.5, Keys Scaled=3, avr_loss=0.2]"
    )
    assert parse_progress(line).loss == pytest.approx(0.2)


def test_nan_loss() -> None:
    text = "\rsteps:  1%|| 5/500 [00:05<08:15, 1.00s/it, avr_loss=0.2]" + (
        "\rsteps:  1%|| 6/500 [00:06<08:14, 1.00s/it, avr_loss=nan]"
    )
    progress = parse_progress(text)
    assert progress.loss is not None
    assert math.isnan(progress.loss)
    assert progress.loss_ema is not None
    assert math.isnan(progress.loss_ema)


def test_other_bars_are_ignored() -> None:
    text = (
        "\rsteps:  10%|█         | 10/100 [00:10<01:30, 1.00s/it, avr_loss=0.1]\n"
        "generating sample images at step / サンプル画像生成 ステップ: 10\n"
        "Sampling timesteps for prompt 1: 100%|██████████| 20/20 [00:05<00:00,  3.9it/s]\n"
        "saving checkpoint: /out/lora-000001.safetensors\n"
    )
    progress = parse_progress(text)
    assert progress.step == 10
    assert progress.last_checkpoint == "/out/lora-000001.safetensors"


def test_tail_reads_only_the_end(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    head = "epoch 1/2\n" + "noise line\n" * 200_000
    tail = "".join(
        f"\rsteps:  {n}%|          | {n}/100 [00:{n:02d}<01:00, 1.00s/it, avr_loss=0.{n:02d}]"
        for n in range(1, 51)
    )
    log.write_text(head + tail)
    progress = tail_progress(log, max_bytes=8 * 1024)
    assert progress.step == 50
    assert progress.loss == pytest.approx(0.5)
    assert progress.epoch is None  # the epoch line is outside the bounded tail
    assert tail_progress(log).step == 50


def test_missing_log_gives_empty_progress(tmp_path: Path) -> None:
    assert tail_progress(tmp_path / "none.log").step is None


def test_ema() -> None:
    assert ema([]) is None
    assert ema([1.0]) == 1.0
    assert ema([1.0, 0.0], alpha=0.5) == 0.5
