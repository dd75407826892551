#!/usr/bin/env bash
# Set up .venv (CPU torch first, then ddplint with its dev and verify extras) and run
# pytest with the arguments given: alone, what to run before a commit (pyproject leaves
# the slow tests out); with -m "slow or not slow", the whole suite, as .ci/run does.
# Used by the README and by .ci/run.
#
# torch comes from pip's configured index (`pip install torch==2.13.0`). On an ordinary
# Linux machine that is PyPI's CUDA build, several GB; for the CPU build set
#   TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu bash scripts/test.sh
# (PIP_INDEX_URL / PIP_EXTRA_INDEX_URL are honoured by every pip call, as usual).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
PIP=(.venv/bin/python -m pip install -q --disable-pip-version-check)
[ -x .venv/bin/python ] || "$PY" -m venv .venv
"${PIP[@]}" --upgrade pip >/dev/null
# torch before anything that depends on it, or pip may pull a multi-GB CUDA build.
TORCH_INDEX=()
if [ -n "${TORCH_INDEX_URL:-}" ]; then TORCH_INDEX=(--index-url "$TORCH_INDEX_URL"); fi
"${PIP[@]}" ${TORCH_INDEX[@]+"${TORCH_INDEX[@]}"} torch==2.13.0
# PYTHONWARNINGS: setuptools' editable-install banner (a UserWarning) stays quiet.
PYTHONWARNINGS=ignore::UserWarning "${PIP[@]}" -e '.[dev,verify]' lightning==2.6.6
exec .venv/bin/python -m pytest "$@"
