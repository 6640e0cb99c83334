"""Knowledge: per-architecture cards, the owner's preferences and regrets.

Every value in a card carries its source (``owner``, ``run <id>``, ``agent`` or
``upstream``); drafting a run takes each value from the first source that covers it and
records where it came from.
"""
