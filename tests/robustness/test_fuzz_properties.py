"""Property tests over generated and damaged inputs, all rules selected: the engine
returns findings and/or error entries, never an internal error; every finding lies
inside its file; every fix parses and removes its finding (``bench/fuzz_cases.py``).

CI size: a few seconds, derandomized. ``bench/fuzz.py`` runs the same checks on
thousands of cases.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.fuzz_cases import (
    all_rules_options,
    composed_modules,
    hypothesmith_modules,
    mutate,
    needle_comment,
    problems_with,
    seed_python_files,
    seed_yaml_files,
)
from ddplint.engine import lint_source

OPTIONS = all_rules_options()
QUICK = settings(
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)


def _lint_and_check(path: str, raw: bytes, seen: Counter[str], *, valid: bool = False) -> None:
    outcome = lint_source(path, raw, OPTIONS)
    assert problems_with(path, raw, outcome, OPTIONS, valid=valid) == []
    seen["cases"] += 1
    seen["parsed"] += outcome.parsed
    seen["with findings"] += bool(outcome.findings)
    seen["with fixes"] += any(f.fix for f in outcome.findings)
    seen["with errors"] += bool(outcome.errors)


@pytest.mark.slow
def test_composed_distributed_training_modules() -> None:
    seen: Counter[str] = Counter()

    @settings(QUICK, max_examples=60)
    @given(composed_modules())
    def check(raw: bytes) -> None:
        _lint_and_check("composed.py", raw, seen, valid=True)

    check()
    # Not vacuous: the rules really fired and offered fixes on generated code.
    assert seen["with findings"] >= 10, seen
    assert seen["with fixes"] >= 5, seen


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::SyntaxWarning")
def test_grammar_generated_modules() -> None:
    seen: Counter[str] = Counter()

    @settings(QUICK, max_examples=15)
    @given(hypothesmith_modules())
    def check(raw: bytes) -> None:
        _lint_and_check("generated.py", raw, seen, valid=True)

    check()
    # The needle comment lets every rule run: the files were parsed, not pre-filtered.
    assert seen["parsed"] >= seen["cases"] * 0.8, seen


SEEDS = seed_python_files()


def test_damaged_real_python_files() -> None:
    seen: Counter[str] = Counter()
    header = (needle_comment("code") + "\n").encode()

    @settings(QUICK, max_examples=60)
    @given(st.sampled_from(SEEDS), st.randoms(use_true_random=False))
    def check(seed: Path, rng: random.Random) -> None:
        _lint_and_check("damaged.py", header + mutate(seed.read_bytes(), rng), seen)

    check()
    assert seen["parsed"] > 0 and seen["with errors"] > 0, seen


YAML_SEEDS = seed_yaml_files()


@pytest.mark.skipif(not YAML_SEEDS, reason="no YAML configs to mutate")
def test_damaged_yaml_configs() -> None:
    seen: Counter[str] = Counter()
    header = (needle_comment("config") + "\n").encode()

    @settings(QUICK, max_examples=40)
    @given(st.sampled_from(YAML_SEEDS), st.randoms(use_true_random=False))
    def check(seed: Path, rng: random.Random) -> None:
        _lint_and_check("damaged.yaml", header + mutate(seed.read_bytes(), rng), seen)

    check()
    assert seen["cases"] == 40, seen
