"""`ddplint verify-dumps` on dumps made here (issue 28): the restricted pickle reader
(hostile pickles run nothing), damaged and foreign files (one message each, the rest is
read), ring buffers that dropped different entries, recorded paths found under
``--root``, and a divergence no rule explains (a recall lead). Real dumps from real gloo
jobs are in ``test_verify_dumps_runs.py``."""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.fr_dumps import SCRIPT, rank_dump, write_dumps
from ddplint.verify.fr_dumps import DumpError, read_dump, read_dump_dir
from ddplint.verify.plain_pickle import PickleError, UnsafePickle, load_plain

ROOT = Path(__file__).resolve().parents[2]
REMOTE = "/workspace/job/train.py"  # where the job's machine had the script


def verify_dumps(folder: Path, *options: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ddplint", "verify-dumps", str(folder), *options],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


class RunsCommand:
    """Pickled, it asks the unpickler to call ``os.system`` with ``command``."""

    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (os.system, (self.command,))


def hostile_pickles(sentinel: Path) -> list[bytes]:
    """Pickles that would create ``sentinel`` if anything ran them: through
    ``__reduce__`` at every protocol, and hand-written (protocol 0, ``builtins.exec``)."""
    made = [
        pickle.dumps({"version": "2.10", "entries": [RunsCommand(f"touch {sentinel}")]}, p)
        for p in range(pickle.HIGHEST_PROTOCOL + 1)
    ]
    code = f"open({str(sentinel)!r}, 'w').close()"
    made.append(f"cbuiltins\nexec\n(V{code}\ntR.".encode())
    return made


def test_hostile_pickles_are_refused_and_run_nothing(tmp_path: Path) -> None:
    sentinel = tmp_path / "ran"
    for data in hostile_pickles(sentinel):
        with pytest.raises(UnsafePickle, match="refused: the pickle uses opcode"):
            load_plain(data)
    assert not sentinel.exists()


def test_a_hostile_dump_is_one_message_and_the_others_are_read(tmp_path: Path) -> None:
    sentinel = tmp_path / "ran"
    dumps = tmp_path / "dumps"
    write_dumps(dumps, 2, 20, str(tmp_path / "train.py"))
    (dumps / "nccl_trace_rank_2").write_bytes(hostile_pickles(sentinel)[2])
    read = read_dump_dir(str(dumps))
    assert sorted(read.dumps) == [0, 1]
    (problem,) = read.problems
    assert problem.startswith(f"{dumps / 'nccl_trace_rank_2'}: refused: the pickle uses opcode")
    assert not sentinel.exists()
    done = verify_dumps(dumps, cwd=tmp_path)
    assert "problem: " in done.stdout and "refused" in done.stdout
    assert done.returncode == 1  # ranks 0 and 1 still diverge
    assert not sentinel.exists()


def test_plain_data_reads_as_pickle_would_at_every_protocol() -> None:
    value = {
        "version": "2.10",
        "entries": [{"frames": [{"line": 3, "name": "f"}], "sizes": [[4, 2]], "ok": True}],
        "pg": ("0", "default_pg"),
        "blob": b"\x00\x01",
        "big": -(10**30),
        "ratio": 0.5,
        "none": None,
    }
    for protocol in range(3, pickle.HIGHEST_PROTOCOL + 1):
        assert load_plain(pickle.dumps(value, protocol)) == value
    # protocol 2 (torch's) spells bytes as a call of _codecs.encode: refused, like any call
    del value["blob"]
    assert load_plain(pickle.dumps(value, 2)) == value


def test_a_truncated_pickle_is_damaged_not_unsafe(tmp_path: Path) -> None:
    data = pickle.dumps(rank_dump(0, 2, 30, REMOTE), protocol=2)
    with pytest.raises(PickleError) as caught:
        load_plain(data[: len(data) // 2])
    assert not isinstance(caught.value, UnsafePickle)
    cut = tmp_path / "nccl_trace_rank_0"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(DumpError, match="is a damaged pickle"):
        read_dump(str(cut))


def test_damaged_and_foreign_files_each_get_one_message(tmp_path: Path) -> None:
    dumps = tmp_path / "dumps"
    write_dumps(dumps, 4, 20, REMOTE)
    whole = json.dumps({**rank_dump(1, 4, 20, REMOTE), "entries": []})
    (dumps / "nccl_trace_rank_1").unlink()
    (dumps / "trace_rank_1.json").write_text(whole[: len(whole) // 2])  # truncated JSON
    newer = {**rank_dump(2, 4, 20, REMOTE), "version": "3.0"}
    (dumps / "nccl_trace_rank_2").write_bytes(pickle.dumps(newer, protocol=2))
    unversioned = {k: v for k, v in rank_dump(3, 4, 20, REMOTE).items() if k != "version"}
    (dumps / "nccl_trace_rank_3").write_bytes(pickle.dumps(unversioned, protocol=2))
    (dumps / "README.txt").write_text("dumps of job 42\n")
    (dumps / "empty_rank_5").write_bytes(b"")
    read = read_dump_dir(str(dumps))
    assert sorted(read.dumps) == [0]
    messages = "\n".join(read.problems)
    assert "trace_rank_1.json: is damaged JSON (truncated?)" in messages
    assert "nccl_trace_rank_2: has format version '3.0'; ddplint reads torch's 2.x dumps" in (
        messages
    )
    assert "nccl_trace_rank_3: has no format version" in messages
    assert "README.txt: is not a flight-recorder dump" in messages
    assert "empty_rank_5: is empty" in messages
    assert len(read.problems) == 5


def test_missing_ranks_are_named_and_left_out(tmp_path: Path) -> None:
    dumps = tmp_path / "dumps"
    write_dumps(dumps, 4, 20, REMOTE)
    (dumps / "nccl_trace_rank_1").unlink()  # rank 1 skipped the barrier: its dump is lost
    read = read_dump_dir(str(dumps))
    assert read.problems == ["no dump for rank 1: those ranks are left out of the comparison"]
    (tmp_path / "train.py").write_text(SCRIPT)
    done = verify_dumps(dumps, cwd=tmp_path)
    assert done.returncode == 0, done.stdout  # ranks 0, 2, 3 agree
    assert "No divergence" in done.stdout


def test_an_empty_folder_is_exit_code_2(tmp_path: Path) -> None:
    done = verify_dumps(tmp_path, cwd=tmp_path)
    assert done.returncode == 2
    assert f"problem: {tmp_path}: no flight-recorder dump could be read" in done.stdout
    assert "Result: unreadable (exit code 2)" in done.stdout


def test_ring_buffers_that_dropped_different_entries_pair_by_sequence_id(
    tmp_path: Path,
) -> None:
    """Rank 0 kept its last 500 entries, rank 1 all 2000: the comparison starts at the
    first id both hold, and the split is still the last barrier."""
    dumps = tmp_path / "dumps"
    write_dumps(dumps, 2, 2000, REMOTE)
    shorter = rank_dump(0, 2, 2000, REMOTE)
    shorter["entries"] = shorter["entries"][-500:]
    (dumps / "nccl_trace_rank_0").write_bytes(pickle.dumps(shorter, protocol=2))
    (tmp_path / "train.py").write_text(SCRIPT)
    done = verify_dumps(dumps, "--output-format", "json", cwd=tmp_path)  # as `check` spells it
    data = json.loads(done.stdout)
    (divergence,) = data["divergences"]
    assert (divergence["kind"], divergence["position"]) == ("missing", 2000)
    confirmed = [f for f in data["findings"] if f["status"] == "confirmed_by_dump"]
    # One finding per parting: DDP201 at the rank test, the skipped collective related.
    assert [(f["rule"], f["path"], f["line"]) for f in confirmed] == [("DDP201", "train.py", 10)]


def test_recorded_paths_are_found_under_root(tmp_path: Path) -> None:
    project = tmp_path / "checkout"
    (project / "job").mkdir(parents=True)
    (project / "job" / "train.py").write_text(SCRIPT)
    dumps = tmp_path / "dumps"
    write_dumps(dumps, 2, 20, REMOTE)
    done = verify_dumps(dumps, "--root", str(project), cwd=tmp_path)
    assert "confirmed by the dump" in done.stdout and "DDP201" in done.stdout
    assert "not found under" not in done.stdout
    elsewhere = verify_dumps(dumps, cwd=tmp_path)
    assert "1 recorded file(s) not found under" in elsewhere.stdout
    assert "/workspace/job/train.py" in elsewhere.stdout


UNFLAGGED = """\
import torch
import torch.distributed as dist


def train(steps, stop_at):
    grads = torch.ones(1024)
    for step in range(steps):
        dist.all_reduce(grads)
        if step == stop_at:
            dist.barrier()
"""


def test_a_split_no_rule_explains_is_a_recall_lead(tmp_path: Path) -> None:
    """The barrier's condition is uniform to the linter (``stop_at`` is a parameter),
    yet the dump shows rank 1 never reached it: no finding, a lead for a new rule."""
    (tmp_path / "train.py").write_text(UNFLAGGED)
    dumps = tmp_path / "dumps"
    write_dumps(dumps, 3, 40, REMOTE)
    for rank in range(3):  # the same loop, at this file's lines
        data = rank_dump(rank, 3, 40, REMOTE)
        for entry in data["entries"]:
            entry["frames"][2]["line"] = 10 if "barrier" in entry["profiling_name"] else 8
        (dumps / f"nccl_trace_rank_{rank}").write_bytes(pickle.dumps(data, protocol=2))
    done = verify_dumps(dumps, cwd=tmp_path)
    assert done.returncode == 1
    assert "Static check (0 finding(s) in the recorded files):" in done.stdout
    assert "no rule explains      a rank missed a collective at collective #40" in done.stdout
    assert "a recall lead for ddplint" in done.stdout
    lead = done.stdout.split("a new rule would need:\n", 1)[1].splitlines()
    assert lead[:4] == [
        "      collective: barrier (#40 on the default group)",
        "      line: train.py:10 in train",
        "      reached by ranks 0, 2",
        "      rank 1 did not reach it; its last recorded collective: all_reduce "
        "float32[1024] #39 on the default group at train.py:8 in train [completed]",
    ]


def test_damaged_pickles_fail_with_one_error_kind() -> None:
    """Cut short or with a byte changed anywhere, a dump is read or refused with a
    ``PickleError``: never another exception, never anything run."""
    data = pickle.dumps(rank_dump(0, 2, 3, REMOTE), protocol=2)
    for cut in range(0, len(data), 7):
        with pytest.raises(PickleError):
            load_plain(data[:cut])
    for at in range(0, len(data), 3):
        for value in (0x00, 0x52, 0x63, 0x8A, 0xFF):  # NUL, REDUCE, GLOBAL, LONG1, 0xff
            damaged = data[:at] + bytes([value]) + data[at + 1 :]
            with contextlib.suppress(PickleError):  # read or refused, nothing else
                load_plain(damaged)


def test_a_size_mismatch_is_a_split_at_its_sequence_id(tmp_path: Path) -> None:
    dumps = tmp_path / "dumps"
    write_dumps(dumps, 2, 40, REMOTE)
    data = rank_dump(1, 2, 40, REMOTE)
    data["entries"][9]["input_sizes"] = [[512]]  # sequence id 10
    (dumps / "nccl_trace_rank_1").write_bytes(pickle.dumps(data, protocol=2))
    (tmp_path / "train.py").write_text(SCRIPT)
    done = verify_dumps(dumps, cwd=tmp_path)
    assert (
        "First divergence at collective #10 on the default group: "
        "rank 0: float32[1024], rank 1: float32[512]" in done.stdout
    )
    assert "rank 1  all_reduce float32[512]  at train.py:9 in train" in done.stdout


def test_a_dump_a_real_nccl_build_wrote_reads_with_its_groups_and_barrier() -> None:
    """Recorded on an H100 (fixtures/verify/dumps/recorded/README.md): NCCL names the
    group's members in ``pg_config`` and records a barrier as ``all_reduce_barrier``."""
    dump = read_dump(str(ROOT / "fixtures/verify/dumps/recorded/nccl_trace_rank_0"))
    assert (dump.rank, dump.form, dump.version, dump.skipped_entries) == (
        0,
        "torch pickle",
        "2.10",
        0,
    )
    assert dump.group_ranks == {"0": (0,)}
    assert [(e.op, e.backend, e.seq, e.state) for e in dump.entries] == [
        ("all_reduce", "nccl", 1, "completed"),
        ("broadcast", "nccl", 2, "completed"),
        ("barrier", "nccl", 3, "completed"),
        ("all_gather", "nccl", 4, "completed"),
    ]
    assert dump.entries[2].input_sizes == ((1,),)
    assert [e.frames[-1].line for e in dump.entries] == [13, 14, 15, 17]
    assert {e.frames[-1].file for e in dump.entries} == {"/work/main/.gpu/gpu_dump.py"}
