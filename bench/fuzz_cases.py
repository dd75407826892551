"""Inputs for fuzzing the engine, and what must hold for every one of them.

Python comes from three sources: hypothesmith's grammar-generated modules (syntax the
parser must survive), modules composed from distributed-training snippets (so that
rules fire and offer fixes), and real files mutated the way files get damaged (bytes
flipped, lines dropped or doubled, indentation changed, cut short). YAML is the real
NeMo configs, mutated the same way. Used by ``tests/robustness`` (a few seconds) and by
``bench/fuzz.py`` (thousands of cases).
"""

from __future__ import annotations

import codecs
import json
import pickle
import random
from collections.abc import Callable
from pathlib import Path

from hypothesis import strategies as st

from ddplint.engine import FileOutcome, lint_source
from ddplint.finding import Finding
from ddplint.fix import apply_edits, syntax_problem
from ddplint.rules import all_rules
from ddplint.settings import LintOptions
from ddplint.source import SourceError, SourceFile

ROOT = Path(__file__).resolve().parent.parent
NEMO_CONFIGS = Path("/work/shared/nemo_real_configs")


def all_rules_options() -> LintOptions:
    """Every rule, preview ones included: rules merged later are fuzzed too."""
    return LintOptions(selected=tuple(all_rules()), project_root=str(ROOT))


def needle_comment(kind: str) -> str:
    """A comment holding every needle of every rule of ``kind``, so that the text
    pre-filter lets each of them run on the file."""
    needles = sorted(
        {n for rule in all_rules().values() if rule.kind == kind for n in rule.needles}
    )
    return "# " + " ".join(needles) if needles else "# no needles"


# --- Python composed from distributed-training snippets -------------------------------

HEADERS = (
    "import torch\nimport torch.distributed as dist\nfrom torch import nn\nimport time\n",
    "import torch\nfrom torch import distributed as dist, nn\nimport time\n",
    "import torch as T\nimport torch.distributed as dist\nimport torch.nn as nn\n"
    "from time import perf_counter\n",
    "from torch.distributed import barrier, all_reduce\nimport torch\nfrom torch import nn\n"
    "import lightning as L\n",
    "import torch, time\nimport torch.distributed\nfrom torch.cuda import synchronize as sync\n"
    "from torch import nn\n",
)
SIMPLE = (
    "torch.cuda.synchronize()",
    "torch.cuda.synchronize()  # noqa: DDP101",
    "torch.cuda.synchronize()  # ddplint: ignore",
    "T.cuda.synchronize()",
    "sync()",
    "torch.cuda.current_stream().synchronize()",
    "stream = torch.cuda.current_stream()",
    "stream.synchronize()",
    "torch.accelerator.synchronize()",
    "torch.cuda.synchronize(\n    0,\n)",
    "dist.barrier()",
    "barrier()",
    "torch.distributed.barrier()",
    "dist.all_reduce(loss)",
    "all_reduce(x)",
    "dist.broadcast(x, src=0)",
    "dist.all_gather(out, x)",
    "x = self.layer(x)",
    "out = model(batch)",
    "loss = criterion(out, batch)",
    "loss.backward()",
    "optimizer.step(); optimizer.zero_grad()",
    "start = time.perf_counter()",
    "start = perf_counter()",
    "self.log('loss', loss, sync_dist=True)",
    "self.trainer.strategy.barrier()",
    "accelerator.wait_for_everyone()",
    "value = loss.item()",
    "print('rank', rank, 'é ✓')",
    "torch.save(model.state_dict(), 'ckpt.pt')",
    "rank = dist.get_rank()",
    "x = torch.ones(1, device='cuda')",
    "pass",
    "return x",
    "self.helper(x)",
    "helper()",
    "elapsed = time.perf_counter() - start",
    "x = [a for a in range(3) if a]; y = {k: v for k, v in d.items()}",
)
HEADERS_OF_BLOCKS = (
    "if rank == 0:",
    "if dist.get_rank() == 0:",
    "if self.global_rank == 0:",
    "if trainer.is_global_zero:",
    "if i == len(loader) - 1:",
    "if not dist.is_initialized():",
    "for i, batch in enumerate(loader):",
    "for step in range(10):",
    "while step < 10:",
    "with torch.no_grad():",
    "with torch.autocast('cuda'), open(path) as f:",
    "try:",
)
TOP_LEVEL = (
    ("class Net(nn.Module):", ("def forward(self, x):", "def helper(self, x):")),
    (
        "class Lit(L.LightningModule):",
        ("def training_step(self, batch, batch_idx):", "def on_train_epoch_end(self):"),
    ),
    ("class Plain:", ("def forward(self, x):",)),
    ("", ("def train(model, loader, optimizer):", "def helper():", "async def main():")),
    ("if __name__ == '__main__':", ()),
)


