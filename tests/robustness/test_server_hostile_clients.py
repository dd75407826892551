"""``ddplint server`` under whatever an editor sends (robustness round 3, N1-N4, N9,
N10): one hostile document never stops the diagnostics of the others, a file viewed
outside the workspace gets nothing written beside it, a bad frame header does not kill
the server, and the LSP lifecycle is kept. Driven over stdio as an editor does."""

from __future__ import annotations

import asyncio
import io
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from lsp_session import TIMEOUT, ServerSession, codes, drive
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidRequest

from ddplint.server.framing import DROPPED, BoundedInput

pytestmark = pytest.mark.slow

HAZARD = (
    "import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n"
    "    def forward(self, x):\n        torch.cuda.synchronize()\n        return x\n"
)
#: Stands in for a lint that does not end (a long native parse): it never returns.
NEVER_ENDING_LINT = (
    "import sys, threading\n"
    "from ddplint.server import documents\n"
    "documents.ProjectLinter.lint = lambda self, snapshots: threading.Event().wait()\n"
    "from ddplint.cli import main\n"
    "sys.argv = ['ddplint', 'server']\n"
    "main()\n"
)


SELECTS_SAMPLE = '[tool.ddplint]\nextend-select = ["DDP101"]\n'


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project (``.git`` marks it) holding ``net.py`` with a hazard; the cache key
    outside it, the cache inside it (as users have it)."""
    root = tmp_path / "project"
    root.mkdir()
    (root / ".git").mkdir()
    (root / "net.py").write_text(HAZARD)
    # DDP101, the sample hazard, is opt-in since issue 23: the project selects it.
    (root / "pyproject.toml").write_text(SELECTS_SAMPLE)
    monkeypatch.delenv("DDPLINT_CACHE_DIR", raising=False)
    monkeypatch.setenv("DDPLINT_CACHE_KEY_FILE", str(tmp_path / "cache-key"))
    return root


def _symlink_loop(root: Path) -> str:
    os.symlink("loopB", root / "loopA")
    os.symlink("loopA", root / "loopB")
    return (root / "loopA" / "x.py").as_uri()


HOSTILE_URIS: dict[str, Callable[[Path], str]] = {
    "nul-byte": lambda root: root.as_uri() + "/%00x.py",
    "symlink-loop": _symlink_loop,
    "name-too-long": lambda root: (root / ("a" * 5000 + ".py")).as_uri(),
}


@pytest.mark.parametrize("shape", HOSTILE_URIS)
def test_a_document_whose_path_cannot_be_used_fails_alone(workspace: Path, shape: str) -> None:
    """N1: the document gets one error; every other document is still linted."""
    hostile = HOSTILE_URIS[shape](workspace)

    async def scenario(session: ServerSession) -> None:
        session.open_uri(hostile, HAZARD)
        [error] = await session.diagnostics(hostile)
        assert "its path cannot be used" in error.message
        net = session.open("net.py")
        assert codes(await session.diagnostics(net, bool)) == ["DDP101"]
        session.replace(net, HAZARD + "\n")  # later runs too
        assert codes(await session.diagnostics(net, bool)) == ["DDP101"]

    assert drive(workspace, scenario) == 0


def test_a_lone_surrogate_fails_its_document_alone(workspace: Path) -> None:
    """N2: an unpaired UTF-16 surrogate (valid JSON) is an error at its place; the rest
    of the project is linted."""

    async def scenario(session: ServerSession) -> None:
        odd = session.open("odd.py", "x = '\ud800'\n")
        net = session.open("net.py")
        assert codes(await session.diagnostics(net, bool)) == ["DDP101"]
        [error] = await session.diagnostics(odd)
        assert "lone surrogate" in error.message
        assert (error.range.start.line, error.range.start.character) == (0, 5)

    assert drive(workspace, scenario) == 0


def test_a_file_viewed_outside_the_workspace_gets_no_cache_folder(workspace: Path) -> None:
    """N3: a library file (go-to-definition) or a loose script is linted, and nothing is
    written beside it; the workspace's own cache is written as before."""
    library = workspace.parent / "site-packages" / "torchlib" / "nn"
    library.mkdir(parents=True)
    (library / "module.py").write_text(HAZARD)
    (workspace.parent / "site-packages" / "pyproject.toml").write_text(SELECTS_SAMPLE)
    written = workspace / ".ddplint_cache"

    async def scenario(session: ServerSession) -> None:
        outside = session.open_uri((library / "module.py").as_uri(), HAZARD)
        assert codes(await session.diagnostics(outside, bool)) == ["DDP101"]
        net = session.open("net.py")
        assert codes(await session.diagnostics(net, bool)) == ["DDP101"]
        # The quiet server writes every project's results it may write at once.
        await asyncio.wait_for(_until(lambda: any(written.glob("results-*"))), TIMEOUT)

    assert drive(workspace, scenario) == 0
    assert not list(library.parent.parent.rglob(".ddplint_cache"))


