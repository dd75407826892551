"""Hostile YAML through the config layer: alias and interpolation bombs stay bounded in
time and memory, no tag / ``_target_`` / resolver ever runs, broken and odd files give
one error (or their findings) and never crash, deep nesting is refused without false
refusals, and a file with very many fixable findings stays fast.

The bombs run ``ddplint check`` in a child process under an address-space limit
(``RLIMIT_AS``) and a hang guard, so a blow-up fails the test instead of the machine.
No test asserts how fast a run is (a loaded machine would fail it): speed is measured
in bench/."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from ddplint.config.context import ConfigContext
from ddplint.config.loader import MAX_FLOW_DEPTH, load_documents
from ddplint.config.resolve import MAX_RESOLUTION_STEPS, Resolver
from ddplint.config.values import UNKNOWN
from ddplint.engine import FileOutcome, lint_source
from ddplint.rules import all_rules
from ddplint.settings import LintOptions
from ddplint.source import SourceError, SourceFile

from .support import HANG_GUARD

ROOT = Path(__file__).resolve().parents[2]
CONFIG_RULES = tuple(code for code, rule in all_rules().items() if rule.kind == "config")
#: Address space for a child ``ddplint check`` (it needs about 150 MiB).
MEMORY_LIMIT = 768 * 2**20
#: Peak resident memory a child ``ddplint check`` of one hostile file may reach.
RSS_LIMIT = 300 * 2**20
#: ``ddplint ARGS`` that reports its peak resident memory on stderr when it exits: the
#: high-water mark of its own memory map (``ru_maxrss`` would count the test process it
#: was forked from: Linux keeps it across ``exec``).
MEASURED_CLI = """
import atexit, re, sys
def peak():
    status = open("/proc/self/status").read()
    return re.search(r"VmHWM:\\s+(\\d+)", status).group(1)