@st.composite
def _block(draw: st.DrawFn, depth: int) -> list[tuple[int, str]]:
    """Lines (indent level, text) of a block body: snippets and nested blocks."""
    lines: list[tuple[int, str]] = []
    for _ in range(draw(st.integers(1, 4))):
        if depth < 3 and draw(st.integers(0, 3)) == 0:
            header = draw(st.sampled_from(HEADERS_OF_BLOCKS))
            lines.append((0, header))
            lines += [(level + 1, text) for level, text in draw(_block(depth + 1))]
            if header == "try:":
                lines.append((0, "except RuntimeError:"))
                lines += [(level + 1, text) for level, text in draw(_block(depth + 1))]
            elif header.startswith("if ") and draw(st.booleans()):
                lines.append((0, "else:"))
                lines += [(level + 1, text) for level, text in draw(_block(depth + 1))]
        else:
            snippet = draw(st.sampled_from(SIMPLE))
            lines += [(0, part) for part in snippet.split("\n")]
        if draw(st.integers(0, 5)) == 0:
            lines.append((0, draw(st.sampled_from(("", "# a comment", "# ddplint: ignore[DDP1]")))))
    return lines


@st.composite
def composed_modules(draw: st.DrawFn) -> bytes:
    """A module of distributed-training code, with the odd encodings and line ends."""
    lines: list[tuple[int, str]] = [
        (0, line) for line in draw(st.sampled_from(HEADERS)).split("\n")
    ]
    for _ in range(draw(st.integers(1, 4))):
        owner, functions = draw(st.sampled_from(TOP_LEVEL))
        base = 0
        if owner:
            lines.append((0, owner))
            base = 1
        if not functions:
            lines += [(base + level, text) for level, text in draw(_block(1))]
            continue
        for signature in draw(st.lists(st.sampled_from(functions), min_size=1, max_size=2)):
            lines.append((base, signature))
            lines += [(base + 1 + level, text) for level, text in draw(_block(1))]
    indent = draw(st.sampled_from(("    ", "  ", "\t")))
    newline = draw(st.sampled_from(("\n", "\r\n", "\r")))
    text = newline.join(indent * level + line if line else "" for level, line in lines)
    if draw(st.booleans()):
        text += newline
    encoding = draw(st.sampled_from(("utf-8", "utf-8-sig", "latin-1")))
    if encoding == "latin-1":
        text = f"# -*- coding: latin-1 -*-{newline}" + text.replace("✓", "ü")
    return text.encode(encoding)


def hypothesmith_modules() -> st.SearchStrategy[bytes]:
    """Syntactically valid Python from the grammar, led by the rules' needles."""
    import hypothesmith

    header = needle_comment("code") + "\n"
    return hypothesmith.from_grammar().map(lambda source: (header + source).encode())


# --- Damaged real files ---------------------------------------------------------------


def seed_python_files() -> list[Path]:
    """Real Python of this repository: rule fixtures, the example project, the engine."""
    folders = [ROOT / "fixtures", ROOT / "lint", ROOT / "rules"]
    return sorted(p for folder in folders for p in folder.rglob("*.py"))


def seed_yaml_files() -> list[Path]:
    folders = [NEMO_CONFIGS, ROOT / "fixtures"]
    return sorted(p for folder in folders if folder.is_dir() for p in folder.rglob("*.y*ml"))


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True) or [b""]


def _flip_byte(data: bytes, rng: random.Random) -> bytes:
    if not data:
        return bytes([rng.randrange(256)])
    at = rng.randrange(len(data))
    return data[:at] + bytes([rng.randrange(256)]) + data[at + 1 :]


def _insert_junk(data: bytes, rng: random.Random) -> bytes:
    at = rng.randrange(len(data) + 1)
    junk = rng.choice((b"\x00", b"\r", b"\t", b"\xff\xfe", codecs.BOM_UTF8, b"\\", b"'''", b"("))
    return data[:at] + junk + data[at:]