async def _until(condition: Callable[[], bool]) -> None:
    while not condition():
        await asyncio.sleep(0.1)


def test_a_document_over_max_file_size_says_it_was_not_linted(workspace: Path) -> None:
    """N9: the editor shows why a file has no findings, as ``check`` does."""
    (workspace / "pyproject.toml").write_text(SELECTS_SAMPLE + "max-file-size = 1000\n")

    async def scenario(session: ServerSession) -> None:
        big = session.open("big.py", HAZARD + "x = 1\n" * 300)
        [notice] = await session.diagnostics(big)
        assert notice.severity == types.DiagnosticSeverity.Information
        assert "did not lint this file" in notice.message
        assert "max-file-size (1000)" in notice.message

    assert drive(workspace, scenario) == 0


def test_exit_without_shutdown_ends_with_code_1(workspace: Path) -> None:
    """N10: LSP's ``exit`` before ``shutdown`` is exit code 1."""

    async def main() -> int | None:
        session = await ServerSession(workspace).__aenter__()
        session.client.exit(None)
        await asyncio.wait_for(session.client.stop(), TIMEOUT)
        return session.exit_code

    assert asyncio.run(main()) == 1


def test_exit_during_a_lint_that_does_not_end_ends_the_process(workspace: Path) -> None:
    """N10: ``exit`` does not wait for a lint under way (here one that never ends)."""

    async def main() -> int | None:
        session = ServerSession(workspace, command=("-c", NEVER_ENDING_LINT))
        await session.__aenter__()
        try:
            session.open("net.py")
            await asyncio.sleep(0.5)  # the lint has started (or is about to)
            await asyncio.wait_for(session.client.shutdown_async(None), TIMEOUT)
            session.client.exit(None)
            await asyncio.wait_for(session.client.stop(), TIMEOUT)
        finally:
            session.kill()
        return session.exit_code

    assert asyncio.run(main()) == 0


def test_a_request_after_shutdown_gets_invalid_request(workspace: Path) -> None:
    """N10: a client awaiting an answer after ``shutdown`` gets an error, not silence."""

    async def scenario(session: ServerSession) -> None:
        uri = session.open("net.py")
        await session.diagnostics(uri, bool)
        await asyncio.wait_for(session.client.shutdown_async(None), TIMEOUT)
        with pytest.raises(JsonRpcInvalidRequest):
            await session.hover(uri, types.Position(6, 10))

    async def main() -> int | None:
        session = await ServerSession(workspace).__aenter__()
        await scenario(session)
        session.client.exit(None)
        await asyncio.wait_for(session.client.stop(), TIMEOUT)
        return session.exit_code

    assert asyncio.run(main()) == 0


def test_a_frame_declaring_a_terabyte_does_not_kill_the_server(tmp_path: Path) -> None:
    """N4: ``Content-Length: 10^12`` is neither allocated nor fatal; the server ends
    normally when the client goes."""
    frame = b"Content-Length: 1000000000000\r\n\r\n{"
    done = subprocess.run(
        [sys.executable, "-m", "ddplint", "server"],
        input=frame,
        capture_output=True,
        cwd=tmp_path,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    assert b"MemoryError" not in done.stderr


def _frame(message: dict[str, object]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def test_a_body_over_the_limit_is_dropped_and_the_next_frame_is_read_whole() -> None:
    """N4: the oversized body is read in chunks and dropped; framing stays in step."""
    big = _frame({"jsonrpc": "2.0", "method": "x", "params": {"pad": "p" * 5000}})
    after = _frame({"jsonrpc": "2.0", "id": 1, "method": "shutdown"})
    stream = BoundedInput(io.BytesIO(big + after), limit=1000)
    header = stream.readline()
    length = int(header.split(b":")[1])
    assert stream.readline() == b"\r\n"
    dropped = json.loads(stream.read(length))
    assert dropped == {"jsonrpc": "2.0", "method": DROPPED, "params": {"size": length}}
    assert stream.readline().startswith(b"Content-Length")
    stream.readline()
    rest = after.split(b"\r\n\r\n", 1)[1]
    assert stream.read(len(rest)) == rest


def test_a_body_cut_short_over_the_limit_reads_as_the_end_of_the_stream() -> None:
    stream = BoundedInput(io.BytesIO(b"{" * 10), limit=4)
    assert stream.read(10**12) == b""
