"""Forms of real fix commits the core's ``where_ranks_part`` answers without project
facts: the rank kept in a field of ``self``, a loop left on this rank's model output, a
sharded or tensor-parallel forward, and ``model = model.module``."""

from __future__ import annotations

import ast
import textwrap

import pytest

from ddplint.analysis.divergence import Source
from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.questions import Parting, where_ranks_part

HEADER = """
import torch
import torch.distributed as dist
from torch.distributed.tensor.parallel import parallelize_module
from torch.nn.parallel import DistributedDataParallel
"""


def _partings(source: str) -> list[Parting]:
    return where_ranks_part(ModuleAnalysis(ast.parse(HEADER + textwrap.dedent(source))))


FIELD = """
class Trainer:
    def __init__(self, args):
        {store}

    def end(self):
        if self.keep <= 0:
            return
        dist.barrier()
"""


@pytest.mark.parametrize(
    ("store", "divergent"),
    [
        ("process = dist.get_rank()\n        self.keep = process % 8", True),
        ("self.rank = dist.get_rank()\n        self.keep = self.rank - 1", True),
        ("self.keep = args.rank == 0", True),
        ("self.keep = 1\n        self.other = 0", False),
        ("self.keep = dist.get_world_size()", False),
        (
            "flag = torch.tensor(dist.get_rank())\n        dist.broadcast(flag, 0)\n"
            "        self.keep = flag.item()",
            False,
        ),
    ],
)
def test_a_field_of_self_carries_what_any_method_stores(store: str, divergent: bool) -> None:
    partings = _partings(FIELD.format(store=store))
    assert bool(partings) is divergent
    if divergent:
        assert partings[0].taint.source is Source.RANK
        assert isinstance(partings[0].cause, ast.Return)


def test_a_field_stored_divergent_anywhere_is_divergent() -> None:
    partings = _partings(
        """
        class Evaluator:
            def __init__(self):
                self.leader = False

            def setup(self):
                self.leader = dist.get_rank() == 0

            def finish(self):
                if self.leader:
                    dist.barrier()
        """
    )
    assert [p.missed.name for p in partings] == ["barrier"]


def test_a_field_bound_again_in_the_method_is_its_new_value() -> None:
    partings = _partings(
        """
        class Trainer:
            def __init__(self):
                self.keep = dist.get_rank()

            def end(self):
                self.keep = 0
                if self.keep:
                    return
                dist.barrier()
        """
    )
    assert partings == []


DECODE = """
def decode(model, prompt, stop_tokens, steps):
    model.eval()
    token = model(prompt).argmax()
    for _ in range(steps):
        {decide}
            break
        token = model(token).argmax()
        dist.barrier()
"""


@pytest.mark.parametrize(
    ("decide", "parts"),
    [
        ("if token.item() in stop_tokens:", True),
        ("if token.tolist()[0] == stop_tokens[0]:", True),
        (
            "stop = torch.tensor([token.item() in stop_tokens])\n"
            "        dist.broadcast(stop, src=0)\n        if stop.item():",
            False,
        ),
        ("if _ > 100:", False),
    ],
)
def test_a_loop_left_on_this_ranks_model_output(decide: str, parts: bool) -> None:
    partings = _partings(DECODE.format(decide=decide))
    assert bool(partings) is parts
    if parts:
        assert partings[0].taint.source is Source.OUTPUT
        assert isinstance(partings[0].cause, ast.Break)


def test_a_call_of_something_not_a_module_is_no_model_output() -> None:
    partings = _partings(
        """
        def decode(sampler, prompt, stop_tokens, steps):
            token = sampler(prompt)
            for _ in range(steps):
                if token.item() in stop_tokens:
                    break
                token = sampler(token)
                dist.barrier()
        """
    )
    assert partings == []


def test_a_loop_without_a_collective_parts_nothing() -> None:
    partings = _partings(
        """
        def decode(model, prompt, stop_tokens, steps):
            model.eval()
            token = model(prompt)
            for _ in range(steps):
                if token.item() in stop_tokens:
                    break
                token = model(token)
            dist.barrier()
        """
    )
    assert partings == []


@pytest.mark.parametrize(
    ("wrap", "collective"),
    [
        ("parallelize_module(model, mesh, plan)", "sharded forward"),
        ("model = DistributedDataParallel(model)", "DistributedDataParallel forward"),
        ("pass", None),
    ],
)
def test_a_parallel_models_forward_is_a_collective(wrap: str, collective: str | None) -> None:
    partings = _partings(
        f"""
        def decode(model, mesh, plan, prompt, steps):
            {wrap}
            out = model(prompt)
            for _ in range(steps):
                if out.sum().item() > 0:
                    break
                out = model(out)
        """
    )
    assert [p.missed.name for p in partings] == ([collective] if collective else [])


