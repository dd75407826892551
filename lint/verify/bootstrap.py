"""The script torchrun starts in every rank: ``python bootstrap.py ENTRY [ARGS...]``.

It loads the rank-side modules of this folder under a private package name, so the
user's process never sees a top-level ``lint`` package (the user may have their own)
and this folder never shadows the user's modules on ``sys.path``.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys

PRIVATE_PACKAGE = "_ddplint_verify"


def load_private_package() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.path and os.path.abspath(sys.path[0] or os.curdir) == here:
        del sys.path[0]
    spec = importlib.util.spec_from_file_location(
        PRIVATE_PACKAGE, os.path.join(here, "__init__.py"), submodule_search_locations=[here]
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load the ddplint verifier from {here}")
    package = importlib.util.module_from_spec(spec)
    sys.modules[PRIVATE_PACKAGE] = package
    spec.loader.exec_module(package)


if __name__ == "__main__":
    load_private_package()
    importlib.import_module(f"{PRIVATE_PACKAGE}.rank_runtime").main(sys.argv[1:])
