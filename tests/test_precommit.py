"""The pre-commit hooks with the real ``pre-commit`` tool: a commit of a hazardous file
is blocked with the finding shown, a clean one passes, a commit with no Python or YAML
file skips the hook, and the fix hook rewrites the file.

pre-commit builds the hook environment with pip from PyPI (once per test session); the
tests skip, saying so, only when that fails for lack of network.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import HAZARD, SYNC
from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parent.parent

NETWORK_TROUBLE = (
    "Could not find a version that satisfies",
    "No matching distribution found",
    "Failed to establish a new connection",
    "Temporary failure in name resolution",
    "Network is unreachable",
    "NewConnectionError",
    "ConnectTimeoutError",
    "ProxyError",
)
IDENTITY = {
    "GIT_AUTHOR_NAME": "ddplint tests",
    "GIT_AUTHOR_EMAIL": "tests@example.invalid",
    "GIT_COMMITTER_NAME": "ddplint tests",
    "GIT_COMMITTER_EMAIL": "tests@example.invalid",
    # Fixed dates: the same checkout gives the same commit, whatever the clock says.
    "GIT_AUTHOR_DATE": "2024-01-01T00:00:00+0000",
    "GIT_COMMITTER_DATE": "2024-01-01T00:00:00+0000",
}


def _run(
    args: list[str], cwd: Path, env: dict[str, str], timeout: int = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def _git(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return _run(["git", *args], cwd, env)


@pytest.fixture(scope="module")
def environment(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    home = tmp_path_factory.mktemp("pre-commit-home")
    return {
        **os.environ,
        **IDENTITY,
        "PRE_COMMIT_HOME": str(home),
        "PRE_COMMIT_COLOR": "never",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }


#: Never part of the copy when the checkout is not a git repository.
NOT_SOURCE = {
    ".git",
    ".venv",
    "venv",
    "__pycache__",
    ".ddplint_cache",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    "build",
    "dist",
}


def _checkout_files() -> list[Path]:
    """This checkout's files: git's view (tracked + untracked, not ignored) when it is a
    git repository, else every file outside build and cache folders."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=False,
    )
    if listed.returncode == 0:
        return [ROOT / name for name in listed.stdout.decode().split("\0") if name]
    return [
        path
        for path in ROOT.rglob("*")
        if not NOT_SOURCE.intersection(path.relative_to(ROOT).parts)
        and not any(part.endswith(".egg-info") for part in path.parts)
    ]


@pytest.fixture(scope="module")
def hook_source(tmp_path_factory: pytest.TempPathFactory, environment: dict[str, str]) -> str:
    """A git copy of this checkout, uncommitted changes included, as one commit."""
    source = tmp_path_factory.mktemp("ddplint-src")
    for origin in _checkout_files():
        if origin.is_file():
            target = source / origin.relative_to(ROOT)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(origin, target)
    for args in (("init", "-q"), ("add", "-A"), ("commit", "-q", "-m", "ddplint under test")):
        assert _git(source, environment, *args).returncode == 0
    return str(source)


def _pre_commit(*args: str) -> list[str]:
    return [sys.executable, "-m", "pre_commit", *args]


def test_manifest_is_valid_and_lints_python_yaml_and_json() -> None:
    checked = _run(_pre_commit("validate-manifest", ".pre-commit-hooks.yaml"), ROOT, {**os.environ})
    assert checked.returncode == 0, checked.stdout + checked.stderr
    hooks = {h["id"]: h for h in YAML(typ="safe").load(ROOT / ".pre-commit-hooks.yaml")}
    assert set(hooks) == {"ddplint", "ddplint-fix"}
    for hook in hooks.values():
        assert hook["language"] == "python" and hook["types_or"] == ["python", "yaml", "json"]
    assert hooks["ddplint"]["entry"] == "ddplint check --force-exclude"
    assert hooks["ddplint-fix"]["entry"] == "ddplint check --fix --force-exclude"
    assert all(hook["args"] == ["--"] for hook in hooks.values())
    # One process for all staged files: one summary, the project read once (as ruff's).
    assert all(hook["require_serial"] is True for hook in hooks.values())


