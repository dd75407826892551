"""Work handles of asynchronous collectives: which are pending where they matter, and
which are waited, handed on or settled (both ways, on small functions)."""

from __future__ import annotations

import ast
import textwrap

import pytest

from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.handles import Pending, unwaited_handles

HEADER = """
import torch
import torch.distributed as dist
"""


def _found(source: str) -> list[tuple[str, Pending, int]]:
    """(collective, how, line in the snippet) of every unwaited handle."""
    text = HEADER + textwrap.dedent(source)
    offset = HEADER.count("\n")
    found = unwaited_handles(ModuleAnalysis(ast.parse(text)))
    return [(f.issued.name, f.how, f.line - offset) for f in found]


def test_output_read_before_wait():
    assert _found(
        """
        def f(t):
            h = dist.all_reduce(t, async_op=True)
            print(t.sum())
            h.wait()
        """
    ) == [("all_reduce", Pending.READ, 4)]


def test_output_read_after_wait_is_fine():
    assert not _found(
        """
        def f(t):
            h = dist.all_reduce(t, async_op=True)
            h.wait()
            print(t.sum())
        """
    )


def test_wait_on_one_branch_only():
    assert _found(
        """
        def f(t, c):
            h = dist.all_reduce(t, async_op=True)
            if c:
                h.wait()
            return t
        """
    ) == [("all_reduce", Pending.READ, 6)]


def test_discarded_then_slice_read():
    assert _found(
        """
        def f(buf, n):
            dist.all_reduce(buf[:n], async_op=True)
            buf.div_(2)
        """
    ) == [("all_reduce", Pending.READ, 4)]


def test_rebound_in_loop():
    assert _found(
        """
        def f(params):
            for p in params:
                h = dist.all_reduce(p.grad, async_op=True)
            h.wait()
        """
    ) == [("all_reduce", Pending.REBOUND, 4)]


def test_never_waited_and_discarded():
    assert _found(
        """
        def f(t, peer):
            req = dist.isend(t, peer)
            dist.barrier(async_op=True)
        """
    ) == [("isend", Pending.UNWAITED, 2), ("barrier", Pending.DISCARDED, 2)]


@pytest.mark.parametrize(
    "source",
    [
        # a list appended to, then waited item by item
        """
        def f(ts):
            works = []
            for t in ts:
                works.append(dist.all_reduce(t, async_op=True))
            for w in works:
                w.wait()
        """,
        # a comprehension of handles, waited by a comprehension
        """
        def f(ts):
            hs = [dist.all_reduce(t, async_op=True) for t in ts]
            [h.wait() for h in hs]
        """,
        # returned, stored, passed on, made a future, waited by a nested function
        """
        def f(t):
            h = dist.all_reduce(t, async_op=True)
            return h
        """,
        """
        def f(self, t):
            h = dist.all_reduce(t, async_op=True)
            self.pending = h
        """,
        """
        def f(t, wait_all):
            h = dist.all_reduce(t, async_op=True)
            wait_all([h])
            return t
        """,
        """
        def f(t):
            fut = dist.all_reduce(t, async_op=True).get_future()
            return fut
        """,
        """
        def f(t):
            h = dist.all_reduce(t, async_op=True)
            def done():
                h.wait()
            return done
        """,
        # None on a rank outside the group
        """
        def f(t, g):
            h = dist.broadcast(t, 0, group=g, async_op=True)
            if h is not None:
                h.wait()
            return t
        """,
        # the device waits for everything
        """
        def f(t):
            dist.all_reduce(t, async_op=True)
            torch.cuda.synchronize()
            return t
        """,
        # a blocking barrier ends after the group's earlier collectives
        """
        def f(t):
            h = dist.all_reduce(t, async_op=True)
            dist.barrier()
            return t.item()
        """,
        # items of the list waited by index in a loop (no trip: no items)
        """
        def f(ts, n):
            requests = [dist.irecv(t, 0) for t in ts]
            for i in range(n):
                requests[i].wait()
        """,
        # issued and waited under the same test
        """
        def backward(ctx, grad_input, weight):
            if ctx.async_grad_allreduce:
                handle = dist.all_reduce(grad_input, async_op=True)
            grad_weight = weight.t()
            if ctx.async_grad_allreduce:
                handle.wait()
            return grad_input, grad_weight
        """,
        # the next collective on the same list (a group runs them in order)
        """
        def f(params, world):
            futures = []
            for i in range(0, len(params), world):
                futures.append(dist.all_gather(params[i:i + world], params[i], async_op=True))
            for fut in futures:
                fut.wait()
        """,
        # metadata is known before the data
        """
        def f(out, inp):
            h = dist.all_gather_into_tensor(out, inp, async_op=True)
            n = out.shape[0]
            h.wait()
            return out[:n]
        """,
        # not async, or not torch.distributed
        """
        def f(t, comm):
            dist.all_reduce(t)
            dist.all_reduce(t, async_op=False).wait()
            comm.all_reduce(t, async_op=True)
            return t
        """,
    ],
)
def test_waited_or_handed_on(source: str):
    assert not _found(source)


def test_resolution_follows_imports():
    assert _found(
        """
        from torch.distributed import all_reduce as ar

        def f(t):
            ar(t, None, None, True)
            return t
        """
    ) == [("all_reduce", Pending.READ, 6)]


def test_deepspeed_comm_counts():
    assert _found(
        """
        from deepspeed import comm as ds_comm

        def f(t):
            work = ds_comm.all_reduce(t, async_op=True)
            return t * 2
        """
    ) == [("all_reduce", Pending.READ, 6)]
