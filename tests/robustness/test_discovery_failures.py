"""Discovery when git or the file system fails (L8, M9): a damaged ``.git`` or a checkout
git refuses ("dubious ownership") gives a notice and a walk that still honours
``.gitignore`` (the same files git would list); a FIFO as git's global excludes file
does not stall the run; an unreadable folder is reported, never a traceback and never
silently skipped."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from ddplint.discover import discover
from ddplint.settings import load_settings

from .support import HAZARD, deadline, run_cli

GIT = shutil.which("git")
pytestmark = pytest.mark.skipif(GIT is None, reason="needs git")

#: Ignore files and the files they must hide (or not), as git reads them.
IGNORE_FILES = {
    ".gitignore": "*.gen.py\n!keep.gen.py\nout/\n/top_only.py\ndocs/**/skip.py\n"
    "[ab]_x.py\n\\#hash.py\ntrailing.py   \n# a comment\n**/deep/*.py\n",
    "pkg/.gitignore": "local.py\n/anchored.py\n",
    "pkg/inner/.gitignore": "!local.py\n",
}
FILES = (
    "main.py",
    "a.gen.py",
    "keep.gen.py",
    "out/x.py",
    "pkg/out/y.py",
    "top_only.py",
    "pkg/top_only.py",
    "docs/skip.py",
    "docs/a/b/skip.py",
    "a_x.py",
    "c_x.py",
    "#hash.py",
    "trailing.py",
    "pkg/local.py",
    "pkg/anchored.py",
    "pkg/sub/anchored.py",
    "pkg/inner/local.py",
    "x/deep/z.py",
    "deep/w.py",
    "conf/train.yaml",
)


def _git(folder: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=folder, capture_output=True, text=True, check=True, timeout=60
    )
    return done.stdout


def _repository(root: Path) -> Path:
    repo = root / "repo"
    repo.mkdir()
    (repo / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    for name, text in IGNORE_FILES.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    for name in FILES:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(HAZARD)
    _git(repo, "init", "-q")
    return repo


def _linted(folder: Path, scanned: str = ".") -> tuple[list[str], list[str]]:
    settings = load_settings(None, folder)
    found = discover([str(folder / scanned)], settings)
    return sorted(t.relative for t in found.targets), found.notices


@pytest.mark.parametrize("damage", ["index", "head", "gitdir-file"])
def test_damaged_git_walks_with_a_notice_and_the_same_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    repo = _repository(tmp_path)
    _git(repo, "add", "main.py")
    _git(repo, "-c", "user.email=a@b", "-c", "user.name=n", "commit", "-qm", "init")
    monkeypatch.chdir(repo)
    with_git, notices = _linted(repo)
    assert not notices
    assert "a.gen.py" not in with_git and "main.py" in with_git  # git did apply them
    if damage == "index":
        (repo / ".git" / "index").write_bytes(os.urandom(100))
    elif damage == "head":
        (repo / ".git" / "HEAD").write_text("garbage\n")
    else:
        shutil.rmtree(repo / ".git")
        (repo / ".git").write_text("gitdir: /nonexistent/elsewhere\n")
    walked, notices = _linted(repo)
    assert walked == with_git
    assert len(notices) == 1 and "git ls-files failed" in notices[0]
    assert ".gitignore applied" in notices[0]


def test_walk_of_a_sub_folder_applies_the_ignore_files_above_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repository(tmp_path)
    monkeypatch.chdir(repo)
    with_git, _ = _linted(repo, "pkg")
    (repo / ".git" / "HEAD").write_text("garbage\n")
    walked, notices = _linted(repo, "pkg")
    assert walked == with_git and notices


def test_dubious_ownership_is_said_and_gitignore_still_applies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if os.geteuid() != 0:
        pytest.skip("changing the owner of a checkout needs root")
    repo = _repository(tmp_path)
    monkeypatch.chdir(repo)
    with_git, _ = _linted(repo)
    for folder, dirs, files in os.walk(repo):
        for name in [*dirs, *files, "."]:
            os.lchown(os.path.join(folder, name), 65534, 65534)
    walked, notices = _linted(repo)
    assert walked == with_git
    assert len(notices) == 1 and "dubious ownership" in notices[0]


def test_no_repository_means_a_plain_walk_without_notice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".gitignore").write_text("*.py\n")  # not a repository: not git's business
    (tmp_path / "net.py").write_text(HAZARD)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    linted, notices = _linted(tmp_path)
    assert linted == ["net.py"] and notices == []


def test_excludes_file_fifo_does_not_stall(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _repository(tmp_path)
    fifo = tmp_path / "excludes.fifo"
    os.mkfifo(fifo)
    _git(repo, "config", "core.excludesFile", str(fifo))
    monkeypatch.chdir(repo)
    with deadline():
        linted, notices = _linted(repo)
    assert "main.py" in linted and "a.gen.py" not in linted  # git listed them
    assert notices == [f"git: the global excludes file {fifo} is not a regular file: not read"]


def _git_python_files(folder: Path) -> list[str]:
    """What git itself lists below ``folder`` (tracked and untracked-not-ignored), the
    Python and YAML files of it."""
    listed = _git(folder, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    return sorted(n for n in listed.split("\0") if n.endswith((".py", ".yaml")))


def test_a_linked_worktree_and_a_submodule_list_what_git_lists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A linked worktree (``.git`` is a file naming the main repository's folder) and a
    repository holding a submodule: the files found are git's own listing (the
    submodule's files are its own repository's, not listed), untracked files too."""
    repo = _repository(tmp_path)
    for identity in (("user.name", "t"), ("user.email", "t@example.com")):
        _git(repo, "config", *identity)
    other = tmp_path / "other"
    other.mkdir()
    (other / "inside.py").write_text(HAZARD)
    _git(other, "init", "-q")
    _git(other, "add", ".")
    _git(other, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "x")
    _git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(other), "sub")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "tree")
    (repo / "untracked.py").write_text(HAZARD)
    linked = tmp_path / "linked"
    _git(repo, "worktree", "add", "-q", str(linked))
    (linked / "only_here.py").write_text(HAZARD)
    assert (linked / ".git").is_file()
    for folder in (repo, linked):
        monkeypatch.chdir(folder)
        linted, notices = _linted(folder)
        assert notices == []
        assert linted == _git_python_files(folder)
        assert not any(name.startswith("sub/") for name in linted)
    assert "untracked.py" in _linted(repo)[0] and "only_here.py" in _linted(linked)[0]


