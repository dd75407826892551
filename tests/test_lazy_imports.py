"""A run that only reads the cache, or whose files the pre-filter drops, must not import
the analysis: no LibCST, ruamel, OmegaConf or rule module; a file that passes some
rules' pre-filters imports those rules' modules only. Checked by running ``ddplint
check`` in a subprocess and reading its ``sys.modules``, not by timing it."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

from ddplint.rule import CodeRule, ConfigRule
from ddplint.rules import all_rules, rule_class
from ddplint.rules.catalogue import CATALOGUE, RuleEntry
from ddplint.settings import LintOptions

HAZARD = (
    "import torch\nfrom torch import nn\nfrom torch.utils.data import DataLoader\n\n\n"
    "class Net(nn.Module):\n"
    "    def forward(self, x):\n        torch.cuda.synchronize()\n        return x\n\n\n"
    "def loader(data):\n    return DataLoader(data, persistent_workers=True)\n"
)
#: The preview rule each tree selects: HAZARD's safe fix (DDP404) makes a cold run parse.
SELECTED = "DDP404"
CONFIG = "trainer:\n  devices: 2\nmodel:\n  train_ds:\n    num_workers: 0\n"
#: Runs ``ddplint check`` and prints, after it, the heavy modules it imported.
PROBE = """
import json, sys
from ddplint.cli import cli
try:
    cli(["check", "--exit-zero", "-q", *sys.argv[1:]])
except SystemExit:
    pass
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("libcst", "ruamel", "omegaconf")
               or m.startswith(("ddplint.rules.code", "ddplint.rules.config")))
print(json.dumps(heavy))
"""


def _imported(tree: Path, tmp_path: Path, *paths: str) -> list[str]:
    """The heavy modules ``ddplint check PATHS`` (default ``.``) imported."""
    environment = {
        **os.environ,
        "DDPLINT_CACHE_DIR": str(tmp_path / "cache"),
        "DDPLINT_CACHE_KEY_FILE": str(tmp_path / "key"),
    }
    result = subprocess.run(
        [sys.executable, "-c", PROBE, *(paths or (".",))],
        cwd=tree,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return list(json.loads(result.stdout.strip().splitlines()[-1]))


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    tree = tmp_path / "repo"
    tree.mkdir()
    (tree / "pyproject.toml").write_text(f"[tool.ddplint]\nextend-select = [{SELECTED!r}]\n")
    for name, text in files.items():
        (tree / name).write_text(text)
    return tree


def test_a_warm_run_imports_no_analysis(tmp_path: Path) -> None:
    tree = _tree(tmp_path, {"net.py": HAZARD, "train.yaml": CONFIG, "util.py": "x = 1\n"})
    cold = _imported(tree, tmp_path)
    assert any(m.startswith("libcst") for m in cold)  # the cold run did parse
    assert _imported(tree, tmp_path) == []


def _hook(tree: Path, tmp_path: Path, name: str, *flags: str) -> list[str]:
    """The heavy modules a pre-commit run imports on ``name`` just edited (a comment
    appended: a text the cache has not seen)."""
    path = tree / name
    path.write_text(path.read_text() + "# edited\n")
    return _imported(tree, tmp_path, *flags, "--force-exclude", "--", name)


def test_an_edited_file_the_prefilter_drops_imports_no_analysis(tmp_path: Path) -> None:
    tree = _tree(tmp_path, {"net.py": HAZARD, "train.yaml": CONFIG, "util.py": "x = 1\n"})
    _imported(tree, tmp_path)  # the whole tree cached, as after a first run
    assert _hook(tree, tmp_path, "util.py") == []


#: What a hook run on a file has no use for: baselines, the blind-precision table,
#: ``--watch``, the report formats it does not print, a pool worker's ``ctypes``, a new
#: signing key's ``secrets``. (``difflib`` is left out: click imports it to parse a short
#: option such as ``-q``.)
NOT_FOR_A_HOOK = (
    "ddplint.baseline",
    "ddplint.blind_precision",
    "ddplint.watch",
    "ddplint.report.sarif",
    "ddplint.report.junit",
    "ddplint.report.gitlab",
    "ddplint.report.rdjson",
    "ddplint.report.json_format",
    "ctypes",
    "secrets",
)
#: Runs ``ddplint check`` and prints which of ``NOT_FOR_A_HOOK`` it imported.
UNUSED_PROBE = """
import json, sys
from ddplint.cli import cli
try:
    cli(["check", "--exit-zero", "-q", *sys.argv[2:]])
