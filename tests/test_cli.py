"""The command line end to end, through real files on disk."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ddplint import __version__
from ddplint.cli import cli
from ddplint.settings import read_toml

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "fixtures" / "example_project"

HAZARD = """\
import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        torch.cuda.synchronize()
        return x
"""


#: DDP101, the sample hazard of these tests, is opt-in since issue 23: a `check` without
#: --select of its own selects it on top of the defaults.
OPT_IN = ["--extend-select", "DDP101"]


def run(args: list[str]) -> tuple[int, str, str]:
    if args[:1] == ["check"] and "--select" not in args:
        args = ["check", *OPT_IN, *args[1:]]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "net.py").write_text(HAZARD)
    (tmp_path / "pkg" / "clean.py").write_text("import torch\nx = torch.ones(1)\n")
    return tmp_path


def test_version() -> None:
    code, out, _ = run(["--version"])
    assert code == 0 and __version__ in out


def test_version_is_kept_in_one_place() -> None:
    """pyproject.toml has no version of its own: setuptools reads `ddplint.__version__`,
    so the installed distribution and `ddplint --version` cannot disagree."""
    project = read_toml(ROOT / "pyproject.toml")
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    dynamic = project["tool"]["setuptools"]["dynamic"]["version"]
    assert dynamic == {"attr": "ddplint.__version__"}
    assert importlib.metadata.version("ddplint") == __version__


def test_concise_positions_and_exit_code(project: Path) -> None:
    code, out, _ = run(["check", "--no-cache"])
    assert code == 1
    first = out.splitlines()[0]
    assert first == (
        "pkg/net.py:7:9: DDP101 warning: `torch.cuda.synchronize()` blocks the host every step"
        " in `Net.forward`"
    )
    assert "Found 1 finding." in out


def test_clean_tree_exits_zero(project: Path) -> None:
    (project / "pkg" / "net.py").unlink()
    code, out, _ = run(["check", "--no-cache"])
    assert (code, out.strip()) == (0, "All checks passed.")


def test_exit_zero(project: Path) -> None:
    assert run(["check", "--no-cache", "--exit-zero"])[0] == 0


def test_json_shape(project: Path) -> None:
    code, out, _ = run(["check", "--no-cache", "--format", "json"])
    assert code == 1
    data = json.loads(out)
    assert set(data) == {"version", "findings", "errors"} and data["version"] == 1
    (finding,) = data["findings"]
    assert finding["rule"] == "DDP101" and finding["name"] == "host-sync-in-forward"
    assert finding["severity"] == "warning" and finding["path"] == "pkg/net.py"
    assert (finding["line"], finding["column"], finding["end_line"], finding["end_column"]) == (
        7,
        9,
        7,
        33,
    )
    assert finding["fix"]["applicability"] == "unsafe"
    assert finding["fix"]["edits"] == [
        {"line": 7, "column": 1, "end_line": 8, "end_column": 1, "content": ""}
    ]
    assert data["errors"] == []


def test_full_format_has_code_frame(project: Path) -> None:
    _, out, _ = run(["check", "--no-cache", "--format", "full"])
    assert "  > 7 |         torch.cuda.synchronize()" in out
    assert "^" * len("torch.cuda.synchronize()") in out
    assert "help: Remove the host synchronisation (unsafe, --unsafe-fixes)" in out


def test_output_file_and_statistics(project: Path) -> None:
    code, out, _ = run(["check", "--no-cache", "--statistics", "-o", "report.txt"])
    assert code == 1 and out == ""
    assert (project / "report.txt").read_text().splitlines()[0].split() == [
        "1",
        "DDP101",
        "host-sync-in-forward",
    ]


def test_select_and_ignore(project: Path) -> None:
    assert run(["check", "--no-cache", "--preview", "--select", "DDP1", "--ignore", "DDP1"])[0] == 0
    assert run(["check", "--no-cache", "--select", "DDP101"])[0] == 1
    assert run(["check", "--no-cache", "--select", "DDP1", "--ignore", "DDP101"])[0] == 0


def test_unknown_code_is_usage_error(project: Path) -> None:
    code, _, err = run(["check", "--select", "DDP999"])
    assert code == 2 and "unknown rule selector `DDP999`" in err and "DDP101" in err


def test_settings_from_pyproject(project: Path) -> None:
    # A setting the command line's selection (``run`` turns DDP101 on) cannot override.
    (project / "pyproject.toml").write_text("[tool.ddplint]\nmax-file-size = 10\n")
    assert run(["check", "--no-cache"])[0] == 0
    (project / "pyproject.toml").write_text('[tool.ddplint]\nignroe = ["DDP101"]\n')
    code, _, err = run(["check", "--no-cache"])
    assert code == 2 and "unknown key(s) ignroe" in err and "valid keys:" in err


def test_per_file_ignores(project: Path) -> None:
    (project / "pyproject.toml").write_text(
        '[tool.ddplint]\nper-file-ignores = { "pkg/net.py" = ["DDP101"] }\n'
    )
    assert run(["check", "--no-cache"])[0] == 0


@pytest.mark.parametrize(
    "comment",
    [
        "  # noqa: DDP101",
        "  # ddplint: ignore[DDP101]",
        "  # ddplint: ignore",
        "  # noqa: E501, DDP1",
    ],
)
def test_inline_suppression(project: Path, comment: str) -> None:
    path = project / "pkg" / "net.py"
    path.write_text(
        HAZARD.replace("torch.cuda.synchronize()", "torch.cuda.synchronize()" + comment)
    )
    assert run(["check", "--no-cache"])[0] == 0


def test_bare_noqa_does_not_silence(project: Path) -> None:
    path = project / "pkg" / "net.py"
    path.write_text(HAZARD.replace("torch.cuda.synchronize()", "torch.cuda.synchronize()  # noqa"))
    assert run(["check", "--no-cache"])[0] == 1


def test_suppression_on_any_line_of_statement(project: Path) -> None:
    path = project / "pkg" / "net.py"
    path.write_text(
        HAZARD.replace(
            "torch.cuda.synchronize()",
            "torch.cuda.synchronize(\n            0,\n        )  # noqa: DDP101",
        )
    )
    assert run(["check", "--no-cache"])[0] == 0


def test_file_level_suppression(project: Path) -> None:
    path = project / "pkg" / "net.py"
    path.write_text("# ddplint: file-ignore[DDP101]\n" + HAZARD)
    assert run(["check", "--no-cache"])[0] == 0


def test_unparsable_file_is_reported_and_run_goes_on(project: Path) -> None:
    (project / "pkg" / "broken.py").write_text("def f(:\n    torch.cuda.synchronize()\n")
    code, out, err = run(["check", "--no-cache"])
    assert code == 2
    assert "pkg/net.py:7:9: DDP101" in out
    assert "pkg/broken.py:1:" in err and "cannot parse" in err


@pytest.mark.parametrize("cache", [["--no-cache"], []], ids=["no-cache", "cache"])
def test_only_a_file_the_project_model_could_not_read_is_parsed_again(
    project: Path, monkeypatch: pytest.MonkeyPatch, cache: list[str]
) -> None:
    """A file no rule needs is parsed once, by the project model; the one it could not
    read is parsed again only to say why."""
    import ddplint.engine.triage as triage

    (project / "pkg" / "broken.py").write_text("def f(:\n    pass\n")
    (project / "pkg" / "plain.py").write_text("def g():\n    return 1\n")
    parsed_again: list[str] = []
    compiles = triage._compiles

    def recording(path: str, raw: bytes) -> bool:
        parsed_again.append(Path(path).name)
        return compiles(path, raw)

    monkeypatch.setattr(triage, "_compiles", recording)
    code, _, err = run(["check", *cache])
    assert code == 2 and "pkg/broken.py:1:" in err and "cannot parse" in err
    assert set(parsed_again) == {"broken.py"}  # its worker parses it again to say why
    if cache:
        return  # without a cache, a YAML file linted alone builds no summaries to reuse
    # A YAML file linted alone reads code facts from the project's other files: the
    # files whose summaries the cache holds are not parsed again for that either.
    (project / "trainer.yaml").write_text("callbacks:\n  - class_path: ModelCheckpoint\n")
    parsed_again.clear()
    run(["check", "trainer.yaml"])
    assert set(parsed_again) <= {"broken.py"}


def test_missing_path_is_an_error(project: Path) -> None:
    code, out, err = run(["check", "--no-cache", "pkg", "nope.py"])
    assert code == 2 and "nope.py: error: no such file or directory" in err
    assert "pkg/net.py:7:9" in out


def test_gitignored_files_are_skipped_explicit_files_linted(project: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    (project / ".gitignore").write_text("pkg/net.py\n")
    assert run(["check", "--no-cache"])[0] == 0
    assert run(["check", "--no-cache", "pkg/net.py"])[0] == 1


def test_cache_gives_same_result(project: Path) -> None:
    first = run(["check", "--format", "json"])
    assert (project / ".ddplint_cache").is_dir()
    second = run(["check", "--format", "json"])
    assert first == second and json.loads(first[1])["findings"]


def test_rules_and_explain() -> None:
    code, out, _ = run(["rules"])
    assert code == 0 and "DDP101" in out and "host-sync-in-forward" in out
    code, out, _ = run(["explain", "DDP101"])
    for heading in ("What it does", "Why is this bad?", "Example", "Use instead", "Fix safety"):
        assert f"## {heading}" in out
    assert run(["explain", "DDP000"])[0] == 2


def test_python_dash_m_and_example_project() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ddplint", "check", "--no-cache", *OPT_IN, str(EXAMPLE)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert result.returncode == 1, result.stderr
    lines = [line for line in result.stdout.splitlines() if ": DDP" in line]
    assert all("clean_" not in line for line in lines)
    locations = {line.split(": ")[0] for line in lines if " DDP101 " in line}
    assert {
        "fixtures/example_project/speechnet/encoder.py:28:13",
        "fixtures/example_project/speechnet/encoder.py:31:13",
        "fixtures/example_project/speechnet/encoder.py:37:9",
        "fixtures/example_project/scripts/train.py:28:13",
    } <= locations


def test_example_project_config_findings() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ddplint", "check", "--no-cache", "--format", "json", str(EXAMPLE)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert result.returncode == 1, result.stderr
    data = json.loads(result.stdout)
    assert data["errors"] == []
    config = "fixtures/example_project/configs/nest_fastconformer_ssl.yaml"
    found = {
        (f["path"], f["line"], f["column"], f["rule"], f.get("key_path"))
        for f in data["findings"]
        if f["path"].endswith(".yaml")
    }
    assert found == {
        (config, 20, 5, "DDP601", "model.train_ds.persistent_workers"),
        (config, 26, 5, "DDP604", "model.train_ds.tarred_audio_filepaths"),
        (config, 80, 5, "DDP603", "model.encoder.sync_max_audio_length"),
        (config, 104, 3, "DDP602", "trainer.sync_batchnorm"),
        (config, 117, 5, "DDP605", "exp_manager.checkpoint_callback_params.filename"),
    }
    ddp605 = next(f for f in data["findings"] if f["rule"] == "DDP605")
    assert "fixtures/example_project/speechnet/ssl_model.py:25" in ddp605["message"]


def test_malformed_yaml_is_one_error_and_the_run_goes_on(project: Path) -> None:
    (project / "conf").mkdir()
    (project / "conf" / "broken.yaml").write_text(
        "trainer:\n  devices: 2\n  sync_batchnorm: [true\nmodel: {}\n"
    )
    (project / "conf" / "train.yaml").write_text(
        "model:\n  train_ds:\n    num_workers: 0\n    persistent_workers: true\n"
    )
    (project / "conf" / "ci.yml").write_text("on: push\njobs: {t: {persistent_workers: 1}}\n")
    code, out, err = run(["check", "--no-cache"])
    assert code == 2
    assert "pkg/net.py:7:9: DDP101" in out
    assert "conf/train.yaml:4:5: DDP601 [*] `model.train_ds.persistent_workers` is true" in out
    errors = [line for line in err.splitlines() if "error:" in line]
    assert errors == [
        "conf/broken.yaml:3:19: error: cannot load YAML: a `[` list not closed with `]` "
        "before a `key:`"
    ]


def test_example_project_code_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fine-tuning script's hazards, on the torch floor its pyproject declares."""
    monkeypatch.chdir(ROOT)
    code, out, _ = run(
        ["check", "--no-cache", "--output-format", "full", "fixtures/example_project"]
    )
    assert code == 1
    found = {
        (line.split(": ")[0], line.split()[1])
        for line in out.splitlines()
        if line.startswith("fixtures/example_project/scripts/pretrain.py")
    }
    script = "fixtures/example_project/scripts/pretrain.py"
    assert found == {(f"{script}:43:22", "DDP301")}
    assert "admits torch 2.1 (pyproject.toml [project.dependencies]: `torch>=2.1`)" in out
    assert "clean_" not in out
    # DDP401 and DDP404 are preview rules (below the blind bar): reported when selected.
    code, out, _ = run(["check", "--no-cache", "--select", "DDP401,DDP404", script])
    assert code == 1 and f"{script}:39:16: DDP401" in out and f"{script}:25:65: DDP404" in out


