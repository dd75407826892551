"""Comparing rank traces: divergences by kind, subgroups, call-site mismatches."""

from __future__ import annotations

from ddplint.verify.compare import compare, runtime_problems
from ddplint.verify.frames import Frame
from ddplint.verify.trace import Collective, RankExit, RankTrace

WORLD = (0, 1)


def call(
    rank: int, seq: int, op: str = "all_reduce", line: int = 10, **facts: object
) -> Collective:
    defaults: dict[str, object] = {
        "group": "default",
        "group_ranks": WORLD,
        "time": float(seq),
        "reduce_op": "SUM" if op == "all_reduce" else None,
        "tensors": (("tensor", "float32[4]"),) if op != "barrier" else (),
        "stack": (Frame("/project/train.py", line, "main"),),
        "completed": True,
    }
    defaults.update(facts)
    return Collective(rank=rank, seq=seq, op=op, **defaults)  # type: ignore[arg-type]


def traces(*per_rank: list[Collective], world: int = 2) -> dict[int, RankTrace]:
    return {
        rank: RankTrace(rank=rank, world_size=world, calls=calls, exit=RankExit("ok", 0))
        for rank, calls in enumerate(per_rank)
    }


def test_identical_sequences_do_not_diverge() -> None:
    run = traces([call(0, 1), call(0, 2, "barrier")], [call(1, 1), call(1, 2, "barrier")])
    result = compare(run)
    assert result.divergences == () and result.call_site_mismatches == ()
    assert runtime_problems(result, run, hung=False) == []


def test_missing_collective_names_the_rank_that_never_issued_it() -> None:
    run = traces([call(0, 1), call(0, 2, "barrier", line=31, completed=False)], [call(1, 1)])
    first = compare(run).first
    assert first is not None
    assert (first.kind, first.position) == ("missing", 2)
    by_rank = {at.rank: at for at in first.ranks}
    assert by_rank[0].call is not None and by_rank[0].call.op == "barrier"
    assert by_rank[0].state == "waiting (never completed)"
    assert by_rank[1].call is None and by_rank[1].state == "finished (exit code 0)"


def test_different_ops_at_the_same_position() -> None:
    run = traces([call(0, 1, "barrier", line=26)], [call(1, 1, line=22, asynchronous=True)])
    first = compare(run).first
    assert first is not None and first.kind == "op"
    assert "rank 0: barrier" in first.detail and "rank 1: all_reduce" in first.detail
    assert not first.detail_mode_misses


def test_reduce_op_and_root_mismatches_are_what_detail_mode_misses() -> None:
    reduce_run = traces([call(0, 1, reduce_op="MAX")], [call(1, 1, reduce_op="SUM")])
    first = compare(reduce_run).first
    assert first is not None and first.kind == "reduce_op" and first.detail_mode_misses
    root_run = traces(
        [call(0, 1, "broadcast", roots=(("src", 0),))],
        [call(1, 1, "broadcast", roots=(("src", 1),))],
    )
    first = compare(root_run).first
    assert first is not None and first.kind == "root" and first.detail_mode_misses


def test_shape_mismatch_only_for_ops_that_need_equal_shapes() -> None:
    run = traces(
        [call(0, 1, tensors=(("tensor", "float32[9]"),))],
        [call(1, 1, tensors=(("tensor", "float32[1]"),))],
    )
    first = compare(run).first
    assert first is not None and first.kind == "tensors"
    assert "float32[9]" in first.detail and "float32[1]" in first.detail
    # gather_list exists on the root only: not a mismatch.
    gather = traces(
        [call(0, 1, "gather", tensors=(("tensor", "float32[2]"), ("gather_list", "2 x [...]")))],
        [call(1, 1, "gather", tensors=(("tensor", "float32[2]"),))],
    )
    assert compare(gather).divergences == ()


def test_same_collective_from_different_lines_is_a_call_site_mismatch() -> None:
    run = traces([call(0, 1, "broadcast", line=12)], [call(1, 1, "broadcast", line=14)])
    result = compare(run)
    assert result.divergences == ()
    assert len(result.call_site_mismatches) == 1
    mismatch = result.call_site_mismatches[0]
    assert mismatch.kind == "call_site" and mismatch.detail_mode_misses
    problems = runtime_problems(result, run, hung=False)
    assert [p.kind for p in problems] == ["call_site"]


def test_subgroups_are_compared_among_their_members_only() -> None:
    pair = {"group": "1", "group_ranks": (0, 1)}
    other = {"group": "2", "group_ranks": (2, 3)}
    run = traces(
        [call(0, 1, **pair), call(0, 2, **pair)],
        [call(1, 1, **pair), call(1, 2, **pair)],
        [call(2, 1, **other)],
        [call(3, 1, **other)],
        world=4,
    )
    assert compare(run).divergences == ()
    run[3].calls.append(call(3, 2, **other))
    first = compare(run).first
    assert first is not None and first.group == "2" and first.group_ranks == (2, 3)
    assert first.kind == "missing" and first.position == 2


def test_earliest_divergence_comes_first() -> None:
    late = {"group": "1", "group_ranks": (0, 1)}
    run = traces(
        [call(0, 1, time=5.0, **late), call(0, 2, reduce_op="MAX", time=1.0)],
        [call(1, 1, "barrier", time=5.0, **late), call(1, 2, reduce_op="SUM", time=1.0)],
    )
    first = compare(run).first
    assert first is not None and first.kind == "reduce_op"


def test_hang_without_divergence_and_failures_become_problems() -> None:
    run = traces([call(0, 1)], [call(1, 1)])
    run[0].exit = None
    run[1].exit = None
    from ddplint.verify.trace import ThreadStack

    run[0].main_thread = 7
    run[0].threads = [ThreadStack(7, (Frame("/project/train.py", 40, "main"),))]
    problems = runtime_problems(compare(run), run, hung=True)
    assert [p.kind for p in problems] == ["hang"]
    assert problems[0].location == Frame("/project/train.py", 40, "main")

    failed = traces([call(0, 1)], [call(1, 1)])
    where = (Frame("/project/data.py", 8, "load"),)
    for trace in failed.values():
        trace.exit = RankExit("error", 1, "ValueError: persistent_workers needs workers", where)
    problems = runtime_problems(compare(failed), failed, hung=False)
    assert len(problems) == 1 and problems[0].kind == "error"
    assert problems[0].summary.startswith("ranks 0, 1 failed: ValueError")