except SystemExit:
    pass
print(json.dumps([m for m in json.loads(sys.argv[1]) if m in sys.modules]))
"""


def test_a_hook_run_imports_nothing_it_does_not_use(tmp_path: Path) -> None:
    """A hook run on an edited file every pre-filter drops (the start-up is then most of
    the run): the engine and the cache are imported, nothing of ``NOT_FOR_A_HOOK``."""
    tree = _tree(tmp_path, {"net.py": HAZARD, "util.py": "x = 1\n"})
    _imported(tree, tmp_path)  # the cache made (its signing key too)
    (tree / "util.py").write_text("x = 2\n")
    environment = {
        **os.environ,
        "DDPLINT_CACHE_DIR": str(tmp_path / "cache"),
        "DDPLINT_CACHE_KEY_FILE": str(tmp_path / "key"),
    }
    wanted = json.dumps(["ddplint.engine.run", "ddplint.cache", *NOT_FOR_A_HOOK])
    probe = [sys.executable, "-c", UNUSED_PROBE, wanted, "--force-exclude", "--", "util.py"]
    result = subprocess.run(
        probe, cwd=tree, env=environment, capture_output=True, text=True, timeout=120, check=True
    )
    imported = json.loads(result.stdout.strip().splitlines()[-1])
    assert imported == ["ddplint.engine.run", "ddplint.cache"]


def _passes_screen(entry: RuleEntry, raw: bytes) -> bool:
    """The entry's screen on ``raw``'s ``ast``, with no project facts (the files here
    call no project function that creates a group)."""
    return entry.may_report(ast.parse(raw), LintOptions(selected=(), project_root="."))


def test_an_edited_file_imports_only_the_rules_its_prefilters_pass(tmp_path: Path) -> None:
    tree = _tree(tmp_path, {"net.py": HAZARD, "util.py": "x = 1\n"})
    _imported(tree, tmp_path)
    raw = (tree / "net.py").read_bytes()
    passing = {
        rule_class(code).__module__
        for code, entry in CATALOGUE.items()
        if entry.kind == "code"
        and (entry.default_enabled or code == SELECTED)
        and entry.prefilter(raw)
        and _passes_screen(entry, raw)
    }
    imported = _hook(tree, tmp_path, "net.py")
    assert "ddplint.rules.code.ddp404_persistent_workers_without_workers" in passing
    assert {m for m in imported if m.startswith("ddplint.rules.code.ddp")} == passing
    assert any(m.startswith("libcst") for m in imported)  # the file was parsed
    assert not any(m.startswith(("ruamel", "omegaconf")) for m in imported)


#: A module whose functions test the rank and reach a collective under other names.
HELPERS = (
    "import torch.distributed as dist\n\n\n"
    "def is_leader():\n    return dist.get_rank() == 0\n\n\n"
    "def agree(t):\n    dist.all_reduce(t)\n"
)
#: A training file that uses them: no rank or collective word of its own.
INFORMED = (
    "from helpers import agree, is_leader\n\n\n"
    "def train(model, batch):\n    loss = model(batch)\n"
    "    if is_leader():\n        agree(loss)\n    return loss\n"
)


def test_project_facts_stand_in_only_for_the_words_they_can(tmp_path: Path) -> None:
    """A file the project informs (its names test the rank and reach collectives) passes
    the groups of rank and collective words without holding them, and no more: a rule
    whose own words (``sync_dist``, a spelled ``timeout``) it lacks is not imported, nor
    one whose screen says no on the file's ``ast``."""
    tree = _tree(tmp_path, {"helpers.py": HELPERS, "train.py": INFORMED})
    _imported(tree, tmp_path)
    raw = (tree / "train.py").read_bytes()
    informed = {
        code
        for code, entry in CATALOGUE.items()
        if entry.kind == "code" and entry.default_enabled and entry.prefilter(raw, True)
    }
    screened = {code for code in informed if _passes_screen(CATALOGUE[code], raw)}
    imported = _hook(tree, tmp_path, "train.py")
    modules = {m for m in imported if m.startswith("ddplint.rules.code.ddp")}
    assert modules == {rule_class(code).__module__ for code in screened}
    assert "DDP207" in informed  # every word of it a rank test or a collective
    assert "DDP207" not in screened  # no group is created: its module is not imported
    assert not informed & {"DDP202", "DDP205", "DDP301", "DDP303"}
    assert not any(CATALOGUE[code].prefilter(raw) for code in informed)  # words absent


