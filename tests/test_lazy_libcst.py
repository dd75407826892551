"""The LibCST module is parsed only when a rule asks for it: a file on which every rule
that runs answers on ``ast`` (the analysis core) or is screened out by its forms
(``CodeRule.may_report``) costs no LibCST parse, and the findings are the same."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
from fixture_harness import ROOT, fixture_files
from synthetic_rules import use_synthetic_rules

import ddplint.code.context as context_module
from ddplint.code.context import CodeContext
from ddplint.engine import lint_source
from ddplint.rule import CodeRule
from ddplint.rules import all_rules
from ddplint.settings import LintOptions
from ddplint.source import SourceFile

#: The test rule TST008 reads LibCST: a host list uploaded to the device (line 8).
HOST_UPLOAD = b"""import torch
from torch import nn


class Criterion(nn.Module):
    def forward(self, outputs, targets):
        count = sum(len(t) for t in targets)
        count = torch.as_tensor([count], dtype=torch.float, device=outputs.device)
        return outputs.sum() / count
"""

#: The same module without a device: TST008's needle is not there.
NO_DEVICE = HOST_UPLOAD.replace(b", device=outputs.device", b"")

#: DDP502 answers on the core: a forward that skips a submodule on one branch, wrapped
#: in DDP without ``find_unused_parameters`` (line 12: the branch's test), with a fix.
BRANCH_SKIPS = b"""from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 4)
        self.aux = nn.Linear(4, 4)

    def forward(self, x):
        if x.sum() > 0:
            return self.aux(self.body(x))
        return self.body(x)


def wrap(rank):
    return DDP(Net().cuda(), device_ids=[rank])
"""

RANKS_PART = b"""import torch.distributed as dist

def train(loader, model):
    for batch in loader:
        if dist.get_rank() == 0:
            break
        dist.all_reduce(model(batch))
"""


@pytest.fixture(autouse=True)
def libcst_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine sees the test rules, TST008 (on LibCST) among them."""
    use_synthetic_rules(monkeypatch)


@pytest.fixture
def libcst_parses(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The texts parsed with LibCST while the test runs."""
    parsed: list[str] = []
    parse = context_module.parse_module

    def counting(text: str):  # type: ignore[no-untyped-def]
        parsed.append(text)
        return parse(text)

    monkeypatch.setattr(context_module, "parse_module", counting)
    yield parsed


def _lint(raw: bytes, *codes: str):  # type: ignore[no-untyped-def]
    return lint_source("m.py", raw, LintOptions(selected=codes, project_root="."))


def test_a_rule_left_out_by_its_forms_costs_no_libcst_parse(libcst_parses: list[str]) -> None:
    outcome = _lint(NO_DEVICE, "TST008", "DDP217")
    assert outcome.errors == [] and outcome.findings == []
    assert libcst_parses == []


def test_a_rule_whose_forms_are_there_parses_once(libcst_parses: list[str]) -> None:
    outcome = _lint(HOST_UPLOAD, "TST008", "DDP217")
    assert [(f.rule, f.line) for f in outcome.findings] == [("TST008", 8)]
    assert len(libcst_parses) == 1


def test_a_core_rule_offers_its_fix_without_libcst(libcst_parses: list[str]) -> None:
    outcome = _lint(BRANCH_SKIPS, "DDP502", "DDP217")
    assert [(f.rule, f.line) for f in outcome.findings] == [("DDP502", 12)]
    assert outcome.findings[0].fix is not None
    assert libcst_parses == []


def test_a_core_rule_reads_no_libcst(libcst_parses: list[str]) -> None:
    outcome = _lint(RANKS_PART, "DDP201")
    assert [f.rule for f in outcome.findings] == ["DDP201"]
    assert libcst_parses == []


def test_a_libcst_rule_beside_a_core_rule_parses(libcst_parses: list[str]) -> None:
    outcome = _lint(RANKS_PART + b"\n\n" + HOST_UPLOAD, "DDP201", "TST008")
    assert {"DDP201", "TST008"} <= {f.rule for f in outcome.findings}
    assert len(libcst_parses) == 1


def test_a_rule_screened_out_beside_a_core_rule_parses_nothing(
    libcst_parses: list[str],
) -> None:
    """TST008 reads LibCST, but a module that names no device holds none of its
    hazards: only the core's rule runs."""
    outcome = _lint(RANKS_PART, "DDP201", "TST008")
    assert [f.rule for f in outcome.findings] == ["DDP201"]
    assert libcst_parses == []


def test_code_python_refuses_is_still_reported(libcst_parses: list[str]) -> None:
    """The screens say yes where CPython refuses the file: LibCST parses it and the
    error is reported, as when every file was parsed."""
    outcome = _lint(b"x = torch.tensor(1, device=d)\ndef f(:\n", "TST008")
    assert [e.message.startswith("cannot parse") for e in outcome.errors] == [True]
    assert len(libcst_parses) == 1


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="this Python's ast reads 3.12 syntax")
def test_syntax_newer_than_this_python_leaves_core_rules_out_with_one_notice(
    libcst_parses: list[str],
) -> None:
    """LibCST reads a 3.12 ``type`` statement that CPython 3.11 refuses: the rules over
    LibCST run, the core's rules are left out with one notice, and nothing is an error."""
    outcome = _lint(b"type Batch = list[int]\n" + HOST_UPLOAD + RANKS_PART, "TST008", "DDP219")
    assert outcome.errors == [] and not outcome.internal_error
    assert [f.rule for f in outcome.findings] == ["TST008"]
    assert len(outcome.notices) == 1 and outcome.notices[0].startswith("DDP219 not run")


