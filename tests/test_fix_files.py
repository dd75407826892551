"""``check --fix`` / ``--unsafe-fixes`` / ``--diff`` on real files on disk, with DDP101
(an unsafe fix): encodings, BOM, CRLF, permissions, read-only files, symlinks."""

from __future__ import annotations

import codecs
import os
import stat
import subprocess
from pathlib import Path

import pytest
from cli_support import HAZARD as PLAIN
from cli_support import SYNC
from cli_support import check as run
from click.testing import CliRunner

from ddplint.cli import cli

#: The hazard with a comment (non-ASCII in some tests) that must survive the fix.
HAZARD = PLAIN.replace("def forward(self, x):", "def forward(self, x):  # {comment}")
FIXED = HAZARD.replace(SYNC, "")


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def write(name: str, data: bytes) -> Path:
    path = Path(name)
    path.write_bytes(data)
    return path


def test_safe_fixes_only_without_unsafe_flag() -> None:
    path = write("net.py", HAZARD.format(comment="plain").encode())
    code, out, _ = run("--fix", "net.py")
    assert code == 1 and path.read_text() == HAZARD.format(comment="plain")
    assert "net.py:7:9: DDP101" in out and "1 fixable with --fix --unsafe-fixes" in out


@pytest.mark.parametrize(
    ("encoding", "comment", "bom"),
    [
        pytest.param("utf-8", "plain ascii", False, id="utf8"),
        pytest.param("utf-8", "naïve ünïcode ✓", True, id="utf8-bom"),
        pytest.param("latin-1", "café, déjà vu", False, id="latin1"),
        pytest.param("gbk", "同步会阻塞主机", False, id="gbk"),
    ],
)
@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_encoding_bom_and_line_ends_survive(
    encoding: str, comment: str, bom: bool, newline: str
) -> None:
    declaration = f"# -*- coding: {encoding} -*-\n" if encoding != "utf-8" else ""

    def stored(text: str) -> bytes:
        data = (declaration + text).replace("\n", newline).encode(encoding)
        return codecs.BOM_UTF8 + data if bom else data

    path = write("net.py", stored(HAZARD.format(comment=comment)))
    code, out, _ = run("--fix", "--unsafe-fixes", "net.py")
    assert (code, out.strip()) == (0, "Found 1 finding (1 fixed, 0 remaining).")
    assert path.read_bytes() == stored(FIXED.format(comment=comment))
    if newline == "\r\n":
        assert b"\n" not in path.read_bytes().replace(b"\r\n", b"")


def test_diff_prints_and_does_not_write() -> None:
    original = HAZARD.format(comment="c").encode()
    path = write("net.py", original)
    code, out, err = run("--diff", "--unsafe-fixes", "net.py")
    assert code == 1 and path.read_bytes() == original
    assert out.splitlines()[:3] == ["--- a/net.py", "+++ b/net.py", "@@ -4,5 +4,4 @@"]
    assert "-        torch.cuda.synchronize()" in out.splitlines()
    assert "Would fix 1 finding in 1 file." in err


def test_diff_applies_with_git_apply_to_the_fixed_file() -> None:
    original = HAZARD.format(comment="crlf ✓").replace("\n", "\r\n").encode()
    path = write("net.py", original)
    # Bytes: CliRunner's text output turns CRLF into LF.
    patch = (
        CliRunner()
        .invoke(
            cli,
            [
                "check",
                "--no-cache",
                "--extend-select",
                "DDP101",
                "--diff",
                "--unsafe-fixes",
                "net.py",
            ],
        )
        .stdout_bytes
    )
    assert b"-        torch.cuda.synchronize()\r\n" in patch
    applied = subprocess.run(["git", "apply", "-"], input=patch, capture_output=True, check=False)
    assert applied.returncode == 0, applied.stderr
    patched = path.read_bytes()
    path.write_bytes(original)
    assert run("--fix", "--unsafe-fixes", "net.py")[0] == 0
    assert patched == path.read_bytes() != original


def test_diff_without_applicable_fixes_is_clean() -> None:
    write("net.py", HAZARD.format(comment="c").encode())
    assert run("--diff", "net.py")[:2] == (0, "")


def test_remaining_findings_are_reported_at_their_new_place() -> None:
    # Two syncs back to back (one finding: its fix removes both), then one in an
    # assignment (no fix) on line 9.
    text = HAZARD.format(comment="c").replace(
        "        return x\n", SYNC + "        y = torch.cuda.synchronize()\n        return x\n"
    )
    path = write("net.py", text.encode())
    code, out, _ = run("--fix", "--unsafe-fixes", "net.py")
    assert code == 1
    assert path.read_text().count("torch.cuda.synchronize()") == 1
    first, hint, summary = out.splitlines()
    assert first.startswith("net.py:7:13: DDP101 warning: `torch.cuda.synchronize()`")
    assert "ddplint explain CODE" in hint
    assert summary == "Found 2 findings (1 fixed, 1 remaining)."


def test_read_only_file_is_an_error_and_untouched() -> None:
    original = HAZARD.format(comment="c").encode()
    path = write("net.py", original)
    path.chmod(0o444)
    code, out, err = run("--fix", "--unsafe-fixes", "net.py")
    assert code == 2
    assert "net.py: error: cannot write fixes: the file is read-only" in err
    assert path.read_bytes() == original and stat.S_IMODE(path.stat().st_mode) == 0o444
    assert "net.py:7:9: DDP101" in out, "the finding is still reported"


def test_permissions_are_kept_and_no_temporary_file_is_left() -> None:
    path = write("net.py", HAZARD.format(comment="c").encode())
    path.chmod(0o751)
    assert run("--fix", "--unsafe-fixes", "net.py")[0] == 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o751
    assert sorted(p.name for p in Path().iterdir()) == ["net.py"]


def test_symlink_is_never_written_through() -> None:
    """A link named on its own is not fixed (fixes never follow a link, H2); linting the
    folder fixes the file itself and keeps the link."""
    target = write("real.py", HAZARD.format(comment="c").encode())
    link = Path("link.py")
    link.symlink_to(target)
    code, _, err = run("--fix", "--unsafe-fixes", "link.py")
    assert code == 2 and "it is a symbolic link" in err
    assert target.read_text() == HAZARD.format(comment="c")
    assert run("--fix", "--unsafe-fixes", ".")[0] == 0
    assert link.is_symlink() and os.readlink(link) == "real.py"
    assert target.read_text() == FIXED.format(comment="c")