atexit.register(lambda: print(f"maxrss={peak()}", file=sys.stderr))
from ddplint.cli import main
sys.argv = ["ddplint", *sys.argv[1:]]
main()
"""

#: A training config with one DDP601 hazard (line 6), to which hostile parts are added.
TRAINING = (
    "trainer:\n"
    "  devices: 2\n"
    "model:\n"
    "  train_ds:\n"
    "    num_workers: 0\n"
    "    persistent_workers: true\n"
)


def options() -> LintOptions:
    return LintOptions(selected=CONFIG_RULES, project_root=".")


def lint_bytes(raw: bytes, name: str = "conf.yaml") -> FileOutcome:
    return lint_source(name, raw, options())


def lint_text(text: str, name: str = "conf.yaml") -> FileOutcome:
    return lint_bytes(text.encode(), name)


def rules_found(outcome: FileOutcome) -> list[tuple[str, int]]:
    return [(f.rule, f.line) for f in outcome.findings]


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def check_in_child(cwd: Path, *args: str) -> tuple[int, dict[str, Any]]:
    """``ddplint check --no-cache --format json ARGS`` in a child process limited in
    memory (and guarded against hanging): exit code, JSON report. Its peak RSS is
    checked."""
    done = subprocess.run(
        [sys.executable, "-c", MEASURED_CLI, "check", "--no-cache", "--format", "json", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        preexec_fn=_limit_memory,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
        check=False,
    )
    assert "MemoryError" not in done.stderr, done.stderr[-2000:]
    assert done.stdout, done.stderr[-2000:]
    peak_kib = int(done.stderr.rsplit("maxrss=", 1)[1].split()[0])
    assert peak_kib * 1024 < RSS_LIMIT
    return done.returncode, json.loads(done.stdout)


def laughs(levels: int, *, mapping: bool = False) -> str:
    """ "Billion laughs": each anchor holds 9 aliases of the one before (9**levels)."""
    lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels):
        if mapping:
            items = ", ".join(f"k{j}: *l{i - 1}" for j in range(9))
            lines.append(f"l{i}: &l{i} {{{items}}}")
        else:
            lines.append(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]")
    return "\n".join(lines) + "\n"


# -- bombs ----------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("mapping", [False, True], ids=["lists", "mappings"])
def test_billion_laughs_inside_a_training_config_is_bounded(tmp_path: Path, mapping: bool) -> None:
    top = "*l9"
    text = (
        laughs(10, mapping=mapping)
        + "trainer:\n  devices: 2\n  sync_batchnorm: true\n  plugins: "
        + top
        + "\n  callbacks: "
        + top
        + "\nmodel:\n  bomb: ${l9}\n  encoder:\n    _target_: x.ConformerEncoder\n"
        + "    layers: "
        + top
        + "\n  train_ds:\n    <<: "
        + ("*l9" if mapping else "{extra: *l9}")
        + "\n    num_workers: 0\n    persistent_workers: true\n"
        + "    is_tarred: true\n    tarred_audio_filepaths: ${model.bomb}\n"
        + "exp_manager:\n  checkpoint_callback_params: {filename: '${model.bomb}-{val_wer}'}\n"
    )
    (tmp_path / "bomb.yaml").write_text(text)
    code, report = check_in_child(tmp_path, "bomb.yaml")
    # DDP601 is found; nothing that would need the bomb expanded claims anything.
    persistent = [f for f in report["findings"] if f["rule"] == "DDP601"]
    assert [f["key_path"] for f in persistent] == ["model.train_ds.persistent_workers"]
    assert report["errors"] == [] and code == 1


def interpolation_bomb(levels: int) -> str:
    """Each value interpolates the one before twice: OmegaConf, which does not remember
    what it resolved, would do 2**levels lookups (and build a string as long)."""
    lines = ["s0: " + "x" * 64]
    lines += [f"s{i}: ${{s{i - 1}}}${{s{i - 1}}}" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def test_interpolation_bomb_is_not_resolved(tmp_path: Path) -> None:
    top = "${s39}"
    text = interpolation_bomb(40) + (
        "trainer:\n  devices: 2\n  callbacks:\n"
        "    - class_path: lightning.pytorch.callbacks.ModelCheckpoint\n"
        f"      init_args: {{filename: '{top}-{{val_loss}}', monitor: val_loss}}\n"
        "model:\n  encoder:\n"
        f"    _target_: '{top}'\n"
        "  train_ds:\n    num_workers: 0\n    persistent_workers: true\n"
        f"    is_tarred: true\n    tarred_audio_filepaths: '{top}'\n"
        f"    manifest_filepath: '{top}'\n    drop_last: '{top}'\n"
        f"exp_manager:\n  checkpoint_callback_params: {{filename: '{top}-{{val_wer}}'}}\n"
    )
    (tmp_path / "bomb.yaml").write_text(text)
    code, report = check_in_child(tmp_path, "bomb.yaml")
    assert [f["rule"] for f in report["findings"]] == ["DDP601"] and code == 1
    # In process: the value is unknown, and a small chain still resolves.
    ctx = ConfigContext.load(SourceFile.decode("b.yaml", text.encode()), options())
    (doc,) = ctx.configs
    assert doc.value(("model", "encoder", "_target_")) is UNKNOWN
    assert doc.value(("s3",)) == "x" * 64 * 8


def test_resolution_steps_count_each_interpolation_as_omegaconf_follows_it() -> None:
    text = interpolation_bomb(12) + "a: ${s3}\nb: ${.a}-${a}\nc: ${c}\nd: ${nope}\n"
    resolver = Resolver(load_documents(text)[0])
    assert resolver.resolution_steps(("s3",)) == 2 + 4 + 8
    assert resolver.resolution_steps(("a",)) == 1 + 14
    assert resolver.resolution_steps(("b",)) == 2 * (1 + 15)  # ``.a`` is the sibling ``a``
    # 2 + 4 + ... + 2**11 lookups: above the limit
    assert resolver.resolution_steps(("s11",)) is None
    assert sum(2**i for i in range(1, 12)) > MAX_RESOLUTION_STEPS
    assert resolver.resolution_steps(("c",)) is None  # circular
    assert resolver.resolution_steps(("d",)) is None  # dangling: OmegaConf fails anyway


def test_long_interpolation_chain_is_cut() -> None:
    text = (
        "trainer: {devices: 2}\n"
        + "".join(f"v{i}: ${{v{i + 1}}}\n" for i in range(3000))
        + "v3000: 0\nmodel:\n  train_ds:\n    num_workers: ${v2990}\n"
        "    persistent_workers: true\n  validation_ds:\n    num_workers: ${v0}\n"
        "    persistent_workers: true\n"
    )
    outcome = lint_text(text)
    # 10 links resolve; 3000 are not followed (the value is unknown, the rule quiet)
    assert [f.key_path for f in outcome.findings] == ["model.train_ds.persistent_workers"]
    assert outcome.errors == []


# -- nothing runs ---------------------------------------------------------------------
def executing_yaml(marker: Path) -> str:
    """Every YAML way we know to ask a loader (or Hydra / OmegaConf) to run a command
    that creates ``marker``; plus a DDP601 hazard on line 8, so rules and fixes run."""
    touch = f"touch {marker}"
    return (
        f"%TAG !py! tag:yaml.org,2002:python/object/apply:\n---\n{TRAINING}"
        f"  apply: !!python/object/apply:os.system ['{touch}']\n"
        f"  new: !!python/object/new:subprocess.Popen [['touch', '{marker}']]\n"
        f"  object: !!python/object:subprocess.Popen {{args: ['touch', '{marker}']}}\n"
        "  name: !!python/name:os.system\n"
        "  module: !!python/module:os\n"
        f"  shorthand: !py!os.system ['{touch}']\n"
        f"  custom: !Custom {{cmd: '{touch}'}}\n"
        f"  ? !!python/object/apply:os.system ['{touch}']\n  : key\n"
        "  hydra_target:\n"
        "    _target_: os.system\n"
        f"    _args_: ['{touch}']\n"
        "  hydra_call:\n"
        "    _target_: subprocess.run\n"
        f"    args: [touch, '{marker}']\n"
        "    _recursive_: true\n"
        "  partial: {_target_: subprocess.call, _partial_: true}\n"
        f"  env: ${{oc.env:DDPLINT_PROBE,'{touch}'}}\n"
        "  create: \"${oc.create:'{a: 1}'}\"\n"
        "  decode: ${oc.decode:'${ddplint_marker:x}'}\n"
        f'  evaluated: "${{eval:\'__import__(\\"os\\").system(\\"{touch}\\")\'}}"\n'
        "  custom_resolver: ${ddplint_marker:x}\n"
        "  spaced: ${ ddplint_marker :x}\n"
        "  nested: ${model.${ddplint_marker:x}}\n"
        "  argument: ${ddplint_marker:${model.train_ds.num_workers}}\n"
        "  in_list: [1, '${ddplint_marker:y}']\n"
        "  via: ${model.custom_resolver}\n"
        "  workers_from: ${model.via}\n"
        f"--- !!python/object/apply:os.system ['{touch}']\n"
        f"--- !!python/object/new:os.system ['{touch}']\n"
    )


@pytest.fixture
def marker_resolver(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A registered OmegaConf resolver that creates a file when called."""
    marker = tmp_path / "resolver-ran"
    OmegaConf.register_resolver("ddplint_marker", lambda *_: marker.touch() or "x", replace=True)
    yield marker
    OmegaConf.clear_resolver("ddplint_marker")