def test_file_in_an_unreadable_folder_is_one_error(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = project / "secret"
    secret.mkdir()
    (secret / "b.py").write_text(HAZARD)
    (project / "a.py").write_text(HAZARD)
    real_stat = os.stat

    def stat(path: object, *args: object, **kwargs: object) -> os.stat_result:
        if str(path).startswith(str(secret) + "/") or str(path).startswith("secret/"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_stat(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "stat", stat)
    run = run_cli("check", "--no-cache", "secret/b.py", "a.py")
    assert run.code == 2
    assert "secret/b.py: error: cannot read: Permission denied" in run.err
    assert "a.py:7:9: DDP101" in run.out  # the rest of the run goes on


def test_unreadable_sub_folder_in_a_walk_is_a_notice(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "secret").mkdir()
    (project / "open").mkdir()
    (project / "open" / "a.py").write_text(HAZARD)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(project.parent))
    real_scandir = os.scandir

    def scandir(path: object = ".") -> object:
        if str(path).rstrip("/").endswith("secret"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)  # type: ignore[call-overload]

    monkeypatch.setattr(os, "scandir", scandir)
    run = run_cli("check", "--no-cache", ".")
    assert run.code == 1 and "open/a.py:7:9: DDP101" in run.out
    assert "ddplint: notice: secret: cannot read folder (Permission denied): not linted" in run.err


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a mode-000 folder")
@pytest.mark.parametrize("with_git", [False, True])
def test_mode_000_folder_is_reported(project: Path, with_git: bool) -> None:
    (project / "secret").mkdir()
    (project / "secret" / "b.py").write_text(HAZARD)
    (project / "a.py").write_text(HAZARD)
    if with_git:
        _git(project, "init", "-q")
    (project / "secret").chmod(0)
    try:
        run = run_cli("check", "--no-cache", ".")
        named = run_cli("check", "--no-cache", "secret/b.py")
    finally:
        (project / "secret").chmod(0o755)
    assert run.code == 1 and "secret" in run.err and "notice" in run.err
    assert named.code == 2 and "Permission denied" in named.err
