"""The one path heuristic left (``code_facts.is_test_file``), both ways: a test module is
no evidence of how training runs, so the rules that read the path stay silent there and
report the same code anywhere else (a name that merely contains "test" is no test)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ddplint.code_facts import is_test_file
from ddplint.engine import lint_source
from ddplint.settings import LintOptions

ROOT = Path(__file__).resolve().parent.parent
TEST_PATHS = ("tests/x.py", "pkg/test/x.py", "pkg/test_x.py", "pkg/x_test.py", "conftest.py")
OTHER_PATHS = ("pkg/latest_x.py", "contest.py", "attest_x.py", "pkg/testing/x.py", "x_tests.py")

#: A DDP501 hazard that a test harness makes harmless: the fallback init of a test
#: module, where the conftest picked the device first.
FALLBACK_INIT = b"""\
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def setup(model):
    if not dist.is_initialized():
        dist.init_process_group("nccl")
    return DistributedDataParallel(model)
"""


def _source(code: str, fixture: str) -> bytes:
    return (ROOT / "fixtures" / "rules" / code / fixture).read_bytes()


CASES = {
    "DDP405": _source("DDP405", "bad_round_robin_files.py"),
    "DDP102": _source("DDP102", "bad_step_reads.py"),
    "DDP103": _source("DDP103", "bad_empty_cache.py"),
    "DDP104": _source("DDP104", "bad_rank_zero_sync.py"),
    "DDP240": _source("DDP240", "bad_detr_criterion.py"),
    "DDP501": FALLBACK_INIT,
}


def _findings(code: str, path: str) -> int:
    options = LintOptions(selected=(code,), project_root=str(ROOT))
    return len(lint_source(path, CASES[code], options).findings)


@pytest.mark.parametrize("path", TEST_PATHS)
def test_test_paths(path: str) -> None:
    assert is_test_file(path)


@pytest.mark.parametrize("path", OTHER_PATHS)
def test_paths_that_only_say_test(path: str) -> None:
    assert not is_test_file(path)


@pytest.mark.parametrize("code", sorted(CASES))
def test_rules_reading_the_path_both_ways(code: str) -> None:
    assert all(_findings(code, path) > 0 for path in OTHER_PATHS)
    assert all(_findings(code, path) == 0 for path in TEST_PATHS)