def test_tags_targets_and_resolvers_never_run(tmp_path: Path, marker_resolver: Path) -> None:
    marker = tmp_path / "MARKER"
    text = executing_yaml(marker)
    roots = load_documents(text)  # loads: every tag kept as plain data
    assert len(roots) == 3
    outcome = lint_text(text)
    assert rules_found(outcome) == [("DDP601", 8)] and outcome.errors == []
    assert outcome.findings[0].fix is not None  # the fix check re-loaded it too
    ctx = ConfigContext.load(SourceFile.decode("x.yaml", text.encode()), options())
    doc = ctx.configs[0]
    for key in ("env", "create", "decode", "evaluated", "custom_resolver", "spaced", "nested"):
        assert doc.value(("model", key)) is UNKNOWN, key
    assert doc.value(("model", "argument")) is UNKNOWN
    assert doc.value(("model", "in_list", 1)) is UNKNOWN
    assert doc.value(("model", "workers_from")) is UNKNOWN
    assert doc.value(("model", "hydra_target", "_target_")) == "os.system"
    assert not marker.exists() and not marker_resolver.exists()


def test_executing_yaml_through_the_cli_with_fix_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "MARKER"
    path = tmp_path / "conf.yaml"
    path.write_text(executing_yaml(marker))
    before = path.read_text()
    code, report = check_in_child(tmp_path, "--fix", "conf.yaml")
    assert not marker.exists()
    assert code == 0 and report["findings"] == [] and report["errors"] == []
    assert path.read_text() == before.replace(
        "persistent_workers: true", "persistent_workers: false", 1
    )
    assert not marker.exists()