def _user_repo(
    path: Path,
    source: str,
    environment: dict[str, str],
    hook: str,
    args: str = "",
    config: str | None = None,
) -> Path:
    """A git repository with pre-commit installed, its config committed: ``config`` when
    given, else ``hook`` from ``source`` at its HEAD (a full SHA as ``rev``); its
    pyproject.toml selects DDP101."""
    rev = _git(Path(source), environment, "rev-parse", "HEAD").stdout.strip()
    hook_args = f"\n    args: [{args}]" if args else ""
    path.mkdir()
    assert _git(path, environment, "init", "-q").returncode == 0
    (path / ".pre-commit-config.yaml").write_text(
        config or f"repos:\n- repo: {source}\n  rev: {rev}\n  hooks:\n  - id: {hook}{hook_args}\n"
    )
    # DDP101, the sample hazard, is opt-in since issue 23: the user's project selects it.
    (path / "pyproject.toml").write_text('[tool.ddplint]\nextend-select = ["DDP101"]\n')
    installed = _run(_pre_commit("install"), path, environment)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    _git(path, environment, "add", ".pre-commit-config.yaml", "pyproject.toml")
    _git(path, environment, "commit", "-q", "--no-verify", "-m", "pre-commit config")
    return path


@pytest.fixture(scope="module")
def hooks_built(
    tmp_path_factory: pytest.TempPathFactory, hook_source: str, environment: dict[str, str]
) -> Path:
    """Build the hook environment once; skip when pip cannot reach PyPI."""
    repo = _user_repo(
        tmp_path_factory.mktemp("warmup") / "repo", hook_source, environment, "ddplint"
    )
    built = _run(_pre_commit("install-hooks"), repo, environment, timeout=540)
    output = built.stdout + built.stderr
    if built.returncode != 0 and any(sign in output for sign in NETWORK_TROUBLE):
        pytest.skip(
            f"pre-commit cannot build the hook environment without network: {output[-400:]}"
        )
    assert built.returncode == 0, output
    return Path(environment["PRE_COMMIT_HOME"])


@pytest.fixture
def repo_for(
    tmp_path: Path, hook_source: str, environment: dict[str, str], hooks_built: Path
) -> Iterator[object]:
    def make(hook: str, args: str = "", config: str | None = None) -> Path:
        return _user_repo(tmp_path / hook, hook_source, environment, hook, args, config)

    yield make


def _commit(
    repo: Path, environment: dict[str, str], *files: str
) -> subprocess.CompletedProcess[str]:
    _git(repo, environment, "add", *files)
    return _git(repo, environment, "commit", "-m", "change")


def _commits(repo: Path, environment: dict[str, str]) -> int:
    return int(_git(repo, environment, "rev-list", "--count", "HEAD").stdout.strip())


@pytest.mark.slow
def test_hazardous_file_blocks_the_commit(repo_for, environment: dict[str, str]) -> None:  # type: ignore[no-untyped-def]
    repo = repo_for("ddplint")
    (repo / "net.py").write_text(HAZARD)
    committed = _commit(repo, environment, "net.py")
    output = committed.stdout + committed.stderr
    assert committed.returncode != 0, output
    assert "net.py:7:9: DDP101 warning: `torch.cuda.synchronize()` blocks the host" in output
    assert _commits(repo, environment) == 1, "only the config commit"


@pytest.mark.slow
def test_clean_file_and_no_matching_file_pass(repo_for, environment: dict[str, str]) -> None:  # type: ignore[no-untyped-def]
    repo = repo_for("ddplint")
    (repo / "README.md").write_text("torch.cuda.synchronize() in prose is fine\n")
    committed = _commit(repo, environment, "README.md")
    output = committed.stdout + committed.stderr
    assert committed.returncode == 0, output
    assert "(no files to check)" in output and "Skipped" in output
    (repo / "clean.py").write_text("import torch\n\nx = torch.ones(1)\n")
    (repo / "train.yaml").write_text("trainer:\n  devices: 2\n")
    committed = _commit(repo, environment, "clean.py", "train.yaml")
    output = committed.stdout + committed.stderr
    assert committed.returncode == 0, output
    assert "ddplint" in output and "Passed" in output
    assert _commits(repo, environment) == 3


