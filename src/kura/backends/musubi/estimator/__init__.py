"""Musubi Tuner's memory and step-time estimator: how Musubi lays out one LoRA training step
on a GPU (its fp8 modes, block swap, checkpointing and caching), per architecture."""
