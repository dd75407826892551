"""The YAML layer under the config rules: loading, positions, resolution, world size,
training-config detection, shard counting, checkpoint names and text edits."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixture_harness import fixed_path, fixture_files, lint_fixture
from omegaconf import OmegaConf

from ddplint.config.braces import count_expansions
from ddplint.config.checkpoint_names import metrics, without_group
from ddplint.config.context import ConfigContext
from ddplint.config.edits import add_key, set_or_add
from ddplint.config.loader import load_documents
from ddplint.config.nemo import shard_counts
from ddplint.config.training import is_training_config, lightning_trainer
from ddplint.config.values import ABSENT, UNKNOWN, expanded_size
from ddplint.engine import lint_source
from ddplint.finding import Applicability
from ddplint.rules import all_rules
from ddplint.settings import LintOptions
from ddplint.source import SourceError, SourceFile

CONFIG_RULES = tuple(code for code, rule in all_rules().items() if rule.kind == "config")


def context(text: str, name: str = "conf.yaml") -> ConfigContext:
    source = SourceFile.decode(name, text.encode())
    return ConfigContext.load(source, LintOptions(selected=CONFIG_RULES, project_root="."))


def lint_text(text: str, name: str = "conf.yaml"):
    return lint_source(name, text.encode(), LintOptions(selected=CONFIG_RULES, project_root="."))


# -- loading -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "line", "column", "words"),
    [
        ("trainer:\n  devices: [1, 2\n  num_nodes: 1\n", 2, 12, "a `[` list not closed"),
        ("trainer:\n  devices: 2\n  devices: 4\n", 3, 3, "duplicate key"),
        ("model:\n  a: 1\n b: 2\n", 3, 2, ""),
        ("trainer:\n  x: *nowhere\n", 2, 6, "`*nowhere` names no anchor `&nowhere`"),
        ("trainer:\n  name: 'open\n  devices: 2\n", 2, 9, "a quoted string that is never closed"),
        ("trainer:\n\tdevices: 2\n", 2, 1, "a tab: YAML indents with spaces only"),
        ("trainer:\n  devices: 2\n - 1\n", 3, 2, ""),
        ("run: a: b\n", 1, 7, "a `: ` inside a plain value: quote the value"),
        ("run: @x\n", 1, 6, "a plain value cannot start with `@`: quote it"),
    ],
)
def test_bad_yaml_is_one_source_error_with_position(
    text: str, line: int, column: int, words: str
) -> None:
    with pytest.raises(SourceError) as caught:
        load_documents(text)
    assert (caught.value.line, caught.value.column) == (line, column)
    assert caught.value.message.startswith("cannot load YAML: ") and words in caught.value.message


def test_bad_yaml_through_the_engine_is_one_error() -> None:
    outcome = lint_text("trainer:\n  devices: 2\n  devices: 4\n  sync_batchnorm: true\n")
    assert outcome.findings == []
    (error,) = outcome.errors
    assert (error.line, error.column) == (3, 3) and "duplicate key" in error.message
    assert not outcome.internal_error


def test_python_tags_are_never_constructed(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    text = (
        f"model:\n  train_ds: !!python/object/apply:os.system ['touch {marker}']\n"
        "  x: !!python/object:collections.OrderedDict {}\n  y: !Custom {a: 1}\n"
        "trainer:\n  devices: 2\n  sync_batchnorm: true\n"
    )
    (root,) = load_documents(text)
    assert not marker.exists()
    assert list(root["model"]["train_ds"]) == [f"touch {marker}"]  # plain data, tag kept
    assert lint_text(text).errors == []


def _laughs(levels: int) -> str:
    lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, levels)]
    top = f"l{levels - 1}"
    lines += [
        "model:",
        f"  train_ds: {{num_workers: 0, persistent_workers: true, bomb: *{top}}}",
        f"  name: ${{{top}}}",
        "trainer: {devices: 2}",
    ]
    return "\n".join(lines) + "\n"


def test_alias_bomb_stays_bounded() -> None:
    text = _laughs(20)  # 9**20 leaves if expanded
    outcome = lint_text(text)
    assert [f.rule for f in outcome.findings] == ["DDP601"]
    # the fix check would compare expanded trees: it refuses instead
    assert outcome.findings[0].fix is None
    ctx = context(text)
    (doc,) = ctx.configs
    assert expanded_size(doc.root) is None
    assert doc.value(("model", "name")) is UNKNOWN  # OmegaConf never sees the bomb


def test_recursive_structures_are_not_followed_forever() -> None:
    ctx = context(
        "a: &a [1, *a]\nm: &m {x: *m}\nmodel:\n  train_ds: {x: *a}\ntrainer: {devices: 2}\n"
    )
    (doc,) = ctx.configs  # ruamel ends a recursive alias with null
    assert len(list(doc.mappings())) == 5
    loop: list[object] = [1]
    loop.append(loop)
    assert expanded_size({"a": loop}) is None


def test_merge_keys_report_where_the_value_is_written() -> None:
    text = (
        "base: &loader\n"
        "  num_workers: 0\n"
        "  persistent_workers: true\n"
        "model:\n"
        "  train_ds:\n"
        "    <<: *loader\n"
        "    manifest_filepath: a.json\n"
        "trainer: {devices: 2}\n"
    )
    outcome = lint_text(text)
    located = {(f.key_path, f.line, f.column) for f in outcome.findings}
    assert ("model.train_ds.persistent_workers", 3, 3) in located
    assert ("base.persistent_workers", 3, 3) in located
    # the shared line cannot be fixed for one user only: no fix rather than a wrong one
    assert all(f.fix is None for f in outcome.findings if f.key_path.startswith("model"))


def test_multi_document_lines_are_file_lines() -> None:
    text = (
        "trainer: {devices: 1}\n"
        "---\n"
        "# second document\n"
        "model:\n"
        "  train_ds:\n"
        "    num_workers: 0\n"
        "    persistent_workers: true\n"
        "trainer: {devices: 2}\n"
    )
    (finding,) = lint_text(text).findings
    assert (finding.line, finding.column, finding.end_column) == (7, 5, 23)
    assert finding.fix is not None and finding.fix.edits[0].line == 7


# -- values ------------------------------------------------------------------------------
def test_interpolations_resolve_between_keys_and_resolvers_never_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[str] = []
    OmegaConf.register_resolver("ddplint_probe", lambda x: calls.append(x) or 1)
    monkeypatch.setenv("NUM_WORKERS", "0")
    ctx = context(
        "name: NEST\n"
        "model:\n"
        "  sample_rate: 16000\n"
        "  train_ds:\n"
        "    sample_rate: ${model.sample_rate}\n"
        "    batch: ${.bs}\n"
        "    bs: 8\n"
        "    workers: ${oc.env:NUM_WORKERS}\n"
        "    probe: ${ddplint_probe:1}\n"
        "    via: ${model.train_ds.workers}\n"
        "    missing: ???\n"
        "    dangling: ${nope}\n"
        "  file: '${name}--{${model.train_ds.bs}:.3f}'\n"
        "trainer: {devices: 2}\n"
    )
    (doc,) = ctx.configs
    assert doc.value(("model", "train_ds", "sample_rate")) == 16000
    assert doc.value(("model", "train_ds", "batch")) == 8
    assert doc.value(("model", "file")) == "NEST--{8:.3f}"
    for key in ("workers", "probe", "via", "missing", "dangling"):
        assert doc.value(("model", "train_ds", key)) is UNKNOWN, key
    assert doc.value(("model", "train_ds", "absent")) is ABSENT
    assert calls == []


@pytest.mark.parametrize(
    ("trainer", "processes", "multi"),
    [
        ("devices: 4\n  num_nodes: 2", 8, True),
        ("devices: 1\n  num_nodes: 1", 1, False),
        ("devices: 1", 1, False),
        ("devices: -1", None, True),
        ("devices: auto", None, True),
        ("devices: '-1'", None, True),
        ("devices: [0, 1, 2]", 3, True),
        ("devices: '0,1'", 2, True),
        ("devices: '4'", 4, True),
        ("devices: 1\n  num_nodes: 4", 4, True),
        ("gpus: 2", 2, True),
        ("accelerator: cpu", 1, False),
        ("accelerator: cpu\n  devices: 3", 3, True),
        ("devices: ${oc.env:GPUS}", None, False),
        ("devices: ${n}", 2, True),
        ("max_steps: 10", None, True),
    ],
)
def test_world_size_forms(trainer: str, processes: int | None, multi: bool) -> None:
    ctx = context(f"n: 2\ntrainer:\n  {trainer}\n  max_epochs: 1\n")
    world = ctx.world(ctx.configs[0])
    assert (world.processes, world.may_be_multi) == (processes, multi)


# -- which YAML is a training config ------------------------------------------------------
FOREIGN = {
    ".github/workflows/ci.yml": (
        "name: CI\non: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n"
        "    steps:\n      - run: python -m trainer --devices 2 --sync_batchnorm true\n"
        "    env: {trainer: x, persistent_workers: true, num_workers: 0}\n"
    ),
    "docker-compose.yml": (
        "services:\n  trainer:\n    image: train:latest\n"
        "    environment: {num_workers: 0, persistent_workers: true}\n"
        "  model:\n    image: serve\n"
    ),
    "k8s/job.yaml": (
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: trainer}\nspec:\n"
        "  template:\n    spec:\n      containers:\n        - name: model\n"
        "          args: [--persistent_workers, 'true', --num_workers, '0']\n"
        "trainer: {devices: 8, sync_batchnorm: true, accelerator: cpu, strategy: ddp}\n"
    ),
    ".pre-commit-config.yaml": (
        "repos:\n  - repo: local\n    hooks:\n      - id: ddplint\n        name: ddplint\n"
        "        entry: ddplint check\ntrainer: {devices: 2}\nmodel: {train_ds: {}}\n"
    ),
}


@pytest.mark.parametrize("name", sorted(FOREIGN))
def test_non_training_yaml_gets_no_findings(name: str) -> None:
    outcome = lint_text(FOREIGN[name], name)
    assert outcome.findings == [] and outcome.errors == []
    assert context(FOREIGN[name], name).configs == []


def test_training_shapes_are_recognised() -> None:
    assert is_training_config({"trainer": {"devices": 2}})
    assert is_training_config({"model": {"train_ds": {}}})
    assert is_training_config({"model": {"encoder": {}}})
    assert is_training_config({"exp_manager": {"exp_dir": None}})
    assert not is_training_config({"model": "gpt2", "trainer": "hf"})
    assert not is_training_config(["trainer"])


def test_yaml_without_training_words_is_not_even_loaded() -> None:
    ctx = context("this: [is, not, {valid\n")
    assert ctx.documents == []


# -- NeMo shard counting and checkpoint names --------------------------------------------
@pytest.mark.parametrize(
    ("value", "counts"),
    [
        ("/d/audio__OP_0..511_CL_.tar", [512]),
        ("/d/audio_{0..9}.tar", [10]),
        ("/d/audio_(0..9).tar", [10]),
        (["/d/audio_{00..15}_{a,b}.tar"], [32]),
        ("/d/audio_{0..3}_{a,b}.tar", [2]),  # NeMo splits a string on "," first
        ("/d/a.tar,/d/b.tar,/d/c.tar", [3]),
        (["/d/a.tar", "/d/b.tar"], [2]),
        (["/d/audio_{0..9}.tar"], [10]),
        ([["/d/b0_{0..7}.tar"], ["/d/b1_{0..3}.tar"]], [8, 4]),
        ("/d/one.tar", [1]),
        ([], None),
        (None, None),
    ],
)
def test_shard_counts_follow_nemo(value: object, counts: list[int] | None) -> None:
    assert shard_counts(value) == counts


def test_brace_counts() -> None:
    assert count_expansions("x{1,2{3..5}}") == 4
    assert count_expansions("{0..10..2}") == 6
    assert count_expansions("{a..e}") == 5
    assert count_expansions("lit{x}") == 1
    assert count_expansions("un{closed") == 1


def test_checkpoint_name_groups() -> None:
    raw = "${name}--{${exp_manager.monitor}:.3f}-{step}"
    resolved = "NEST--{val_loss:.3f}-{step}"
    assert metrics(resolved) == ["val_loss"]
    assert metrics("{epoch}-{step}-{consumed_samples}") == []
    assert without_group(raw, resolved, "val_loss") == "${name}-{step}"
    assert without_group("{val_wer:.2f}-{epoch}", "{val_wer:.2f}-{epoch}", "val_wer") == "{epoch}"
    assert without_group("{val_wer}", "{val_wer}", "val_wer") is None


# -- edits -------------------------------------------------------------------------------
def _apply(ctx: ConfigContext, edit: object) -> str:
    from ddplint.fix import apply_edits

    return apply_edits(ctx.source, [edit])  # type: ignore[list-item]


def test_add_key_after_nested_values_and_comments() -> None:
    text = (
        "trainer:\n"
        "  # devices\n"
        "  devices: 2\n"
        "  plugins:\n"
        "  - a\n"
        "  - b\n"
        "  note: |\n"
        "    text\n"
        "\n"
        "# next section\n"
        "model: {encoder: {}}\n"
    )
    ctx = context(text)
    edit = add_key(ctx.configs[0], ("trainer",), "sync_batchnorm", "true")
    after = _apply(ctx, edit)
    assert after.splitlines()[8] == "  sync_batchnorm: true"
    (root,) = load_documents(after)
    assert root["trainer"]["sync_batchnorm"] is True and root["trainer"]["note"] == "text\n"


def test_add_key_to_flow_mapping_and_last_line_without_newline() -> None:
    ctx = context("model: {encoder: {}}\ntrainer: {devices: 2}")
    after = _apply(ctx, add_key(ctx.configs[0], ("trainer",), "sync_batchnorm", "true"))
    assert after == "model: {encoder: {}}\ntrainer: {sync_batchnorm: true, devices: 2}"
    ctx = context("model: {encoder: {}}\ntrainer:\n  devices: 2")
    after = _apply(ctx, add_key(ctx.configs[0], ("trainer",), "sync_batchnorm", "true"))
    assert after == "model: {encoder: {}}\ntrainer:\n  devices: 2\n  sync_batchnorm: true"


def test_crlf_files_keep_crlf() -> None:
    ctx = context("trainer:\r\n  devices: 2\r\nmodel:\r\n  encoder: {}\r\n")
    after = _apply(ctx, add_key(ctx.configs[0], ("trainer",), "sync_batchnorm", "true"))
    assert (
        after == "trainer:\r\n  devices: 2\r\n  sync_batchnorm: true\r\nmodel:\r\n  encoder: {}\r\n"
    )


def test_checked_fix_refuses_an_edit_that_changes_anything_else() -> None:
    text = "trainer:\n  devices: 2\n  note: |\n    a\n    # b\nmodel: {encoder: {}}\n"
    ctx = context(text)
    doc = ctx.configs[0]
    edit = add_key(doc, ("trainer",), "sync_batchnorm", "true")
    # the "# b" line looks like a comment but belongs to the block scalar
    assert (
        ctx.checked_fix(
            doc, [edit], {("trainer", "sync_batchnorm"): True}, Applicability.UNSAFE, "x"
        )
        is None
    )
    good = set_or_add(doc, ("trainer",), "devices", "4")
    fix = ctx.checked_fix(doc, [good], {("trainer", "devices"): 4}, Applicability.SAFE, "x")
    assert fix is not None


# -- suppression -------------------------------------------------------------------------
SUPPRESSED = (
    "model:\n  train_ds:\n    num_workers: 0\n"
    "    persistent_workers{key}\n"
    "trainer: {{devices: 2}}\n"
)


@pytest.mark.parametrize(
    "key",
    [
        ": true  # ddplint: ignore[DDP601]",
        ": true  # noqa: DDP601",
        ": true  # ddplint: ignore",
        ":  # ddplint: ignore[DDP6]\n      true",
        ":\n      true  # ddplint: ignore[DDP601]",
    ],
)
def test_suppression_on_key_or_value_line(key: str) -> None:
    text = SUPPRESSED.format(key=key)
    assert lint_text(text).findings == []
    unsuppressed = text.replace("ddplint: ignore", "note").replace("noqa", "note")
    assert [f.rule for f in lint_text(unsuppressed).findings] == ["DDP601"]


def test_file_level_suppression_in_yaml() -> None:
    text = "# ddplint: file-ignore[DDP601]\n" + SUPPRESSED.format(key=": true")
    assert lint_text(text).findings == []


def test_deep_nesting_is_refused_or_loaded_on_the_deep_stack() -> None:
    head = "# sync_batchnorm: true\ntrainer:\n"
    flow = head + "  devices: " + "[" * 20000 + "]" * 20000 + "\n"
    block = head + "".join(" " * i + "-\n" for i in range(1, 1500))
    outcome = lint_text(flow)
    (error,) = outcome.errors
    assert "nested more than 100 deep" in error.message and not outcome.internal_error
    # Block nesting 1,500 deep loads on the engine's deep stack (ddplint.deep_stack).
    outcome = lint_text(block)
    assert outcome.errors == [] and not outcome.internal_error


FIXED_CONFIGS = [
    p for p in fixture_files() if p.parent.name.startswith("DDP6") and fixed_path(p).exists()
]


@pytest.mark.parametrize("path", FIXED_CONFIGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixed_config_is_clean_when_linted_again(path: Path) -> None:
    before = lint_fixture(path)
    assert before.findings and all(f.fix is not None for f in before.findings)
    after = lint_source(
        path.name,
        fixed_path(path).read_bytes(),
        LintOptions(selected=(path.parent.name,), project_root="."),
    )
    assert after.errors == [] and after.findings == []


@pytest.mark.parametrize("code", CONFIG_RULES)
def test_config_rule_documentation_has_the_headings(code: str) -> None:
    text = all_rules()[code].documentation()
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert headings == [
        "## What it does",
        "## Why is this bad?",
        "## Example",
        "## Use instead",
        "## Fix safety",
        "## References",
    ]
    assert "```yaml" in text or "```json" in text  # DeepSpeed configs are JSON


@pytest.mark.parametrize(
    ("trainer", "lightning"),
    [
        ({"devices": 8, "num_nodes": 2}, True),
        ({"devices": 8, "strategy": {"_target_": "DDPStrategy"}, "logger": {"name": "x"}}, True),
        ({"max_epochs": 10, "resume_from_checkpoint": None, "weights_summary": "top"}, True),
        ({"max_epochs": 100, "checkpoint": {"save_dir": "/c"}}, False),
        ({"devices": 8, "distributed": {"backend": "nccl"}}, False),
    ],
)
def test_lightning_reads_a_trainer_section_only_of_its_own_parameters(
    trainer: dict[str, object], lightning: bool
) -> None:
    found = lightning_trainer({"trainer": trainer})
    assert (found is trainer) if lightning else found is None


def test_no_trainer_section_is_no_lightning_trainer() -> None:
    assert lightning_trainer({"model": {"train_ds": {}}}) is None
    assert lightning_trainer({"trainer": "lightning"}) is None
