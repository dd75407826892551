"""A finding built from ``ast`` (``CodeContext.ast_finding``) is suppressed by a
directive on any line of the smallest statement holding it, as a LibCST finding is;
of a compound statement, on its header only."""

from __future__ import annotations

import pytest

from ddplint.engine import lint_source
from ddplint.settings import LintOptions

OPTIONS = LintOptions(selected=("DDP404", "DDP303"), project_root=".")
LOADER = "from torch.utils.data import DataLoader\n\n\ndef build(ds):\n"


def codes(text: str) -> list[tuple[str, int]]:
    outcome = lint_source("m.py", text.encode(), OPTIONS)
    return [(f.rule, f.line) for f in outcome.findings]


CALL = ["    loader = DataLoader(", "        ds,", "        persistent_workers=True,", "    )"]


@pytest.mark.parametrize("line", range(len(CALL)))
def test_a_directive_on_the_statement_suppresses(line: int) -> None:
    call = [
        text + ("  # noqa: DDP404" if number == line else "") for number, text in enumerate(CALL)
    ]
    assert codes(LOADER + "\n".join(call) + "\n    return loader\n") == []


def test_a_directive_on_another_statement_does_not() -> None:
    text = (
        LOADER
        + "    size = 8  # noqa: DDP404\n"
        + "    loader = DataLoader(\n        ds,\n        persistent_workers=True,\n    )\n"
        + "    return loader, size\n"
    )
    assert codes(text) == [("DDP404", 8)]


def test_a_compound_statement_s_body_is_not_its_header() -> None:
    header = "import torch.distributed as dist\n\nif dist.is_available():  # noqa: DDP303\n"
    body = "    dist.init_process_group(\n        'nccl',\n        timeout=1800,\n    )\n"
    assert codes(header + body) == [("DDP303", 6)]
    in_header = "if dist.barrier(  # noqa: DDP303\n    timeout=5,\n):\n    pass\n"
    assert codes(header.split("if")[0] + in_header) == []
    assert codes(header.split("if")[0] + in_header.replace("  # noqa: DDP303", "")) == [
        ("DDP303", 4)
    ]