# -- duplicate keys, merge keys, documents ------------------------------------------
@pytest.mark.parametrize(
    ("text", "line", "column"),
    [
        (TRAINING + "trainer: {devices: 1}\n", 7, 1),
        (TRAINING.replace("num_workers: 0", "num_workers: 0\n    num_workers: 4"), 6, 5),
        ("trainer: {devices: 2, devices: 4}\n" + TRAINING[TRAINING.index("model") :], 1, 23),
        ("a: &a {x: 1}\nb: &b {y: 1}\n" + TRAINING + "  <<: *a\n  <<: *b\n", 10, 3),
        ("---\n" + TRAINING + "---\n" + TRAINING + "trainer: {}\n", 15, 1),
    ],
    ids=["top", "nested", "flow", "merge-key", "second-document"],
)
def test_duplicate_keys_are_one_error_not_a_merge(text: str, line: int, column: int) -> None:
    outcome = lint_text(text)
    assert outcome.findings == [] and not outcome.internal_error
    (error,) = outcome.errors
    assert "duplicate" in error.message and (error.line, error.column) == (line, column)


def test_merge_keys_and_overrides_are_followed() -> None:
    text = (
        "loader: &loader {num_workers: 0, persistent_workers: true}\n"
        "workers: &workers {num_workers: 4}\n"
        "trainer: {devices: 2}\n"
        "model:\n"
        "  train_ds:\n    <<: [*workers, *loader]\n"  # the first map wins: 4 workers
        "  validation_ds:\n    <<: *loader\n    num_workers: 2\n"  # own key wins
        "  test_ds:\n    <<: *loader\n"
    )
    outcome = lint_text(text)
    assert sorted(f.key_path for f in outcome.findings) == [
        "loader.persistent_workers",
        "model.test_ds.persistent_workers",
    ]
    assert all(f.line == 1 for f in outcome.findings)  # where the value is written


def test_every_document_is_linted_whatever_the_others_hold() -> None:
    documents = [
        "- a list\n- on top\n",
        "just a scalar\n",
        "",  # an empty document
        "~\n",
        laughs(10) + "x: *l9\n",
        TRAINING,
        "!!python/object/apply:os.system [echo]\n",
        TRAINING.replace("devices: 2", "devices: 4"),
    ]
    text = "---\n".join(documents)
    outcome = lint_text(text)
    assert outcome.errors == [] and not outcome.internal_error
    lines = text.splitlines()
    assert [f.rule for f in outcome.findings] == ["DDP601", "DDP601"]
    assert all(lines[f.line - 1].strip() == "persistent_workers: true" for f in outcome.findings)


