"""Memory of ``ddplint server`` over many edits of one document.

Usage::

    python bench/server_memory.py [--lines 900] [--edits 1000] [--every 100]

Starts the real server with pygls's client in a fresh project, opens a generated
training file, pauses (the server writes the project's cache then), and makes
``--edits`` edits, each to a text not seen before (a line appended), waiting for the
diagnostics of each. Prints the server's resident memory (``VmRSS`` from ``/proc``)
every ``--every`` edits and after an idle pause (the server collects garbage then).
Not a test: numbers depend on the machine (Linux only: reads ``/proc``).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

from lsprotocol import types

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_server import READING_SECONDS, Bench, training_file

#: Quiet seconds before the last sample: the server's idle collection runs after 1 s.
IDLE_SECONDS = 2.5


def resident_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def run(lines: int, edits: int, every: int, project: Path) -> None:
    path = project / "bench_train.py"
    text = training_file(lines)
    path.write_text(text, encoding="utf-8")
    bench = Bench()
    await bench.client.start_io(sys.executable, "-m", "ddplint", "server", cwd=project)
    params = types.InitializeParams(
        capabilities=types.ClientCapabilities(), process_id=None, root_uri=project.as_uri()
    )
    await bench.client.initialize_async(params)
    bench.client.initialized(types.InitializedParams())
    assert bench.client._server is not None
    pid = bench.client._server.pid
    uri = path.resolve().as_uri()
    item = types.TextDocumentItem(uri, "python", 1, text)
    bench.client.text_document_did_open(types.DidOpenTextDocumentParams(item))
    await bench.until_published(1)
    await asyncio.sleep(READING_SECONDS)
    print(f"file: {text.count(chr(10))} lines; after opening: {resident_mib(pid):.0f} MiB")
    for edit in range(1, edits + 1):
        text += f"edit_{edit} = {edit}\n"
        bench.change(uri, edit + 1, text)
        await bench.until_published(edit + 1)
        if edit % every == 0:
            print(f"after {edit:>5} edits: {resident_mib(pid):.0f} MiB", flush=True)
    await asyncio.sleep(IDLE_SECONDS)
    print(f"idle after {edits} edits: {resident_mib(pid):.0f} MiB")
    await bench.client.shutdown_async(None)
    bench.client.exit(None)
    await bench.client.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=900)
    parser.add_argument("--edits", type=int, default=1000)
    parser.add_argument("--every", type=int, default=100)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        project = Path(folder) / "project"
        project.mkdir()
        (project / ".git").mkdir()
        asyncio.run(run(options.lines, options.edits, options.every, project))


if __name__ == "__main__":
    main()
