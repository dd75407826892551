"""Discovery's shortcuts answer as the slow forms do: the compiled excludes as
``fnmatch`` pattern by pattern, the ``Resolver`` as ``Path.resolve()``."""

from __future__ import annotations

import fnmatch
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from ddplint.discover import Resolver, discover, display_path, is_excluded
from ddplint.settings import Settings

PATTERNS = (*Settings(project_root=Path(".")).all_excludes, "a/b/*.py", "[xy]*", "?emo", "t*/x")
PATHS = ("build/x.py", "src/pkg/a.py", "a/b/c.py", "a/b/c/d.py", "x/y.py", "demo/z.py", "tt/x")


def excluded_one_by_one(relative: str, patterns: tuple[str, ...], named_depth: int) -> bool:
    parts = relative.split("/")
    for depth in range(named_depth, len(parts)):
        leading = "/".join(parts[: depth + 1])
        for pattern in patterns:
            if fnmatch.fnmatchcase(leading, pattern):
                return True
            if "/" not in pattern and fnmatch.fnmatchcase(parts[depth], pattern):
                return True
    return False


@pytest.mark.parametrize("patterns", [PATTERNS, (), ("*.py",)])
def test_compiled_excludes_match_as_fnmatch_does(patterns: tuple[str, ...]) -> None:
    for relative in PATHS:
        for depth in range(3):
            expected = excluded_one_by_one(relative, patterns, depth)
            assert is_excluded(relative, patterns, depth) == expected, (relative, depth)


def test_the_resolver_answers_as_resolve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "a.py").write_text("")
    (tmp_path / "linked").symlink_to(tmp_path / "real", target_is_directory=True)
    (tmp_path / "real" / "b.py").symlink_to(tmp_path / "real" / "a.py")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    monkeypatch.chdir(tmp_path / "real")
    resolver = Resolver()
    for path in (
        Path("a.py"),
        Path("b.py"),
        tmp_path / "linked" / "a.py",
        tmp_path / "linked" / "b.py",
        Path("../linked/a.py"),
        Path("missing.py"),
        tmp_path / "loop",
        Path("."),
    ):
        expected = os.path.abspath(path) if path.name == "loop" else str(path.resolve())
        assert resolver.file(path) == expected, path
        assert display_path(path, resolver) == display_path(path), path
    assert display_path(tmp_path / "linked" / "a.py") == "a.py"


def _git(tree: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=tree,
        check=True,
        capture_output=True,
    )


def test_a_listing_places_files_as_resolve_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Discovery resolves a listing's folder once and joins names to it: a file link, and
    a folder of git's index since replaced by a link to another folder, are still placed
    below the root where ``resolve()`` places them; each target's stat is the file's."""
    tree = tmp_path / "repo"
    for name in ("pkg/a.py", "pkg/sub/b.py", "old/c.py", "real/c.py", "real/d.py"):
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text("x = 1\n")
    (tree / "pyproject.toml").write_text("[tool.ddplint]\n")
    (tree / "pkg" / "e.py").symlink_to(tree / "real" / "d.py")
    _git(tree, "init", "-q")
    _git(tree, "add", "-A")
    _git(tree, "commit", "-qm", "files")
    shutil.rmtree(tree / "old")
    (tree / "old").symlink_to(tree / "real", target_is_directory=True)  # the index says old/c.py
    monkeypatch.chdir(tree / "pkg")
    settings = Settings(project_root=tree)
    found = discover([str(tree)], settings)
    relatives = {t.relative for t in found.targets}
    assert relatives >= {"pkg/a.py", "pkg/sub/b.py", "real/c.py", "real/d.py"}
    for target in found.targets:
        resolved = Path(target.path).resolve()
        assert target.relative == resolved.relative_to(tree.resolve()).as_posix(), target
        assert target.display == display_path(target.path), target
        assert found.stats[str(target.path)] == os.stat(target.path), target
    assert "old/c.py" not in relatives  # it is real/c.py, reached through the link


def test_without_a_marker_the_project_root_is_the_working_directory_that_holds_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``check .`` and ``check pkg/sub/a.py`` from one folder see one project; a file
    outside the working directory is its own folder's; a marker above wins."""
    from ddplint.settings import find_project_root

    tree = tmp_path / "tree"
    (tree / "pkg" / "sub").mkdir(parents=True)
    (tree / "pkg" / "sub" / "a.py").write_text("x = 1\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "b.py").write_text("y = 2\n")
    monkeypatch.chdir(tree)
    assert find_project_root(Path("pkg/sub/a.py")) == tree.resolve()
    assert find_project_root(Path(".")) == tree.resolve()
    assert find_project_root(elsewhere / "b.py") == elsewhere.resolve()
    (tree / "pkg" / "pyproject.toml").write_text("[project]\nname = 'pkg'\n")
    assert find_project_root(Path("pkg/sub/a.py")) == (tree / "pkg").resolve()