@pytest.mark.parametrize(("unwrap", "parts"), [("model = model.module", False), ("pass", True)])
def test_the_plain_model_of_a_ddp_wrapper_syncs_nothing(unwrap: str, parts: bool) -> None:
    partings = _partings(
        f"""
        def evaluate(net, batches):
            model = DistributedDataParallel(net)
            if dist.get_rank() != 0:
                return
            {unwrap}
            for batch in batches:
                model(batch)
        """
    )
    assert bool(partings) is parts


HANDLER = """
def train(net, loader, path):
    model = DistributedDataParallel(net)
    for batch in loader:
        try:
            {body}
        except RuntimeError as error:
            {handler}
        dist.all_reduce(torch.zeros(1))
"""


@pytest.mark.parametrize(
    ("body", "handler", "parts"),
    [
        ("model(batch).backward()", "continue", True),
        ("model(batch).backward()", "break", True),
        ("model(batch).backward()", "return", True),
        ("model(batch).backward()", "raise", False),
        ("state = torch.load(path)", "continue", False),
        ("model(batch).backward()", "dist.all_reduce(torch.zeros(1))\n            continue", False),
    ],
)
def test_an_exception_from_this_ranks_values_is_per_rank(
    body: str, handler: str, parts: bool
) -> None:
    partings = _partings(HANDLER.format(body=body, handler=handler))
    assert bool(partings) is parts
    if parts:
        assert partings[0].taint.source is Source.RAISED
        assert isinstance(partings[0].test, ast.ExceptHandler)
        assert isinstance(partings[0].cause, (ast.Continue, ast.Break, ast.Return))


@pytest.mark.parametrize(
    ("handed", "divergent"),
    [("dist.get_rank()", True), ("dist.get_world_size()", False), ("0", False)],
)
def test_what_the_module_hands_a_constructor_reaches_its_fields(
    handed: str, divergent: bool
) -> None:
    partings = _partings(
        f"""
        class Runner:
            def __init__(self, args, slot):
                self.slot = slot

            def end(self):
                if self.slot <= 0:
                    return
                dist.barrier()


        def main(args):
            Runner(args, {handed}).end()
        """
    )
    assert bool(partings) is divergent


def test_constructors_that_construct_each_other_end() -> None:
    partings = _partings(
        """
        class A:
            def __init__(self, r):
                self.r = r
                self.b = B(r)

            def go(self):
                if self.r:
                    dist.barrier()


        class B:
            def __init__(self, r):
                self.r = r
                self.a = A(r)


        def main():
            A(dist.get_rank())
        """
    )
    assert [p.missed.name for p in partings] == ["barrier"]


REDUCED = """
import os


def reduce_tensor(tensor, count):
    total = tensor.clone()
    dist.all_reduce(total)
    total /= count
    return total


def local_mean(tensor, count):
    dist.barrier()
    return tensor / count


def train(net, loader, world):
    several = int(os.environ.get("WORLD_SIZE", 1)) > 1
    model = DistributedDataParallel(net)
    for batch in loader:
        loss = model(batch)
        {reduced}
        if torch.isnan(reduced).any():
            continue
        loss.backward()
"""


@pytest.mark.parametrize(
    ("reduced", "parts"),
    [
        ("reduced = reduce_tensor(loss, world)", False),
        ("reduced = local_mean(loss, world)", True),
        ("reduced = loss", True),
        (
            "if several:\n            reduced = reduce_tensor(loss, world)\n"
            "        else:\n            reduced = loss",
            False,
        ),
    ],
)
def test_what_reaches_a_local_result_and_one_process_ways(reduced: str, parts: bool) -> None:
    partings = _partings(REDUCED.format(reduced=reduced))
    assert bool(partings) is parts


def test_a_test_whose_other_arm_raises_parts_nothing() -> None:
    partings = _partings(
        """
        def train(model, loader, steps):
            model.train()
            for step in range(steps):
                if step % 10 == 0:
                    dist.barrier()
                loss = model(next(loader))
                if not torch.isfinite(loss).all():
                    raise RuntimeError(f"bad loss {loss.item()}")
                loss.backward()
        """
    )
    assert partings == []


