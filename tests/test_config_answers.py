"""Findings that rest on the configs a project ships (the precision: a DeepSpeed engine
or an accelerate optimizer under fp16 waits for the device in every step) follow those
configs: a cached outcome is used again only while the configs answer as they did, and a
long-lived process (the language server) reads the configs afresh in every run."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from test_project_model import DEFAULT_RULES, FIXTURES

from ddplint.code.values.shipped_precision import ShippedPrecision, answers_hold
from ddplint.engine import RunResult, lint_buffers, lint_paths
from ddplint.settings import LintOptions, Settings

#: ``(config file, the fp16 spelling, the bf16 spelling)`` of each fixture project.
PROJECTS = {
    "deepspeed_fp16": (
        "configs/zero2.json",
        '"fp16": {"enabled": true',
        '"bf16": {"enabled": true',
    ),
    "accelerate_fp16": ("accelerate_config.yaml", "mixed_precision: fp16", "mixed_precision: bf16"),
}
#: What else each project holds that would answer fp16 whatever that config says.
OTHER_ANSWERS = {
    "deepspeed_fp16": ("configs/train.yaml",),
    "accelerate_fp16": ("configs/train.yaml", "train_options.py"),
}


def _project(tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fixture project less ``OTHER_ANSWERS``, the cache under ``tmp_path``."""
    root = tmp_path / name
    shutil.copytree(FIXTURES / name, root)
    for relative in OTHER_ANSWERS[name]:
        (root / relative).unlink()
    monkeypatch.chdir(root)
    monkeypatch.setenv("DDPLINT_CACHE_KEY_FILE", str(tmp_path / "key"))
    monkeypatch.setenv("DDPLINT_CACHE_DIR", str(tmp_path / "cache"))
    return root


def _switch(root: Path, name: str, to_bf16: bool) -> None:
    config, fp16, bf16 = PROJECTS[name]
    path = root / config
    old, new = (fp16, bf16) if to_bf16 else (bf16, fp16)
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def _stalls(result: RunResult) -> list[tuple[str, int]]:
    return sorted((Path(f.path).name, f.line) for f in result.findings if f.rule == "DDP102")


def _lint(root: Path, use_cache: bool = True) -> RunResult:
    options = LintOptions(selected=DEFAULT_RULES, project_root=str(root))
    return lint_paths(
        [str(root)], Settings(project_root=root), options, jobs=1, use_cache=use_cache
    )


@pytest.mark.parametrize("name", sorted(PROJECTS))
def test_a_cached_outcome_follows_an_edit_of_the_precision_config(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(tmp_path, name, monkeypatch)
    assert _stalls(_lint(root)) == []  # fp16: the step waits, the read after it is free
    _switch(root, name, to_bf16=True)
    edited = _lint(root)
    assert _stalls(edited) != []
    assert _stalls(edited) == _stalls(_lint(root, use_cache=False))
    _switch(root, name, to_bf16=False)
    reverted = _lint(root)
    assert _stalls(reverted) == []
    assert reverted.stats.cached > 0  # the outcomes the answers still hold for are reused


def test_one_process_reads_the_configs_again_in_its_next_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the language server does: runs in this process, no result cache."""
    root = _project(tmp_path, "deepspeed_fp16", monkeypatch)
    train = root / "train.py"
    options = LintOptions(selected=DEFAULT_RULES, project_root=str(root))
    settings = Settings(project_root=root)
    buffers = {train: train.read_bytes()}
    assert _stalls(lint_buffers(buffers, settings, options)) == []
    _switch(root, "deepspeed_fp16", to_bf16=True)
    assert _stalls(lint_buffers(buffers, settings, options)) == [("train.py", 12)]


def test_answers_name_each_question_and_hold_only_while_the_configs_agree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(tmp_path, "deepspeed_fp16", monkeypatch)
    shipped = ShippedPrecision(str(root), str(root / "train.py"))
    assert shipped.deepspeed_fp16() is True
    assert shipped.config_fp16("configs/zero2.json") is True
    assert shipped.config_fp16("configs/absent.json") is False
    assert shipped.mixed_fp16(option_given=True) is False
    answers = dict(shipped.answers)
    assert len(answers) == 4
    assert answers_hold(str(root), str(root / "train.py"), answers)
    assert not answers_hold(str(root), str(root / "train.py"), {**answers, "deepspeed": False})
    assert not answers_hold(str(root), str(root / "train.py"), {"a later question": True})