def test_force_exclude_applies_excludes_to_named_files(tmp_path: Path) -> None:
    """Files named one by one are linted even in excluded folders, unless --force-exclude
    (or `force-exclude = true`) is given, as pre-commit's hook does."""
    (tmp_path / "pyproject.toml").write_text('[tool.ddplint]\nextend-exclude = ["third_party"]\n')
    (tmp_path / "third_party").mkdir()
    (tmp_path / "third_party" / "vendored.py").write_text(HAZARD)
    named = str(tmp_path / "third_party" / "vendored.py")
    assert run(["check", "--no-cache", named])[0] == 1
    assert run(["check", "--no-cache", "--force-exclude", named])[0] == 0
    (tmp_path / "pyproject.toml").write_text(
        '[tool.ddplint]\nextend-exclude = ["third_party"]\nforce-exclude = true\n'
    )
    assert run(["check", "--no-cache", named])[0] == 0


def test_a_folder_named_on_its_own_is_linted_where_excluded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As in ruff, the excludes apply below a named folder, never to the folder itself
    (nor to its parents): `check .` skips `fixtures/`, `check fixtures/rules` lints it,
    and an excluded folder inside it stays excluded; --force-exclude skips it all."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.ddplint]\nextend-exclude = ["fixtures"]\n')
    rules = tmp_path / "fixtures" / "rules"
    (rules / "fixtures").mkdir(parents=True)
    (rules / "net.py").write_text(HAZARD)
    (rules / "fixtures" / "inner.py").write_text(HAZARD)
    assert run(["check", "--no-cache", "."])[0] == 0
    code, out, _ = run(["check", "--no-cache", "fixtures/rules"])
    assert code == 1 and "fixtures/rules/net.py:7:9: DDP101" in out
    assert "inner.py" not in out
    assert run(["check", "--no-cache", "--force-exclude", "fixtures/rules"])[0] == 0


