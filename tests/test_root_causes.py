"""One finding per root cause: where a specific question reports a decision, the
general parting (DDP219) or the skip on this rank's data (DDP204) defers to it, and
each still reports where it alone applies."""

from __future__ import annotations

from ddplint.engine import lint_source
from ddplint.settings import LintOptions

RANK_CODES = ("DDP201", "DDP204", "DDP207", "DDP211", "DDP213", "DDP219")

#: A ``continue`` on rank 0's loss (line 10): a parting and a skip on this rank's data.
LOSS_SKIP = b"""import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def train(model, loader, rank):
    model = DistributedDataParallel(model, device_ids=[rank])
    for batch in loader:
        loss = model(batch).mean()
        if dist.get_rank() == 0 and loss.item() > 10.0:
            continue
        loss.backward()
"""

#: A DDP forward on rank 0 only (the test on line 7, the forward on line 9).
FORWARD_ON_RANK_ZERO = b"""import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def evaluate(model, batch, rank):
    wrapped = DistributedDataParallel(model, device_ids=[rank])
    if dist.get_rank() != 0:
        return None
    return wrapped(batch)
"""

#: A group made on some ranks (line 7), under a rank test (line 6).
GROUP_ON_SOME_RANKS = b"""import torch.distributed as dist


def members_make_the_group(layouts):
    for ranks in layouts:
        if dist.get_rank() in ranks:
            return dist.new_group(ranks)
    return None
"""

#: A flag set on this rank's NaN loss (line 10) decides a gather every rank must make
#: (line 13): only the skip on this rank's data sees it.
FLAG_FROM_LOSS = b"""import torch
import torch.distributed as dist


def train(model, loader, optimizer, out, t):
    stop = False
    for batch in loader:
        loss = model(batch).mean()
        loss.backward()
        if torch.isnan(loss):
            stop = True
            break
    if not stop:
        dist.all_gather(out, t)
"""

#: The same flag set on rank 0 only: the decided parting names it (and where it is
#: set); the skip defers.
FLAG_ON_RANK_ZERO = FLAG_FROM_LOSS.replace(
    b"if torch.isnan(loss):", b"if dist.get_rank() == 0 and torch.isnan(loss):"
)

#: A loop left on a clock reading (line 8): only the general parting sees it.
CLOCK_EXIT = b"""import time

import torch.distributed as dist


def sync_until(deadline, t):
    while True:
        if time.time() > deadline:
            break
        dist.all_reduce(t)
"""


def _found(code: bytes, *codes: str) -> list[tuple[str, int]]:
    outcome = lint_source("m.py", code, LintOptions(selected=codes, project_root="."))
    assert outcome.errors == []
    return sorted((f.rule, f.line) for f in outcome.findings)


def test_a_skip_on_this_ranks_loss_is_one_finding() -> None:
    assert _found(LOSS_SKIP, *RANK_CODES) == [("DDP204", 10)]


def test_a_forward_on_rank_zero_is_one_finding() -> None:
    assert _found(FORWARD_ON_RANK_ZERO, *RANK_CODES) == [("DDP213", 9)]


def test_a_group_on_some_ranks_is_one_finding() -> None:
    assert [rule for rule, _ in _found(GROUP_ON_SOME_RANKS, *RANK_CODES)] == ["DDP207"]


def test_a_flag_set_on_some_ranks_is_the_decided_partings_finding() -> None:
    assert _found(FLAG_ON_RANK_ZERO, *RANK_CODES) == [("DDP211", 13)]


def test_the_skip_still_reports_a_flag_only_its_data_decides() -> None:
    assert _found(FLAG_FROM_LOSS, *RANK_CODES) == [("DDP204", 14)]


def test_the_general_parting_still_reports_where_it_alone_applies() -> None:
    assert [rule for rule, _ in _found(CLOCK_EXIT, *RANK_CODES)] == ["DDP219"]


def test_each_owner_alone_still_reports() -> None:
    """Deferring depends on the decision, not on which rules are selected."""
    assert _found(LOSS_SKIP, "DDP204") == [("DDP204", 10)]
    assert _found(FORWARD_ON_RANK_ZERO, "DDP213") == [("DDP213", 9)]