@pytest.mark.slow
def test_fix_hook_rewrites_the_file(repo_for, environment: dict[str, str]) -> None:  # type: ignore[no-untyped-def]
    repo = repo_for("ddplint-fix", "--unsafe-fixes")
    (repo / "net.py").write_text(HAZARD)
    committed = _commit(repo, environment, "net.py")
    output = committed.stdout + committed.stderr
    assert committed.returncode != 0, output
    assert "files were modified by this hook" in output
    assert (repo / "net.py").read_text() == HAZARD.replace(SYNC, "")
    committed = _commit(repo, environment, "net.py")
    assert committed.returncode == 0, committed.stdout + committed.stderr


@pytest.mark.slow
def test_hook_environment_has_no_torch(hooks_built: Path) -> None:
    site_packages = [p for p in hooks_built.glob("repo*/py_env-*/lib/python*/site-packages")]
    assert site_packages, f"no hook environment under {hooks_built}"
    for folder in site_packages:
        assert (folder / "libcst").is_dir() and (folder / "ddplint").is_dir()
        assert not (folder / "torch").exists()


@pytest.mark.slow
def test_hook_honours_excludes_and_option_like_names(  # type: ignore[no-untyped-def]
    repo_for, environment: dict[str, str]
) -> None:
    """L9: staged files in excluded folders are not linted by the hook (force-exclude),
    and a staged file named like an option stays a file (the hook's `--`)."""
    repo = repo_for("ddplint")
    (repo / "pyproject.toml").write_text('[tool.ddplint]\nextend-exclude = ["third_party"]\n')
    for folder in ("third_party", "build"):
        (repo / folder).mkdir()
        (repo / folder / "vendored.py").write_text(HAZARD)
    (repo / "victim.py").write_text("x = 1\n")
    (repo / "--output-file=victim.py").write_text("y = 2\n")
    committed = _commit(
        repo,
        environment,
        "pyproject.toml",
        "third_party/vendored.py",
        "build/vendored.py",
        "victim.py",
        "--",
        "--output-file=victim.py",
    )
    output = committed.stdout + committed.stderr
    assert committed.returncode == 0, output
    assert "DDP101" not in output
    assert (repo / "victim.py").read_text() == "x = 1\n"


