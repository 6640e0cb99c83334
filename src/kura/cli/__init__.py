"""Kura's command-line interface: thin commands over the library."""
