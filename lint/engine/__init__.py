"""Run the selected rules over files: pre-filter, one parse per file, suppressions,
content-hash cache and a process pool. The engine owns files and processes; rules only
return findings.

One job per module, each importing only the ones above it in this list:
``selection`` (which rules a file gets, from the catalogue), ``suppressions``,
``triage`` (what needs no parse), ``per_file`` (lint one file), ``pool`` (worker
processes), ``run_setup`` (what shapes a run), ``project_model`` (the project's facts
for a run), ``run`` (the top level). What a run produced is plain data in
``ddplint.results``, below the engine, for the report formats.
"""

from ddplint.engine.per_file import lint_source
from ddplint.engine.pool import POOL_THRESHOLD, default_jobs, run_jobs
from ddplint.engine.run import lint_buffers, lint_paths, lint_targets
from ddplint.engine.run_setup import ProjectMemo, cache_directory, open_cache
from ddplint.engine.triage import prefilter
from ddplint.results import SKIPPED, FileOutcome, RunResult, RunStats

__all__ = [
    "POOL_THRESHOLD",
    "SKIPPED",
    "FileOutcome",
    "ProjectMemo",
    "RunResult",
    "RunStats",
    "cache_directory",
    "default_jobs",
    "lint_buffers",
    "lint_paths",
    "lint_source",
    "lint_targets",
    "open_cache",
    "prefilter",
    "run_jobs",
]
