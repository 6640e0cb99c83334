"""Run in SkyPilot's own environment (never imported by Kura or its tests): parse one
``sky jobs COMMAND ARGS…`` argv with SkyPilot's own click command (its parser only: no API
server, no cloud) and print the parameters it read as JSON, or ``{"error": …}``."""

from __future__ import annotations

import json
import sys

import click
from sky.client.cli.command import jobs


def main(argv: list[str]) -> None:
    name, *args = argv
    command = jobs.commands[name]
    try:
        context = command.make_context(name, list(args))
    except click.ClickException as exc:
        print(json.dumps({"error": exc.format_message()}))
        return
    print(json.dumps({"params": context.params}, default=str))


if __name__ == "__main__":
    main(sys.argv[1:])
