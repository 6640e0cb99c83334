"""Musubi's recipe read back from the compiled train argv (``Backend.recipe``)."""

from __future__ import annotations

from kura.backends.musubi.recipe import LOSS_LABELS, parse_flags


def test_flags_split_at_the_script_and_keep_their_values() -> None:
    launch, flags = parse_flags(
        [
            "accelerate",
            "launch",
            "--num_processes",
            "2",
            "src/musubi_tuner/flux_2_train_network.py",
            "--optimizer_args",
            "weight_decay=0.01",
            "betas=(0.9,0.95)",
            "--gradient_checkpointing",
            "--network_dim",
            "32",
        ]
    )
    assert launch == {"--num_processes": ("2",)}
    assert flags == {
        "--optimizer_args": ("weight_decay=0.01", "betas=(0.9,0.95)"),
        "--gradient_checkpointing": (),
        "--network_dim": ("32",),
    }
    assert parse_flags(["python", "train.py", "--x", "1"]) == ({}, {})


def test_musubis_average_loss_is_labelled_as_its_running_mean() -> None:
    assert LOSS_LABELS.loss.startswith("Average loss (Musubi's avr_loss")
    assert LOSS_LABELS.raw.startswith("TensorBoard loss/current")
