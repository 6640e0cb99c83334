"""AI-Toolkit (ostris/ai-toolkit) behind the backend seam.

Kura writes one ``job: extension`` file with a ``diffusion_trainer`` process (the trainer
type that runs without the UI's database), typed by :mod:`.schema` (every key one that
AI-Toolkit's config classes read), and launches ``python run.py <job>`` from the checkout.
Every AI-Toolkit key, file name and log line Kura knows lives in this package.
"""