def test_the_catalogue_says_what_the_rule_classes_say() -> None:
    for code, rule in all_rules().items():
        entry = CATALOGUE[code]
        assert (entry.name, entry.kind, entry.default_enabled) == (
            rule.name,
            rule.kind,
            rule.default_enabled,
        ), code
        facts = rule.code_facts if issubclass(rule, ConfigRule) else ()
        assert entry.code_facts == facts, code
        words = (rule.needles, rule.also_needles, rule.more_needles, rule.required)
        assert (entry.needles, entry.also_needles, entry.more_needles, entry.required) == words
        assert entry.narrowed_by is rule.narrowed_by, code
        screen = rule.screened_by if issubclass(rule, CodeRule) else None
        assert entry.screened_by is screen, code
        reads_json = rule.reads_json if issubclass(rule, ConfigRule) else False
        assert entry.reads_json == reads_json, code
        assert rule_class(code) is rule, code
    assert list(CATALOGUE) == list(all_rules())


def _sample_texts() -> list[tuple[str, bytes]]:
    """Every fixture file, and the five narrowed rules' words with and without what
    narrows them."""
    root = Path(__file__).resolve().parent.parent / "fixtures"
    found = [(str(p), p.read_bytes()) for p in sorted(root.rglob("*")) if p.is_file()]
    narrowed = [
        b"dist.barrier(group, 1, 2, 3)",
        b"dist.barrier(timeout=t)",
        b"dist.new_group(ranks, 1800)",
        b"for i, b in enumerate(loader):\n    if i == len(loader) - 1: pass",
        b"for i, b in enumerate(loader):\n    if i % 4: opt.step(); loss.backward()",
        b"class D(IterableDataset): pass\nDataLoader(D())",
        b"DataLoader(x, persistent_workers=True)",
        b"DataLoader(x, persistent_workers=KEEP)",
        b"DataLoader(x, persistent_workers=False)",
    ]
    return found + [(f"sample{n}.py", text) for n, text in enumerate(narrowed)]


def test_the_catalogue_prefilters_as_the_rules_do() -> None:
    """On every fixture (and texts made to pass and fail the narrowing tests), each
    catalogue entry passes and reads exactly what its rule class does."""
    samples = _sample_texts()
    for code, rule in all_rules().items():
        entry = CATALOGUE[code]
        for path, raw in samples:
            assert entry.prefilter(raw) == rule.prefilter(raw), (code, path)
            assert entry.reads(path) == rule.reads(path), (code, path)


#: Words of every rank and collective pre-filter (DDP207's included), and none of the
#: forms the screened rules look for: no group is created, no loop over a set or over
#: selected values, no shard by rank.
SCREENED_OUT = (
    "import torch.distributed as dist\n\n\n"
    "def report(rank, t):\n    dist.barrier()\n    return rank\n"
)


def test_a_file_every_screen_drops_imports_no_analysis(tmp_path: Path) -> None:
    """The pre-filters of DDP207, DDP209 and DDP217 pass the file; their screens,
    asked from the catalogue on its ``ast``, drop it before any rule module or LibCST
    is imported."""
    tree = _tree(tmp_path, {"comm.py": SCREENED_OUT})
    raw = SCREENED_OUT.encode()
    screened = {
        code
        for code, entry in CATALOGUE.items()
        if entry.kind == "code" and entry.screened_by is not None and entry.prefilter(raw)
    }
    assert {"DDP207", "DDP209", "DDP217"} <= screened
    flags = ("--select", ",".join(sorted(screened)), "--preview")
    _imported(tree, tmp_path, *flags, ".")
    assert _hook(tree, tmp_path, "comm.py", *flags) == []
