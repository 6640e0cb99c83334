"""`kura serve`: a small server-rendered site over the same library functions the CLI uses.

Nothing here imports FastAPI at package import time; :func:`kura.web.app.create_app` does.
Pages read runs, samples and knowledge cards; the only thing a page writes is a rating and
notes (``kura run evaluate``), through a POST form with a CSRF token.
"""

from __future__ import annotations