def test_indentation_only_cpython_reads_keeps_the_core_rules_with_one_notice(
    libcst_parses: list[str],
) -> None:
    """A block indented with a tab then spaces under a block indented with spaces:
    CPython reads it (a tab is 8 columns), LibCST's tokenizer refuses it. The core's
    rules run, the LibCST rules are left out with one notice, nothing is an error."""
    code = (
        b"import torch.distributed as dist\n\ndef g(t):\n    if dist.get_rank() == 0:\n"
        b"\t    dist.new_group([0])\n\t    dist.all_reduce(t)\n"
        b"x = torch.tensor(1, device=d)\n"
    )
    outcome = _lint(code, "DDP207", "TST008", "DDP219")
    assert outcome.errors == [] and not outcome.internal_error
    # The parting at the rank test skips the group DDP207 reports: one finding per root cause.
    assert sorted(f.rule for f in outcome.findings) == ["DDP207"]
    assert len(outcome.notices) == 1 and outcome.notices[0].startswith("TST008 not run")
    assert "Python's own parser reads it" in outcome.notices[0]
    assert len(libcst_parses) == 1


def test_indentation_libcst_refuses_with_only_libcst_rules_is_a_notice() -> None:
    code = b"x = torch.tensor(1, device=d)\n\ndef g(t):\n    if t:\n\t    t.sum()\n"
    outcome = _lint(code, "TST008")
    assert outcome.errors == [] and outcome.findings == []
    assert [n.split(" not run")[0] for n in outcome.notices] == ["TST008"]


SCREENED = [
    r for r in all_rules().values() if issubclass(r, CodeRule) and r.screened_by is not None
]


def test_some_rules_are_screened() -> None:
    assert {r.code for r in SCREENED} >= {"DDP202", "DDP205", "DDP207", "DDP209", "DDP212"}


@pytest.mark.parametrize("rule", SCREENED, ids=lambda r: r.code)
def test_a_screen_never_hides_a_finding(rule: type[CodeRule]) -> None:
    """On every Python fixture of every rule: where ``check`` reports, ``may_report``
    said yes."""
    checked = reported = 0
    for path in fixture_files():
        if path.suffix != ".py":
            continue
        source = SourceFile.decode(path.name, path.read_bytes())
        ctx = CodeContext(source, LintOptions(selected=(rule.code,), project_root=str(ROOT)))
        found = list(rule().check(ctx))
        checked += 1
        reported += bool(found)
        assert not found or rule().may_report(ctx), f"{path}: {rule.code} screened out"
    assert checked and reported  # the rule's own bad fixtures report