@pytest.mark.parametrize("folder", [".ipynb_checkpoints", "_build", "buck-out", ".vscode"])
def test_ruffs_default_excludes_are_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, folder: str
) -> None:
    """Jupyter's autosaved copy of a script is not the code that runs: reporting it again
    doubled every finding of the original. ruff's other default excludes go the same way;
    the same file under another folder name is linted."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train").mkdir()
    (tmp_path / "train" / "net.py").write_text(HAZARD)
    (tmp_path / "train" / folder).mkdir()
    (tmp_path / "train" / folder / "net-checkpoint.py").write_text(HAZARD)
    (tmp_path / "train" / "checkpoints").mkdir()
    (tmp_path / "train" / "checkpoints" / "net.py").write_text(HAZARD)
    code, out, _ = run(["check", "--no-cache", "."])
    assert code == 1 and "train/net.py:7:9: DDP101" in out
    assert "train/checkpoints/net.py:7:9: DDP101" in out
    assert folder not in out


def test_malformed_pyproject_found_by_discovery_is_reported_like_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 13: a pyproject.toml that is not TOML is never skipped for the defaults (its
    ignores would vanish): found by discovery it is the same error as with --config, with
    the file and the parser's line and column, and exit 2."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.ddplint]\nignore = ["DDP101"]\nfoo = = 1\n')
    (tmp_path / "net.py").write_text(HAZARD)
    for args in (["net.py"], ["--config", "pyproject.toml", "net.py"], []):
        code, out, err = run(["check", "--no-cache", *args])
        assert code == 2 and out == "", (args, out, err)
        assert "pyproject.toml is not valid TOML" in err
        assert "(at line 3, column 7)" in err


@pytest.mark.parametrize(
    ("selector", "hint"),
    [
        ("DDP2011", "(did you mean DDP201?)"),
        ("dpp201", "(did you mean DDP201?)"),
        ("collective-on-some-ranks", "(that is the name of DDP201; rules are selected by code)"),
        ("colective-on-some-rank", "(did you mean DDP201?)"),
    ],
)
def test_unknown_selector_suggests_the_closest_code(
    project: Path, selector: str, hint: str
) -> None:
    code, out, err = run(["check", "--no-cache", "--select", selector, "pkg"])
    assert code == 2 and out == ""
    assert f"unknown rule selector `{selector.upper()}` in select {hint}; valid codes:" in err


def test_unknown_selector_far_from_every_code_gets_no_guess(project: Path) -> None:
    code, _, err = run(["check", "--no-cache", "--ignore", "XYZ", "pkg"])
    assert code == 2 and "unknown rule selector `XYZ` in ignore; valid codes:" in err


def test_explain_suggests_the_closest_code() -> None:
    code, _, err = run(["explain", "DDP2O1"])
    assert code == 2 and "unknown rule `DDP2O1` (did you mean DDP201?)" in err
