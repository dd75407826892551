"""``ddplint server``: a language server (LSP over stdio) built on pygls.

One module per job: ``protocol`` (the LSP wiring), ``scheduling`` (debounced runs in a
worker thread, stale results dropped), ``documents`` (snapshots of the open documents
linted with their project), ``diagnostics`` (findings as LSP diagnostics),
``actions`` (fixes, "ignore for this line", "fix all", hover), ``positions``
(ddplint's 1-based code-point columns to LSP's 0-based UTF-16/UTF-32/UTF-8 units),
``memory`` (garbage collection while idle), ``framing`` (the client's stream read with
bounded memory).
pygls is the optional extra ``server``: nothing here is imported by ``ddplint check``.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import re
import shlex
import sys
from typing import BinaryIO, cast

#: What the ``server`` extra installs, when the installed metadata cannot say.
SERVER_PACKAGES = ("pygls>=2.0,<3", "lsprotocol>=2025.0.0")


def server_requirements() -> list[str]:
    """The ``server`` extra's requirements, as the installed ddplint declares them."""
    try:
        declared = importlib.metadata.requires("ddplint") or []
    except importlib.metadata.PackageNotFoundError:
        declared = []
    found = [
        requirement.split(";", 1)[0].strip()
        for requirement in declared
        if requirement.replace(" ", "").endswith(';extra=="server"')
    ]
    return found or list(SERVER_PACKAGES)


def install_hint() -> str:
    """How to install the ``server`` extra into the Python running ddplint, and with pipx."""
    python = shlex.quote(sys.executable)
    packages = " ".join(shlex.quote(r) for r in server_requirements())
    names = " ".join(re.split(r"[<>=!~ ]", r, maxsplit=1)[0] for r in server_requirements())
    return (
        f"ddplint: error: `ddplint server` needs pygls, which is not installed for {python}. "
        f"Install it into that environment with: {python} -m pip install {packages} "
        f"(the `server` extra); with pipx: pipx inject ddplint {names}"
    )


def serve() -> int:
    """Run the server on stdin/stdout until the client ends it; the exit code (1 for
    ``exit`` without ``shutdown``; 2, with how to install it, when pygls is missing).
    A lint still running then is not waited for: the process ends at once."""
    try:
        import pygls  # noqa: F401
    except ImportError:
        print(install_hint(), file=sys.stderr)
        return 2
    from ddplint.server.framing import BoundedInput
    from ddplint.server.protocol import build_server

    server = build_server()
    # pygls reads its input with ``readline()`` and ``read(n)`` only.
    server.start_io(cast(BinaryIO, BoundedInput(sys.stdin.buffer)))
    if server.scheduler.working:  # its thread would hold the interpreter's exit
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(ValueError, OSError):  # closed by pygls's ``exit``
                stream.flush()
        os._exit(server.exit_code)
    return server.exit_code