# -- nesting ----------------------------------------------------------------------------
def test_deep_flow_nesting_is_refused_at_its_position() -> None:
    text = TRAINING + "  x: " + "[" * 20000 + "]" * 20000 + "\n"
    with pytest.raises(SourceError) as caught:
        load_documents(text)
    assert (caught.value.line, caught.value.column) == (7, 6 + MAX_FLOW_DEPTH)
    assert f"nested more than {MAX_FLOW_DEPTH} deep" in caught.value.message


def test_brackets_in_comments_and_strings_are_not_nesting() -> None:
    """Regression: the depth used to be counted over the raw text, so a valid file with
    many unclosed brackets in comments or strings was refused."""
    text = TRAINING + "# [ see note\n" * 150 + "  pattern: '" + "[" * 150 + "'\n"
    text += "  ok: " + "[" * MAX_FLOW_DEPTH + "]" * MAX_FLOW_DEPTH + "\n"
    outcome = lint_text(text)
    assert outcome.errors == [] and rules_found(outcome) == [("DDP601", 6)]


@pytest.mark.parametrize("depth", [120, 200])
def test_deep_block_nesting_with_interpolations_is_no_error(depth: int) -> None:
    """Regression: OmegaConf's recursion overflowed on a deep (but loadable) config and
    the rule reported an error. On the engine's deep stack (ddplint.deep_stack) the
    interpolation now resolves, so ``other`` is judged too."""
    text = "w: 0\n" + TRAINING + "  other:\n    num_workers: ${w}\n    persistent_workers: true\n"
    text += "  deep:\n" + "".join("  " * (i + 2) + f"k{i}:\n" for i in range(depth))
    text += "  " * (depth + 2) + "v: 1\n"
    outcome = lint_text(text)
    assert outcome.errors == [] and not outcome.internal_error
    assert rules_found(outcome) == [("DDP601", 7), ("DDP601", 10)]


def test_absurd_block_nesting_is_bounded() -> None:
    """1,500 nested block sequences: loaded on the engine's deep stack, in bounded time,
    with no error; the training keys above it are still judged."""
    text = TRAINING + "  deep:\n" + "".join(" " * i + "-\n" for i in range(3, 1500))
    outcome = lint_text(text)
    assert outcome.errors == [] and not outcome.internal_error
    assert rules_found(outcome) == [("DDP601", 6)]


# -- odd files ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("raw", "found"),
    [
        (b"\xef\xbb\xbf" + TRAINING.encode(), [("DDP601", 6)]),
        (TRAINING.replace("\n", "\r\n").encode(), [("DDP601", 6)]),
        (TRAINING.replace("\n", "\r").encode(), [("DDP601", 6)]),
        (b"", []),
        (b"\n\n# persistent_workers: true\n", []),
        (b"---\n...\n---\n", []),
        (b"- trainer: {devices: 2}\n- persistent_workers: true\n", []),
        (b"persistent_workers trainer model\n", []),
        (b"~\n", []),
        (b"!!binary aGVsbG8= # persistent_workers trainer\n", []),
    ],
    ids=["bom", "crlf", "cr", "empty", "comments", "markers", "list", "scalar", "null", "binary"],
)
def test_odd_but_valid_files(raw: bytes, found: list[tuple[str, int]]) -> None:
    outcome = lint_bytes(raw)
    assert outcome.errors == [] and not outcome.internal_error
    assert rules_found(outcome) == found


