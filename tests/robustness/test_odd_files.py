"""Odd files on disk: line ends, encodings, binary and undecodable content, size limits,
FIFOs, directories and symlink loops where files are expected, files that vanish or
become unreadable mid-run. Each yields findings at the right place or one clear error or
notice; the rest of the run goes on."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from ddplint.discover import discover
from ddplint.engine import lint_targets
from ddplint.invocation import build_options
from ddplint.settings import DEFAULT_MAX_FILE_SIZE, load_settings

from .support import HAZARD, deadline, run_cli

CALL = "torch.cuda.synchronize()"
#: HAZARD with non-ASCII text before the call on its line (line 7).
PREFIXED = HAZARD.replace(f"        {CALL}", f"        y = 'é✓'; {CALL}")


def _editor_position(text: str, needle: str) -> tuple[int, int, int, int]:
    """(line, column, end_line, end_column) as an editor shows it: lines end at \\n,
    \\r\\n or a lone \\r; columns count characters from 1."""
    rows = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    for number, row in enumerate(rows, start=1):
        if needle in row:
            column = row.index(needle) + 1
            return number, column, number, column + len(needle)
    raise AssertionError(f"{needle!r} not in the text")


def _finding_span(run_json: dict[str, object], path: str) -> tuple[int, int, int, int]:
    findings = [f for f in run_json["findings"] if f["path"] == path]  # type: ignore[attr-defined]
    (finding,) = findings
    return finding["line"], finding["column"], finding["end_line"], finding["end_column"]


@pytest.mark.parametrize(
    "newlines",
    [["\n"], ["\r\n"], ["\r"], ["\r\n", "\n", "\r"]],
    ids=["lf", "crlf", "lone-cr", "mixed"],
)
def test_positions_match_the_editor_on_any_line_ends(project: Path, newlines: list[str]) -> None:
    rows = PREFIXED.split("\n")
    text = "".join(row + newlines[i % len(newlines)] for i, row in enumerate(rows[:-1]))
    (project / "net.py").write_bytes(text.encode())
    run = run_cli("check", "--no-cache", "--format", "json")
    assert run.code == 1
    assert _finding_span(run.json(), "net.py") == _editor_position(text, CALL) == (7, 19, 7, 43)
    full = run_cli("check", "--no-cache", "--format", "full").out
    assert f"  > 7 |         y = 'é✓'; {CALL}\n" in full
    assert "\n      |" + " " * 19 + "^" * len(CALL) + "\n" in full


@pytest.mark.parametrize(
    ("encoding", "cookie", "sample"),
    [
        ("latin-1", "# -*- coding: latin-1 -*-\n", "éàü"),
        ("gbk", "# coding: gbk\n", "中文字"),
        ("cp1252", "# vim: set fileencoding=cp1252 :\n", "€\u2018\u2019"),
        ("utf-8-sig", "", "é✓"),
        ("utf-8-sig", "# coding: utf-8\n", "é✓"),
    ],
    ids=["latin-1", "gbk", "cp1252", "bom", "bom+cookie"],
)
def test_declared_encodings_decode_and_columns_count_characters(
    project: Path, encoding: str, cookie: str, sample: str
) -> None:
    text = cookie + HAZARD.replace(f"        {CALL}", f"        y = '{sample}'; {CALL}")
    raw = text.encode(encoding)
    (project / "net.py").write_bytes(raw)
    run = run_cli("check", "--no-cache", "--format", "json")
    assert run.code == 1 and run.json()["errors"] == []
    line, column, _, end_column = _finding_span(run.json(), "net.py")
    assert (line, column) == _editor_position(text, CALL)[:2]
    assert end_column - column == len(CALL)


@pytest.mark.parametrize(
    ("content", "error"),
    [
        (
            b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR synchronize",
            "binary.py:3:1: error: file contains NUL bytes (binary content?)",
        ),
        (
            HAZARD.encode() + b"name = 'caf\xe9'  # latin-1, undeclared\n",
            "binary.py:9:12: error: cannot decode as utf-8: invalid continuation byte (byte e9)",
        ),
        (
            b"# coding: gbk\n" + HAZARD.encode() + b"x = '\x80'\n",
            "binary.py:10:6: error: cannot decode as gbk: illegal multibyte sequence (byte 80)",
        ),
        (
            b"# coding: klingon\n" + HAZARD.encode(),
            "binary.py: error: bad encoding declaration: unknown encoding: klingon",
        ),
        (
            HAZARD.encode()[: HAZARD.index("synchronize(") + len("synchronize(")],
            "binary.py:7:31: error: cannot parse: '(' was never closed",
        ),
    ],
    ids=["nul", "invalid-utf-8", "invalid-gbk", "unknown-cookie", "half-written"],
)
def test_undecodable_file_is_one_error_and_the_run_goes_on(
    project: Path, content: bytes, error: str
) -> None:
    (project / "binary.py").write_bytes(content)
    (project / "net.py").write_text(HAZARD)
    run = run_cli("check", "--no-cache")
    assert run.code == 2
    assert run.out.startswith("net.py:7:9: DDP101")
    (reported,) = [line for line in run.err.splitlines() if "binary.py" in line]
    assert reported.startswith(error)
    assert "Traceback" not in run.err


def test_file_above_the_default_size_limit_is_skipped_with_a_notice(project: Path) -> None:
    padding = "# generated\n" * (DEFAULT_MAX_FILE_SIZE // 12)
    (project / "big.py").write_text(HAZARD + padding)
    (project / "net.py").write_text(HAZARD)
    size = (project / "big.py").stat().st_size
    assert size > DEFAULT_MAX_FILE_SIZE
    run = run_cli("check", "--no-cache")
    assert run.code == 1 and run.out.startswith("net.py:7:9: DDP101")
    assert "big.py" not in run.out
    notice = f"ddplint: notice: big.py: skipped: {size} bytes is above max-file-size (2097152)"
    assert notice in run.err.splitlines()
    assert "notice" not in run_cli("check", "--no-cache", "--quiet").err


def test_size_limit_is_configurable_and_huge_files_are_not_read(project: Path) -> None:
    (project / "pyproject.toml").write_text("[tool.ddplint]\nmax-file-size = 300\n")
    (project / "small.py").write_text(HAZARD)
    (project / "padded.py").write_text(HAZARD + "#" * 300 + "\n")
    padded = (project / "padded.py").stat().st_size
    with open(project / "sparse.py", "wb") as handle:  # 8 GiB of holes: too big to read
        handle.truncate(8 * 1024**3)
    with deadline():
        run = run_cli("check", "--no-cache")
    assert run.code == 1 and run.out.startswith("small.py:7:9: DDP101")
    assert f"padded.py: skipped: {padded} bytes is above max-file-size (300)" in run.err
    assert f"sparse.py: skipped: {8 * 1024**3} bytes is above max-file-size (300)" in run.err


@pytest.mark.parametrize("with_git", [False, True], ids=["walk", "git"])
def test_fifo_directory_and_symlink_loops_in_a_tree(project: Path, with_git: bool) -> None:
    (project / "net.py").write_text(HAZARD)
    (project / "alias.py").symlink_to("net.py")
    (project / "loop_a.py").symlink_to("loop_b.py")
    (project / "loop_b.py").symlink_to("loop_a.py")
    (project / "sub").mkdir()
    (project / "sub" / "up").symlink_to("..")
    (project / "sub" / "here").symlink_to(".")
    os.mkfifo(project / "pipe.py")
    (project / "folder.py").mkdir()
    (project / "folder.py" / "inner.py").write_text(HAZARD)
    if with_git:
        subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    with deadline():
        run = run_cli("check", "--no-cache", "--format", "json")
    assert run.code == 1, run.err
    assert run.json()["errors"] == []
    # The link and its target are one file, linted once; the loops end the walk.
    found = run.findings_by_path()
    assert sorted(found) in (["alias.py", "folder.py/inner.py"], ["folder.py/inner.py", "net.py"])


def test_odd_paths_named_on_the_command_line(project: Path) -> None:
    (project / "net.py").write_text(HAZARD)
    (project / "loop.py").symlink_to("loop.py")
    (project / "dangling.py").symlink_to("gone.py")
    os.mkfifo(project / "pipe.py")
    (project / "folder.py").mkdir()
    (project / "folder.py" / "inner.py").write_text(HAZARD)
    with deadline():
        run = run_cli(
            "check", "--no-cache", "--format", "json",
            "net.py", "pipe.py", "loop.py", "dangling.py", "nope.py", "folder.py",
        )  # fmt: skip
    assert run.code == 2
    assert run.findings_by_path() == {"net.py": [(7, 9)], "folder.py/inner.py": [(7, 9)]}
    errors = run.errors_by_path()
    assert errors["pipe.py"] == ["cannot read: not a regular file (a FIFO)"]
    assert errors["loop.py"] == ["cannot read: Too many levels of symbolic links"]
    assert errors["dangling.py"] == ["cannot read: dangling symbolic link to gone.py"]
    assert errors["nope.py"] == ["no such file or directory"]


def _discovered(project: Path) -> tuple[list, object, object]:  # type: ignore[type-arg]
    settings = load_settings(None, project)
    settings = replace(settings, extend_select=(*settings.extend_select, "DDP101"))  # opt-in
    return discover(["."], settings).targets, settings, build_options(settings)


def test_files_that_change_between_discovery_and_read(project: Path) -> None:
    """Deleted, replaced by a FIFO or a folder, or under a folder that became a file:
    each is one error when its turn comes, and nothing blocks."""
    for name in ("kept", "deleted", "fifo", "folder"):
        (project / f"{name}.py").write_text(HAZARD)
    (project / "pkg").mkdir()
    (project / "pkg" / "mod.py").write_text(HAZARD)
    targets, settings, options = _discovered(project)
    (project / "deleted.py").unlink()
    (project / "fifo.py").unlink()
    os.mkfifo(project / "fifo.py")
    (project / "folder.py").unlink()
    (project / "folder.py").mkdir()
    shutil.rmtree(project / "pkg")
    (project / "pkg").write_text("now a file\n")
    with deadline():
        result = lint_targets(targets, settings, options, jobs=1, use_cache=False)  # type: ignore[arg-type]
    assert [(f.path, f.line) for f in result.findings] == [("kept.py", 7)]
    assert sorted((e.path, e.message) for e in result.errors) == [
        ("deleted.py", "cannot read: No such file or directory"),
        ("fifo.py", "cannot read: not a regular file"),
        ("folder.py", "cannot read: not a regular file"),
        ("pkg/mod.py", "cannot read: Not a directory"),
    ]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_file_without_read_permission(project: Path) -> None:
    (project / "net.py").write_text(HAZARD)
    (project / "secret.py").write_text(HAZARD)
    (project / "secret.py").chmod(0)
    run = run_cli("check", "--no-cache", "--format", "json")
    assert run.code == 2
    assert run.errors_by_path() == {"secret.py": ["cannot read: Permission denied"]}
    assert run.findings_by_path() == {"net.py": [(7, 9)]}


def test_damaged_cache_entries_are_relinted(project: Path) -> None:
    (project / "net.py").write_text(HAZARD)
    first = run_cli("check", "--format", "json")
    (cache_file,) = (project / ".ddplint_cache").glob("results-*.sqlite3")
    with sqlite3.connect(cache_file) as connection:
        connection.execute("UPDATE entries SET value = ?", (json.dumps({"findings": 5}),))
    connection.close()
    assert run_cli("check", "--format", "json").out == first.out
    cache_file.write_bytes(b"\x00not a database")
    assert run_cli("check", "--format", "json").out == first.out
    assert run_cli("check", "--format", "json").out == first.out  # the cache made afresh


def test_unwritable_report_file_is_an_error(project: Path) -> None:
    (project / "net.py").write_text(HAZARD)
    run = run_cli("check", "--no-cache", "-o", "missing/folder/report.txt")
    assert run.code == 2
    assert run.err == (
        "ddplint: error: cannot write missing/folder/report.txt: No such file or directory\n"
    )


def test_a_list_as_an_environment_key_does_not_stop_the_run(project: Path) -> None:
    """``os.environ.get(["LOCAL_RANK"], -1)`` (a list where a string belongs) reaches
    the project model's rank questions: the run goes on and lints the other files."""
    (project / "odd.py").write_text(
        "import os\nimport torch.distributed as dist\n\n"
        "def main():\n"
        '    if int(os.environ.get(["LOCAL_RANK"], -1)) != -1:\n'
        "        dist.barrier()\n"
    )
    (project / "train.py").write_text(HAZARD)
    run = run_cli("check", "--preview", "--select", "ALL", "--output-format", "json", str(project))
    assert run.code == 1, run.err
    assert "train.py" in {Path(f["path"]).name for f in run.json()["findings"]}
