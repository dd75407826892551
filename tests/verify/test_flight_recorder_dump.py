"""The rank side's flight-recorder dump reads every recorder torch has: on an H100 with
NCCL (torch 2.11) the verifier's dump of a clean NCCL run held no entry, so the dump takes
NCCL's own recorder too, each entry once (tests here fake torch's dump functions)."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import pytest

from ddplint.verify import flight_recorder
from ddplint.verify.fr_dumps import read_dump


def recorder_entry(seq: int, name: str, created: int) -> dict[str, Any]:
    return {
        "process_group": ("0", "default_pg"),
        "collective_seq_id": seq,
        "profiling_name": name,
        "is_p2p": False,
        "time_created_ns": created,
        "state": "completed",
        "retired": True,
        "input_sizes": [[4]],
        "input_dtypes": ["Float"],
        "output_sizes": [[4]],
        "output_dtypes": ["Float"],
        "frames": [{"filename": "/job/train.py", "line": 10 + seq, "name": "main"}],
    }


def fake_dumper(*entries: dict[str, Any]) -> Any:
    return lambda: pickle.dumps({"version": "2.10", "entries": list(entries)})


@pytest.fixture
def c10d(monkeypatch: pytest.MonkeyPatch) -> Any:
    pytest.importorskip("torch")
    import torch._C._distributed_c10d as module

    for name in flight_recorder.DUMPERS:
        monkeypatch.delattr(module, name, raising=False)
    return module


def test_nccl_recorder_entries_are_dumped_with_the_generic_ones_each_once(
    c10d: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    shared = recorder_entry(1, "nccl:all_reduce", 1_000)
    monkeypatch.setattr(c10d, "_dump_fr_trace", fake_dumper(shared), raising=False)
    monkeypatch.setattr(
        c10d,
        "_dump_nccl_trace",
        fake_dumper(shared, recorder_entry(2, "nccl:all_reduce_barrier", 2_000)),
        raising=False,
    )
    path = tmp_path / "rank-0.c10d.json"
    assert flight_recorder.dump(str(path))
    document = json.loads(path.read_text())
    assert document["torch_format_version"] == "2.10"
    assert [e["seq"] for e in document["entries"]] == [1, 2]
    dump = read_dump(str(path), 0)
    assert [e.op for e in dump.entries] == ["all_reduce", "barrier"]


def test_one_recorder_that_fails_leaves_the_other(
    c10d: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def broken() -> bytes:
        raise RuntimeError("recorder off")

    monkeypatch.setattr(c10d, "_dump_fr_trace", broken, raising=False)
    monkeypatch.setattr(
        c10d, "_dump_nccl_trace", fake_dumper(recorder_entry(1, "nccl:broadcast", 5)), raising=False
    )
    path = tmp_path / "rank-0.c10d.json"
    assert flight_recorder.dump(str(path))
    assert [e["op"] for e in json.loads(path.read_text())["entries"]] == ["nccl:broadcast"]


def test_no_recorder_writes_nothing(c10d: Any, tmp_path: Path) -> None:
    path = tmp_path / "rank-0.c10d.json"
    assert not flight_recorder.dump(str(path))
    assert not path.exists()
