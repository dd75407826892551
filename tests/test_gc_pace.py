"""The collector's pace during a run: raised while it runs, restored after."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from ddplint import gc_pace
from ddplint.engine import lint_paths
from ddplint.engine import run as engine_run
from ddplint.rules import all_rules
from ddplint.settings import LintOptions, Settings


@pytest.fixture
def default_thresholds():
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*saved)


def test_paced_raises_the_young_threshold_and_restores_it(default_thresholds):
    with gc_pace.paced():
        assert gc.get_threshold() == (gc_pace.YOUNG_THRESHOLD, 10, 10)
    assert gc.get_threshold() == (700, 10, 10)


def test_paced_restores_the_thresholds_after_an_error(default_thresholds):
    with pytest.raises(KeyError), gc_pace.paced():
        raise KeyError("boom")
    assert gc.get_threshold() == (700, 10, 10)


def test_paced_never_collects_more_often_than_the_thresholds_in_force():
    saved = gc.get_threshold()
    gc.set_threshold(50_000, 10, 10)
    try:
        with gc_pace.paced():
            assert gc.get_threshold()[0] == 50_000
    finally:
        gc.set_threshold(*saved)


def test_a_run_lints_at_the_pace_and_leaves_it(tmp_path: Path, monkeypatch, default_thresholds):
    (tmp_path / "train.py").write_text("import torch.distributed as dist\ndist.barrier()\n")
    seen: list[tuple[int, int, int]] = []
    real = engine_run._lint_read

    def spy(*args, **kwargs):
        seen.append(gc.get_threshold())
        return real(*args, **kwargs)

    monkeypatch.setattr(engine_run, "_lint_read", spy)
    settings = Settings(project_root=tmp_path)
    options = LintOptions(selected=tuple(sorted(all_rules())), project_root=str(tmp_path))
    result = lint_paths([str(tmp_path)], settings, options, jobs=1, use_cache=False)
    assert seen == [(gc_pace.YOUNG_THRESHOLD, 10, 10)]
    assert result.stats.files == 1
    assert gc.get_threshold() == (700, 10, 10)
