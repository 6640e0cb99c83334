"""Sweeps: a hyperparameter search over a base run, on the backend seam.

A sweep is an Optuna study over one base run (``kura sweep new --from RUN --space FILE``):
the space names recipe keys the backend exposes (:mod:`kura.sweep.space`), warm-started by
the baseline, the cards' curated configs and past winners (:mod:`kura.sweep.warmstart`),
approved once as an envelope (:mod:`kura.sweep.envelope`), and run by workers
(:mod:`kura.sweep.worker`) that each plan a sampled config on their own GPU
(:mod:`kura.sweep.gate`), reuse caches (:mod:`kura.sweep.caches`), hold a lease on their
trial (:mod:`kura.sweep.lease`), follow the loss and stop weak trials
(:mod:`kura.sweep.follow`), and record an explicit objective (:mod:`kura.sweep.objective`).
Optuna is imported only inside these modules, never at CLI start-up.
"""
