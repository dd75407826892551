#!/usr/bin/env bash
# Set up .venv (CPU torch first, then ddplint with its dev and verify extras) and run
# the whole test suite. Used by the README and by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null
# torch before anything that depends on it, or pip may pull a multi-GB CUDA build.
.venv/bin/python -m pip install -q --disable-pip-version-check torch==2.13.0
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[dev,verify]' lightning==2.6.6
exec .venv/bin/python -m pytest "$@"
