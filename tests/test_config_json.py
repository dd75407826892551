"""JSON as configuration: DeepSpeed configs are read with positions (tab indentation
too), and every other JSON file is left alone (no load, no error, no size notice)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import check

from ddplint.config.accelerate import layout
from ddplint.config.deepspeed import deepspeed_configs
from ddplint.config.document import ConfigDocument
from ddplint.config.loader import load_documents
from ddplint.engine import lint_source
from ddplint.settings import LintOptions
from ddplint.source import SourceFile

JSON_RULES = ("DDP611", "DDP612", "DDP613", "DDP614")
MISMATCH = '{\n\t"train_batch_size": 10,\n\t"train_micro_batch_size_per_gpu": 4\n}\n'


def _lint(name: str, text: str, selected: tuple[str, ...] = JSON_RULES):
    options = LintOptions(selected=selected, project_root=".")
    return lint_source(name, text.encode(), options)


def _document(text: str, name: str = "ds.json") -> ConfigDocument:
    source = SourceFile.decode(name, text.encode())
    return ConfigDocument(load_documents(source.text, json=True)[0], 0, source)


def test_tab_indented_json_keeps_columns() -> None:
    outcome = _lint("ds_config.json", MISMATCH)
    assert [(f.rule, f.line, f.column) for f in outcome.findings] == [("DDP611", 2, 2)]


@pytest.mark.parametrize(
    "name, text",
    [
        ("package.json", '{"name": "x", "scripts": {"train": "deepspeed train.py"}}'),
        ("tsconfig.json", '{\n  // comments are not JSON\n  "compilerOptions": {}\n}'),
        ("data.json", '{"zero_optimization": [1, 2,]}'),  # a list: not a DeepSpeed section
        ("jsonc.json", '{\n  // JSON with comments\n  "zero_optimization": {"stage": 2}\n}'),
        ("lines.json", '{"train_batch_size": 3, "zero_optimization": {}}\n{"x": 1}\n'),
        ("utf16.json", "\ufeff{}"),
    ],
)
def test_other_json_is_left_alone(name: str, text: str) -> None:
    outcome = _lint(name, text)
    assert outcome.errors == [] and outcome.findings == []


def test_yaml_rules_never_read_json() -> None:
    loader = '{"num_workers": 0, "persistent_workers": true}'
    text = f'{{"trainer": {{"devices": 2}}, "model": {{"train_ds": {loader}}}}}'
    assert _lint("conf.json", text, ("DDP601",)).findings == []
    assert [f.rule for f in _lint("conf.yaml", text, ("DDP601",)).findings] == ["DDP601"]


def test_large_json_gets_no_notice(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.ddplint]\nmax-file-size = 100\n")
    (tmp_path / "big.json").write_text('{"rows": [' + ", ".join(["1"] * 200) + "]}")
    (tmp_path / "ds.json").write_text(MISMATCH)
    code, out, err = check("--select", "DDP611", str(tmp_path))
    assert code == 1 and "ds.json:2:2: DDP611" in out
    assert "big.json" not in out + err


def test_deepspeed_config_found_nested_and_at_the_root() -> None:
    nested = _document(
        '{"trainer": {"max_steps": 1}, "deepspeed": {"zero_optimization": {"stage": 2}}}'
    )
    assert [(c.path, c.zero_stage) for c in deepspeed_configs(nested)] == [(("deepspeed",), 2)]
    root = _document('{"train_batch_size": 8, "fp16": {"enabled": true}}')
    assert [(c.path, c.zero_stage) for c in deepspeed_configs(root)] == [((), 0)]
    trainer_args = _document('{"train_batch_size": 8, "gradient_accumulation_steps": 2}')
    assert list(deepspeed_configs(trainer_args)) == []


def test_accelerate_layout_reads_gpu_ids_forms() -> None:
    doc = _document('{"distributed_type": "MULTI_GPU", "num_processes": 4, "gpu_ids": "0, 1"}')
    found = layout(doc)
    assert (found.num_machines, found.gpu_ids, found.num_processes) == (1, ("0", "1"), 4)
    assert layout(_document('{"distributed_type": "FSDP", "gpu_ids": "all"}')).gpu_ids is None