def _drop_line(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    del lines[rng.randrange(len(lines))]
    return b"".join(lines)


def _double_line(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    at = rng.randrange(len(lines))
    lines.insert(at, lines[at])
    return b"".join(lines)


def _swap_lines(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    a, b = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[a], lines[b] = lines[b], lines[a]
    return b"".join(lines)


def _reindent(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    at = rng.randrange(len(lines))
    line = lines[at]
    if rng.random() < 0.5:
        lines[at] = rng.choice((b" ", b"  ", b"\t", b"    ")) + line
    else:
        lines[at] = line.lstrip(b" \t") if rng.random() < 0.5 else line[1:]
    return b"".join(lines)


def _truncate(data: bytes, rng: random.Random) -> bytes:
    return data[: rng.randrange(len(data) + 1)]


def _line_ends(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    at = rng.randrange(len(lines))
    lines[at] = lines[at].rstrip(b"\r\n") + rng.choice((b"\r\n", b"\r", b"\n", b""))
    return b"".join(lines)


MUTATIONS: tuple[Callable[[bytes, random.Random], bytes], ...] = (
    _flip_byte,
    _insert_junk,
    _drop_line,
    _double_line,
    _swap_lines,
    _reindent,
    _truncate,
    _line_ends,
)


def mutate(data: bytes, rng: random.Random) -> bytes:
    """One to three random damages of the kinds files really suffer."""
    for _ in range(rng.randint(1, 3)):
        data = rng.choice(MUTATIONS)(data, rng)
    return data


# --- What must hold -------------------------------------------------------------------


def problems_with(
    path: str, raw: bytes, outcome: FileOutcome, options: LintOptions, *, valid: bool = False
) -> list[str]:
    """Everything wrong with ``outcome`` as the result of linting ``raw``: an internal
    error (any error at all when the input is ``valid`` Python), a finding or edit outside
    the file, a fix that does not parse or does not remove its finding, an outcome the
    cache or the process pool would mangle."""
    problems = [
        f"error on valid code: {e.message}" if valid else f"internal error: {e.message}"
        for e in outcome.errors
        if valid or "internal error" in e.message
    ]
    if outcome.internal_error and not problems:
        problems.append("internal_error set without an error entry")
    if FileOutcome.from_cache(json.loads(json.dumps(outcome.to_cache()))).to_cache() != (
        outcome.to_cache()
    ):
        problems.append("outcome does not survive the cache")
    pickle.loads(pickle.dumps(outcome))
    if not outcome.findings:
        return problems
    try:
        source = SourceFile.decode(path, raw)
    except SourceError as exc:
        return [*problems, f"findings on a file that does not decode: {exc.message}"]
    for finding in outcome.findings:
        problems += _range_problems(source, finding)
        if finding.fix is not None and not problems:
            problems += _fix_problems(path, source, finding, outcome, options)
    return problems


def _inside(source: SourceFile, line: int, column: int, *, end_of_file_ok: bool) -> bool:
    last = len(source.lines)
    if end_of_file_ok and (line, column) == (last + 1, 1):
        return True
    return 1 <= line <= last and 1 <= column <= len(source.line_text(line)) + 1


def _range_problems(source: SourceFile, finding: Finding) -> list[str]:
    where = (
        f"{finding.rule} at {finding.line}:{finding.column}-{finding.end_line}:{finding.end_column}"
    )
    problems = []
    if not _inside(source, finding.line, finding.column, end_of_file_ok=False):
        problems.append(f"{where}: start outside the file")
    if not _inside(source, finding.end_line, finding.end_column, end_of_file_ok=False):
        problems.append(f"{where}: end outside the file")
    if (finding.end_line, finding.end_column) < (finding.line, finding.column):
        problems.append(f"{where}: ends before it starts")
    for edit in finding.fix.edits if finding.fix else ():
        span = f"{edit.line}:{edit.column}-{edit.end_line}:{edit.end_column}"
        if not (
            _inside(source, edit.line, edit.column, end_of_file_ok=True)
            and _inside(source, edit.end_line, edit.end_column, end_of_file_ok=True)
            and (edit.line, edit.column) <= (edit.end_line, edit.end_column)
        ):
            problems.append(f"{where}: edit {span} outside the file")
    return problems


def _fix_problems(
    path: str, source: SourceFile, finding: Finding, outcome: FileOutcome, options: LintOptions
) -> list[str]:
    """Apply this one fix: the result must encode, parse and lint with one finding of
    the rule fewer (lines below the fix move, so the count is compared, not lines)."""
    assert finding.fix is not None
    where = f"{finding.rule} fix at {finding.line}:{finding.column}"
    fixed = apply_edits(source, finding.fix.edits)
    try:
        raw = source.encode(fixed)
    except UnicodeEncodeError as exc:
        return [f"{where}: the fixed text does not encode as {source.encoding}: {exc}"]
    problem = syntax_problem(source.kind, fixed)
    if problem is not None:
        return [f"{where}: the fixed file does not parse: {problem}"]
    again = lint_source(path, raw, options)
    before = sum(1 for f in outcome.findings if f.rule == finding.rule)
    after = sum(1 for f in again.findings if f.rule == finding.rule)
    if after >= before:
        return [f"{where}: still {after} {finding.rule} finding(s) after the fix (was {before})"]
    return []
