"""What the language server keeps between edits (module summaries by piece, statements'
walks of the module index) gives exactly what a fresh computation gives."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import libcst as cst
import pytest

from ddplint.code.project import module_summary
from ddplint.code.project.module_summary import summarize
from ddplint.code.syntax import incremental_parse, module_index
from ddplint.code.syntax.module_index import ModuleIndex
from ddplint.code.syntax.safe_parse import parse_module

ROOT = Path(__file__).resolve().parents[1]

TRAINING = """import torch
import torch.distributed as dist


def save(model):
    if dist.get_rank() == 0:
        torch.save(model.state_dict(), "model.pt")
        dist.barrier()


class Trainer:
    def __init__(self):
        self.is_main = dist.get_rank() == 0

    def step(self, loss):
        loss.backward()
        dist.all_reduce(loss)
        save(self)


trainer = Trainer()
if __name__ == "__main__":
    torch.cuda.set_device(0)
    trainer.step(None)
"""

EDITS = [
    # Lines inserted above everything: every later part moves down.
    lambda text: "import os\n\n\n" + text,
    # A line removed inside a function: the parts below move up.
    lambda text: text.replace('        torch.save(model.state_dict(), "model.pt")\n', ""),
    # The import changes what every collective resolves to.
    lambda text: text.replace("import torch.distributed as dist", "import mylib as dist"),
    # A class method added.
    lambda text: text.replace(
        "    def step", "    def more(self):\n        dist.barrier()\n\n    def step"
    ),
]


@pytest.fixture
def kept(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The server's memos, fresh for the test and dropped after it."""
    monkeypatch.setattr(module_summary, "_active", None)
    monkeypatch.setattr(incremental_parse, "_active", None)
    monkeypatch.setattr(module_index, "_kept_walks", None)
    module_summary.enable()
    incremental_parse.enable()
    module_index.keep_walks()
    yield


def _fresh_summary(text: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    with monkeypatch.context() as patch:
        patch.setattr(module_summary, "_active", None)
        return summarize(text)


@pytest.mark.parametrize("edit", range(len(EDITS)))
def test_summary_after_an_edit_is_a_fresh_one(
    edit: int, kept: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    edited = EDITS[edit](TRAINING)
    summarize(TRAINING)
    after = summarize(edited)
    assert after == _fresh_summary(edited, monkeypatch)
    assert after != summarize(TRAINING)


def test_summary_lines_move_with_their_piece(kept: None) -> None:
    before = summarize(TRAINING)
    after = summarize("x = 1\n\n\n" + TRAINING)  # no import changes: parts are reused
    assert after["functions"]["save"]["line"] == before["functions"]["save"]["line"] + 3
    step_before = before["functions"]["Trainer.step"]["collectives"][0][-1]
    assert after["functions"]["Trainer.step"]["collectives"][0][-1] == step_before + 3
    assert [line for _, line in after["top"]["calls"]] == [
        line + 3 for _, line in before["top"]["calls"]
    ]


def test_a_changed_import_is_read_again(kept: None) -> None:
    assert summarize(TRAINING)["functions"]["save"]["collectives"]
    edited = TRAINING.replace("import torch.distributed as dist", "import mylib as dist")
    assert summarize(edited)["functions"]["save"]["collectives"] == []


def _index_facts(index: ModuleIndex) -> tuple[object, ...]:
    by_type = {t: [index.order[n] for n in nodes] for t, nodes in index.by_type.items() if nodes}
    parents = sorted((index.order[c], index.order[p]) for c, p in index.parent.items())
    return sorted(index.order.values()), parents, by_type


def _python_files() -> list[Path]:
    return sorted((ROOT / "lint" / "code").rglob("*.py"))[:40]


@pytest.mark.parametrize("path", _python_files(), ids=lambda p: p.name)
def test_index_with_kept_walks_is_a_fresh_one(
    path: Path, kept: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = path.read_text(encoding="utf-8")
    ModuleIndex(parse_module(text))
    edited = text + "\n\ndef added():\n    return [x for x in range(3)]\n"
    module = parse_module(edited)
    reused = ModuleIndex(module)
    with monkeypatch.context() as patch:
        patch.setattr(module_index, "_kept_walks", None)
        fresh = ModuleIndex(module)
    assert _index_facts(reused) == _index_facts(fresh)
    assert list(reused.order) == list(fresh.order)
    assert reused.order[module] == 0 and module not in reused.parent
    whole = ModuleIndex(cst.parse_module(edited))
    assert len(whole.order) == len(reused.order)
