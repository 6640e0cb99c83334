"""`python -m kura` runs the command-line interface."""

from kura.cli.main import main

raise SystemExit(main())
