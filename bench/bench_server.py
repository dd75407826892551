"""Latency of ``ddplint server``: from a change to its diagnostics, on a warm server.

Usage::

    python bench/bench_server.py [--lines 2000] [--edits 30] [--project DIR] [--fresh-layouts]

Starts the real server (``python -m ddplint server``) with pygls's client, opens a
generated training file of about ``--lines`` lines (in a fresh project, or written into
``--project`` to lint it with that project's other files), waits for its first
diagnostics (cold: imports, parse, project model; much faster when the project's cache
is warm, as a previous session or ``ddplint check`` leaves it), pauses, then makes
``--edits`` edits one after another, each changing one line to a text not seen before
(so the result cache cannot answer), every other one also inserting a line (so every
line below moves), and times each change until ``publishDiagnostics`` for that version
(wall clock, and the server process's CPU time, which a loaded machine does not inflate
much).
Then a burst: ``--burst`` changes sent back to back; only the last version may be
published; then as many changes ``TYPING_INTERVAL`` apart (typing: each one cancels the
run the one before started). Prints min / median / p95 / max. Not a test: numbers depend
on the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

HEAD = """import torch
import torch.distributed as dist
import torch.nn as nn


def save(model):
    if dist.get_rank() == 0:
        torch.save(model.state_dict(), "model.pt")
        dist.barrier()
"""
BLOCK = """

