"""AI-Toolkit's memory and step-time estimator: every step it runs for a compiled job."""