def _readme_configs() -> dict[str, str]:
    """The `.pre-commit-config.yaml` examples of the README's pre-commit section, by
    kind: ``local`` (repo: local) and ``remote`` (a path or URL with a rev)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## pre-commit\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```yaml\n(# \.pre-commit-config\.yaml\n.*?)```", section, re.DOTALL)
    found = {("local" if "repo: local" in block else "remote"): block for block in blocks}
    assert set(found) == {"local", "remote"}, blocks
    return found


@pytest.mark.slow
def test_readme_example_with_a_path_and_a_full_sha_works(  # type: ignore[no-untyped-def]
    repo_for, hook_source: str, environment: dict[str, str]
) -> None:
    rev = _git(Path(hook_source), environment, "rev-parse", "HEAD").stdout.strip()
    config = _readme_configs()["remote"]
    assert "repo: /path/to/ddplint" in config and "rev: <full commit SHA>" in config
    config = config.replace("/path/to/ddplint", hook_source).replace("<full commit SHA>", rev)
    repo = repo_for("ddplint", config=config)
    (repo / "net.py").write_text(HAZARD)
    committed = _commit(repo, environment, "net.py")
    output = committed.stdout + committed.stderr
    assert committed.returncode != 0, output
    assert "net.py:7:9: DDP101" in output


@pytest.mark.slow
def test_readme_example_with_repo_local_uses_the_installed_ddplint(
    tmp_path: Path, hook_source: str, environment: dict[str, str]
) -> None:
    """`repo: local` with `language: system`: the ddplint on PATH (the activated venv's),
    no hook environment built, so no network needed."""
    active = {
        **environment,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    repo = _user_repo(
        tmp_path / "local", hook_source, active, "ddplint", config=_readme_configs()["local"]
    )
    (repo / "net.py").write_text(HAZARD)
    committed = _commit(repo, active, "net.py")
    output = committed.stdout + committed.stderr
    assert committed.returncode != 0, output
    assert "net.py:7:9: DDP101" in output
    (repo / "net.py").write_text(HAZARD.replace(SYNC, ""))
    committed = _commit(repo, active, "net.py")
    assert committed.returncode == 0, committed.stdout + committed.stderr


@pytest.mark.slow
def test_many_staged_files_give_one_report(  # type: ignore[no-untyped-def]
    repo_for, environment: dict[str, str]
) -> None:
    """require_serial: pre-commit would otherwise split the files over one process per
    CPU, each printing a summary of its own."""
    repo = repo_for("ddplint")
    names = [f"net{i}.py" for i in range(6)]
    for name in names:
        (repo / name).write_text(HAZARD)
    _git(repo, environment, "add", *names)
    ran = _run(_pre_commit("run", "--all-files"), repo, environment)
    output = ran.stdout + ran.stderr
    assert ran.returncode != 0, output
    assert output.count("DDP101") == len(names), output
    assert len([line for line in output.splitlines() if line.startswith("Found ")]) == 1, output


MODEL_LOGGING_VAL_LOSS = """\
import lightning.pytorch as pl
import torch


class Net(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)

    def validation_step(self, batch, batch_idx):
        loss = self.layer(batch).mean()
        self.log("val_loss", loss, sync_dist=True)
        return loss
"""
NEMO_CONFIG = """\
trainer:
  devices: 4
  num_nodes: 1
  strategy: ddp
exp_manager:
  checkpoint_callback_params:
    monitor: val_loss
    filename: '{epoch}-{val_loss:.3f}'
"""


def _check_in(folder: Path, *args: str) -> tuple[int, str]:
    """``ddplint check ARGS`` run in ``folder`` (a process of its own, as a user runs it)."""
    done = _run(
        [sys.executable, "-m", "ddplint", "check", "--no-cache", *args], folder, {**os.environ}
    )
    return done.returncode, done.stdout + done.stderr


@pytest.mark.slow
def test_a_yaml_linted_alone_agrees_with_the_whole_project(  # type: ignore[no-untyped-def]
    repo_for, environment: dict[str, str]
) -> None:
    """DDP605 (issue 13): the model logs `val_loss` with `sync_dist=True`, the NeMo
    config names checkpoints after it. `check .`, `check configs/train.yaml` and the
    hook on a commit touching only the YAML all agree: clean. Without `sync_dist`, all
    three report it (so the agreement is not three silent runs)."""
    repo = repo_for("ddplint")
    (repo / "src").mkdir()
    (repo / "configs").mkdir()
    (repo / "src" / "model.py").write_text(MODEL_LOGGING_VAL_LOSS)
    (repo / "configs" / "train.yaml").write_text(NEMO_CONFIG)
    committed = _commit(repo, environment, "src/model.py", "configs/train.yaml")
    assert committed.returncode == 0, committed.stdout + committed.stderr

    assert _check_in(repo, ".") == (0, "All checks passed.\n")
    assert _check_in(repo, "configs/train.yaml") == (0, "All checks passed.\n")
    (repo / "configs" / "train.yaml").write_text(NEMO_CONFIG.replace("3f", "4f"))
    committed = _commit(repo, environment, "configs/train.yaml")
    output = committed.stdout + committed.stderr
    assert committed.returncode == 0 and "DDP605" not in output, output

    (repo / "src" / "model.py").write_text(MODEL_LOGGING_VAL_LOSS.replace(", sync_dist=True", ""))
    _git(repo, environment, "commit", "-q", "--no-verify", "-am", "drop sync_dist")
    for args in ((".",), ("configs/train.yaml",)):
        code, output = _check_in(repo, "--select", "DDP605", "--output-format", "full", *args)
        assert code == 1 and "(src/model.py:12)" in output, output  # the message names it
    (repo / "configs" / "train.yaml").write_text(NEMO_CONFIG)
    committed = _commit(repo, environment, "configs/train.yaml")
    output = committed.stdout + committed.stderr
    assert committed.returncode != 0 and "DDP605" in output, output