class Block{i}(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.proj = nn.Linear(width, width)
        self.norm = nn.LayerNorm(width)

    def forward(self, x):
        return self.norm(self.proj(x)) + x


def train_epoch_{i}(model, loader, optimizer, epoch):
    model.train()
    total = 0.0
    for step, batch in enumerate(loader):
        loss = model(batch).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    if dist.get_rank() == 0:
        print("epoch", epoch, total)
    return total


def evaluate_{i}(model, loader):
    model.eval()
    with torch.no_grad():
        losses = [model(batch).mean() for batch in loader]
    return sum(losses) / max(1, len(losses))
"""
#: Seconds between the changes of the typing burst: past the debounce, short of a run.
TYPING_INTERVAL = 0.1
#: The line each edit rewrites (in the first block): ``print("epoch", epoch, total)``.
EDITED = '        print("epoch", epoch, total)'


def training_file(lines: int) -> str:
    """A training module of about ``lines`` lines with one DDP201 hazard."""
    parts, index = [HEAD], 0
    while sum(part.count("\n") for part in parts) < lines:
        parts.append(BLOCK.format(i=index))
        index += 1
    return "".join(parts)


def edited(text: str, edit: int, fresh_layouts: bool = False) -> tuple[str, str]:
    """The ``edit``-th change of the file: even ones rewrite one line, odd ones also
    insert a line after it (every line below moves, as when one presses Enter), so
    successive edits alternate between the two layouts. Each text is new. With
    ``fresh_layouts`` an odd edit inserts as many lines as its number: every layout is
    new too (the module's summary differs from every earlier one, so no memo of the
    project's facts answers it)."""
    if edit % 2 == 0:
        return "rewrite", text.replace(EDITED, f'        print("epoch {edit}", epoch, total)', 1)
    added = edit if fresh_layouts else 1
    inserted = EDITED + "".join(f"\n        total += {edit}" for _ in range(added))
    return "insert", text.replace(EDITED, inserted, 1)


class Bench:
    def __init__(self) -> None:
        self.client = LanguageClient("ddplint-bench", "1")
        self.published: dict[int | None, float] = {}
        self.versions_seen: list[int | None] = []
        self.arrived = asyncio.Condition()

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        async def diagnostics(params: types.PublishDiagnosticsParams) -> None:
            async with self.arrived:
                self.published[params.version] = time.perf_counter()
                self.versions_seen.append(params.version)
                self.arrived.notify_all()

    async def until_published(self, version: int) -> float:
        async with self.arrived:
            await asyncio.wait_for(self.arrived.wait_for(lambda: version in self.published), 300)
        return self.published[version]

    def change(self, uri: str, version: int, text: str) -> float:
        document = types.VersionedTextDocumentIdentifier(version=version, uri=uri)
        change = types.TextDocumentContentChangeWholeDocument(text)
        sent = time.perf_counter()
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(document, [change]))
        return sent


#: A pause after the first diagnostics, as a reader makes: the server tidies then (the
#: next session's cold start uses the cache it writes).
READING_SECONDS = 2.0


async def run(lines: int, edits: int, burst: int, project: Path, fresh: bool) -> None:
    path = project / "bench_train.py"
    text = training_file(lines)
    path.write_text(text, encoding="utf-8")
    bench = Bench()
    await bench.client.start_io(sys.executable, "-m", "ddplint", "server", cwd=project)
    params = types.InitializeParams(capabilities=types.ClientCapabilities(), process_id=None)
    await bench.client.initialize_async(params)
    bench.client.initialized(types.InitializedParams())
    uri = path.resolve().as_uri()
    opened = time.perf_counter()
    item = types.TextDocumentItem(uri, "python", 1, text)
    bench.client.text_document_did_open(types.DidOpenTextDocumentParams(item))
    cold = await bench.until_published(1) - opened
    print(f"file: {text.count(chr(10))} lines; first diagnostics (cold) {cold * 1000:.0f} ms")
    await asyncio.sleep(READING_SECONDS)  # quiet: the server writes the project's cache

    version = 1
    delays: dict[str, list[float]] = {"rewrite": [], "insert": []}
    busy: list[float] = []
    server_pid = bench.client._server.pid if bench.client._server is not None else None
    for edit in range(edits):
        version += 1
        kind, changed = edited(text, edit, fresh)
        before = cpu_seconds(server_pid)
        sent = bench.change(uri, version, changed)
        delays[kind].append(await bench.until_published(version) - sent)
        busy.append(cpu_seconds(server_pid) - before)
    every = [*delays["rewrite"], *delays["insert"]]
    print(f"change -> publishDiagnostics over {edits} edits (wall): {spread(every)}")
    for kind, seconds in delays.items():
        if seconds:
            print(f"  {kind} ({len(seconds)}): {spread(seconds)}")
    print(f"server CPU time per edit (what an idle core would take): {spread(busy)}")

    first_of_burst = version + 1
    for edit in range(burst):
        version += 1
        last = bench.change(uri, version, text.replace(EDITED, f"        print({edit})", 1))
    settled = await bench.until_published(version) - last
    stale = [v for v in bench.versions_seen if v is not None and first_of_burst <= v < version]
    print(
        f"burst of {burst} changes: last one published {settled * 1000:.0f} ms after it; "
        f"earlier versions of the burst published: {len(stale)}"
    )
    first_typed = version + 1
    for edit in range(burst):
        version += 1
        last = bench.change(uri, version, text.replace(EDITED, f"        print({edit}, 1)", 1))
        await asyncio.sleep(TYPING_INTERVAL)
    settled = await bench.until_published(version) - last
    typed = [v for v in bench.versions_seen if v is not None and first_typed <= v < version]
    print(
        f"typing: {burst} changes {TYPING_INTERVAL * 1000:.0f} ms apart (each run outlasts the "
        f"pause: it is cancelled): last one published {settled * 1000:.0f} ms after it; "
        f"earlier versions published: {len(typed)}"
    )
    await bench.client.shutdown_async(None)
    bench.client.exit(None)
    await bench.client.stop()
    path.unlink(missing_ok=True)  # the project is left as it was


def cpu_seconds(pid: int | None) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux); 0 elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def spread(seconds: list[float]) -> str:
    """min / median / p95 / max in milliseconds."""
    ordered = sorted(seconds)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return (
        f"min {ordered[0] * 1000:.0f} ms, median {statistics.median(ordered) * 1000:.0f} ms, "
        f"p95 {p95 * 1000:.0f} ms, max {ordered[-1] * 1000:.0f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--edits", type=int, default=30)
    parser.add_argument("--burst", type=int, default=10)
    parser.add_argument("--project", type=Path, help="lint the file inside this project")
    parser.add_argument(
        "--fresh-layouts", action="store_true", help="no two inserts leave the same layout"
    )
    args = parser.parse_args()
    if args.project is not None:
        project = args.project.resolve()
        asyncio.run(run(args.lines, args.edits, args.burst, project, args.fresh_layouts))
        return
    with tempfile.TemporaryDirectory() as folder:
        project = Path(folder)
        (project / ".git").mkdir()
        asyncio.run(run(args.lines, args.edits, args.burst, project, args.fresh_layouts))


if __name__ == "__main__":
    main()