@pytest.mark.parametrize(
    ("raw", "words", "line"),
    [
        (TRAINING.replace("    num", "\tnum").encode(), "a tab", 5),
        (TRAINING.encode() + b"    x: 'never closed\n", "a quoted string that is never closed", 7),
        (TRAINING.encode() + b"    y: [1, 2\n", "a `[` list that is never closed", 7),
        (b"trainer:\n  devices: 2\nmodel:\n  train_ds: {persistent_workers: true, num_wor", "", 4),
        (TRAINING.encode() + b"  name: caf\xe9\n", "cannot decode as utf-8", None),
        (b"\x00\x01persistent_workers trainer\x00", "NUL bytes", None),
        (bytes(range(1, 256)) * 8 + b"persistent_workers trainer", "cannot decode", None),
        (b"\x89PNG\r\n\x1a\n persistent_workers trainer \xff\xfe", "cannot decode", None),
        (b"{}: [ ] : persistent_workers trainer ]]] }}} ::\n", "cannot load YAML", 1),
    ],
    ids=[
        "tab",
        "unclosed-quote",
        "unclosed-flow",
        "truncated",
        "latin1",
        "nul",
        "junk",
        "png",
        "garbage",
    ],
)
def test_broken_files_are_one_error(raw: bytes, words: str, line: int | None) -> None:
    outcome = lint_bytes(raw)
    assert outcome.findings == [] and not outcome.internal_error
    (error,) = outcome.errors
    assert words in error.message
    if line is not None:
        assert error.line == line


def test_random_bytes_named_yaml_never_crash() -> None:
    generator = __import__("random").Random(7)
    for _ in range(200):
        raw = bytes(generator.randrange(256) for _ in range(generator.randrange(1, 400)))
        outcome = lint_bytes(raw + b" trainer persistent_workers")
        assert not outcome.internal_error, (raw, outcome.errors)
        assert len(outcome.errors) <= 1


# -- many fixable findings --------------------------------------------------------------
def sections(count: int) -> str:
    body = "".join(
        f"  ds{i}:\n    num_workers: 0\n    persistent_workers: true\n" for i in range(count)
    )
    return "trainer: {devices: 2}\nmodel:\n" + body


@pytest.mark.slow
def test_many_fixable_findings_keep_their_fixes() -> None:
    """Regression: each fix was checked by re-loading the whole file, so 200 findings
    took ~40 s and 400 documents minutes; past a budget per file the fixes are now
    checked together, with one re-load, and every finding keeps its fix."""
    for text, count in ((sections(300), 300), ((TRAINING + "---\n") * 400, 400)):
        outcome = lint_text(text)
        assert [f.rule for f in outcome.findings] == ["DDP601"] * count
        assert all(f.fix is not None for f in outcome.findings)


@pytest.mark.slow
def test_fix_takes_many_findings_pass_by_pass(tmp_path: Path) -> None:
    path = tmp_path / "conf.yaml"
    path.write_text(sections(80))
    code, report = check_in_child(tmp_path, "--fix", "conf.yaml")
    assert code == 0 and report["findings"] == [] and report["errors"] == []
    assert path.read_text() == sections(80).replace(
        "persistent_workers: true", "persistent_workers: false"
    )


UNREPRESENTABLE = {
    "5000-digit-int": ("big: " + "9" * 5000 + "\n", 6),
    "month-99": ("when: !!timestamp 2001-99-99\n", 7),
    "int-tag-on-text": ("count: !!int 12abc\n", 8),
}


@pytest.mark.parametrize("shape", UNREPRESENTABLE)
def test_a_scalar_python_cannot_represent_is_a_load_error_at_its_place(shape: str) -> None:
    """N6: valid YAML whose scalar Python cannot construct: an error at the scalar, not
    an internal error without a position."""
    tail, column = UNREPRESENTABLE[shape]
    with pytest.raises(SourceError) as raised:
        load_documents("model:\n  train_ds:\n    num_workers: 0\n" + tail)
    assert raised.value.message.startswith("cannot load YAML: a value Python cannot represent")
    assert (raised.value.line, raised.value.column) == (4, column)
