"""Trainer-neutral sizing: architecture shapes, optimizer state bytes, FLOPs and throughput.

Every backend's estimator sizes the same DiTs; what differs is how its trainer loads,
quantises, offloads and checkpoints them. The numbers that do not depend on the trainer live
here, below the backends (nothing here imports a backend).
"""
