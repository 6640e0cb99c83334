"""Runs: ``runs/<id>/`` — drafting run.yaml, compiling it, planning, approval."""