SHARED_UNDER_A_SWITCH = """
def broadcast_object(args, obj, src=0):
    objects = [obj] if args.rank == src else [None]
    dist.broadcast_object_list(objects, src=src)
    return objects[0]

def tidy(args, obj):
    return obj

def main(args):
    found = None
    if args.rank == 0:
        found = probe(args.path)
    if args.distributed:
        found = {call}(args, found)
    start = 0 if found is None else 5
    done = start > 10
    while not done:
        dist.barrier()
        done = True
"""


@pytest.mark.parametrize(("call", "parts"), [("broadcast_object", False), ("tidy", True)])
def test_a_function_that_returns_a_shared_value_makes_its_arm_share(call: str, parts: bool) -> None:
    """A value rank 0 found, handed through a function that broadcasts it and returns
    what every rank received, under a flag every rank answers alike: the other arm (no
    collective) runs in a one-process job, so the value agrees after the join. A function
    that shares nothing leaves it rank 0's."""
    found = _partings(SHARED_UNDER_A_SWITCH.format(call=call))
    assert bool(found) is parts


GATHERED_IN_LOOPS = """
def merge(chunks, sizes, other):
    rank = dist.get_rank()
    if rank == 0:
        {before}
        for m in range(len(chunks)):
            for key in chunks[m]:
                buffers = [torch.zeros(s) for s in sizes]
                dist.gather(chunks[m][key], buffers)
    else:
        for m in range({others}):
            for key in chunks[m]:
                dist.gather(chunks[m][key])
"""


@pytest.mark.parametrize(
    ("before", "others", "parts"),
    [
        # the same loops on both arms: each trip of one pairs with a trip of the other
        ("pass", "len(chunks)", False),
        # the other ranks loop over something else
        ("pass", "len(other)", True),
        # rank 0 re-binds what its loop walks before walking it
        ("chunks = chunks[:1]", "len(chunks)", True),
    ],
)
def test_branches_that_issue_through_the_same_loops_pair(
    before: str, others: str, parts: bool
) -> None:
    found = _partings(GATHERED_IN_LOOPS.format(before=before, others=others))
    assert bool(found) is parts


GLOBAL = """
import os

{binding}


def finish(results):
    if LEADER == 0:
        return results
    dist.barrier()
    return results
{more}
"""


@pytest.mark.parametrize(
    ("binding", "more", "divergent"),
    [
        ('LEADER = int(os.getenv("RANK", -1))', "", True),
        ("LEADER = dist.get_rank()", "", True),
        ('LEADER = int(os.environ["LOCAL_RANK"])', "", True),
        ("LEADER = dist.get_world_size()", "", False),
        ('LEADER = int(os.getenv("RANK", -1))\nLEADER = 0', "", False),
        (
            'LEADER = int(os.getenv("RANK", -1))',
            "\n\ndef reset():\n    global LEADER\n    LEADER = 0\n",
            False,
        ),
    ],
)
def test_a_module_global_bound_once_to_the_rank_is_the_rank_in_functions(
    binding: str, more: str, divergent: bool
) -> None:
    partings = _partings(GLOBAL.format(binding=binding, more=more))
    assert bool(partings) is divergent
    if divergent:
        assert partings[0].taint.source is Source.RANK
        assert isinstance(partings[0].cause, ast.Return)


def test_a_local_binding_shadows_the_rank_global() -> None:
    partings = _partings(
        """
        import os

        LEADER = int(os.getenv("RANK", -1))


        def finish(results):
            LEADER = len(results)
            if LEADER == 0:
                return results
            dist.barrier()
            return results
        """
    )
    assert partings == []


EPOCHS = """
def fit(batches, stopper, epochs):
    for epoch in range(epochs):
        for batch in batches:
            dist.all_reduce(batch)
        if dist.get_rank() == 0:
            {verdict}
"""


@pytest.mark.parametrize(
    ("verdict", "parts"),
    [
        ("if stopper(epoch):\n                break", True),
        ("if stopper(epoch):\n                return", True),
        ("if stopper(epoch):\n                print('stale')", False),
        ("if stopper(epoch):\n                continue", False),
    ],
)
def test_rank_zero_leaving_the_loop_after_trips_skips_the_next_trip(
    verdict: str, parts: bool
) -> None:
    partings = _partings(EPOCHS.format(verdict=verdict))
    assert bool(partings) is parts
    if parts:
        assert partings[0].missed.name == "all_reduce"
        assert isinstance(partings[0].cause, (ast.Break, ast.Return))
