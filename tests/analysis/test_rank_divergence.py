"""The divergence analysis of the core: which values differ between ranks, by facet,
flow-sensitively, and where a collective makes them agree."""

from __future__ import annotations

import ast
import textwrap

import pytest

from ddplint.analysis.divergence import Facet, Source
from ddplint.analysis.functions import ModuleAnalysis

HEADER = """
import os
import time
import torch
import torch.distributed as dist
from tqdm import tqdm
"""


def _taint_at(source: str, expression: str, line_marker: str = "# here"):
    """The taint of ``expression`` read where the statement marked ``# here`` starts."""
    text = HEADER + textwrap.dedent(source)
    tree = ast.parse(text)
    analysis = ModuleAnalysis(tree)
    function = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef))
    facts = analysis.function(function)
    (line,) = [i for i, t in enumerate(text.splitlines(), 1) if line_marker in t]
    (node,) = [n for n in facts.graph.nodes if n.line == line and n.statement is not None]
    return facts.divergence.taint(ast.parse(expression, mode="eval").body, node)


@pytest.mark.parametrize(
    "spelled",
    [
        "dist.get_rank()",
        "int(os.environ['LOCAL_RANK'])",
        "int(os.environ.get('RANK', 0))",
        "trainer.global_rank",
        "accelerator.is_main_process",
    ],
)
def test_the_rank_in_its_spellings_is_a_source(spelled: str) -> None:
    taint = _taint_at(
        f"""
        def f(trainer, accelerator):
            value = {spelled}
            use(value)  # here
        """,
        "value",
    )
    assert taint is not None and taint.source is Source.RANK


def test_a_name_bound_again_is_a_new_value() -> None:
    source = """
    def f(items):
        for i in range(dist.get_rank()):
            items.append(i)
        for i in range(10):
            use(i)  # here
    """
    assert _taint_at(source, "i") is None


def test_a_collective_makes_its_buffer_agree() -> None:
    source = """
    def f():
        flag = torch.tensor(time.time() > 10)
        dist.all_reduce(flag)
        stop = flag.item()
        use(stop)  # here
    """
    assert _taint_at(source, "stop") is None
    assert _taint_at(source.replace("dist.all_reduce(flag)", "pass"), "stop") is not None


def test_a_broadcast_given_by_keyword_agrees_too() -> None:
    source = """
    def f():
        rank = dist.get_rank()
        flag = torch.tensor(float(rank == 0))
        dist.broadcast(tensor=flag, src=0)
        use(flag)  # here
    """
    assert _taint_at(source, "flag") is None


def test_placement_and_keyword_arguments_carry_no_contents() -> None:
    source = """
    def f(loader):
        rank = dist.get_rank()
        state = torch.load("ckpt.pt", map_location=f"cuda:{rank}")
        bar = tqdm(loader, disable=rank != 0)
        device = torch.device(f"cuda:{rank}")
        moved = state["weights"].to(device)
        use(state, bar, moved, device)  # here
    """
    assert _taint_at(source, "state") is None
    assert _taint_at(source, "bar") is None
    assert _taint_at(source, "moved") is None
    device = _taint_at(source, "device")
    assert device is not None and device.facets == Facet.DEVICE


def test_length_of_per_rank_contents_is_uniform_but_a_rank_slice_is_not() -> None:
    source = """
    def f(shards):
        scaled = [s * dist.get_rank() for s in shards]
        mine = shards[dist.get_rank() :: dist.get_world_size()]
        use(scaled, mine)  # here
    """
    assert _taint_at(source, "len(scaled)") is None
    assert _taint_at(source, "scaled") is not None
    assert _taint_at(source, "len(mine)") is not None


def test_a_value_set_under_a_rank_test_differs_after_the_branches_meet() -> None:
    source = """
    def f(loss):
        rank = dist.get_rank()
        stop = False
        if rank == 0 and loss > 3:
            stop = True
        use(stop)  # here
    """
    taint = _taint_at(source, "stop")
    assert taint is not None and taint.source is Source.DECIDED


def test_a_value_chosen_per_rank_differs_in_presence_too() -> None:
    source = """
    def f(make_writer):
        if dist.get_rank() == 0:
            writer = make_writer()
        else:
            writer = None
        use(writer)  # here
    """
    taint = _taint_at(source, "writer is not None")
    assert taint is not None and taint.source is Source.DECIDED


def test_a_name_only_one_arm_binds_is_not_chosen_per_rank() -> None:
    # The other ranks never hold `run_dir`: reading it there stops them loudly.
    source = """
    def f(args):
        if dist.get_rank() == 0:
            run_dir = make(args)
        steps = len(listdir(run_dir))
        use(steps)  # here
    """
    assert _taint_at(source, "steps") is None
    bound_before = """
    def f(args):
        run_dir = None
        if dist.get_rank() == 0:
            run_dir = make(args)
        use(run_dir)  # here
    """
    taint = _taint_at(bound_before, "run_dir")
    assert taint is not None and taint.source is Source.DECIDED


@pytest.mark.parametrize(
    ("receiving", "agrees"),
    [("text = received[0]", True), ("text = received[0] + suffix()", False)],
)
def test_arms_that_broadcast_and_receive_a_value_agree_on_it(receiving: str, agrees: bool) -> None:
    source = f"""
    def f(read):
        if dist.get_rank() == 0:
            text = read()
            dist.broadcast_object_list([text], src=0)
        else:
            received = [None]
            dist.broadcast_object_list(received, src=0)
            {receiving}
        use(text)  # here
    """
    taint = _taint_at(source, "text")
    assert (taint is None) == agrees


def test_an_early_return_on_the_rank_does_not_taint_what_follows() -> None:
    source = """
    def f():
        rank = dist.get_rank()
        if rank != 0:
            return
        count = 3
        use(count)  # here
    """
    assert _taint_at(source, "count") is None


def test_clocks_are_sources_and_file_probes_are_not() -> None:
    """Each rank reads its own clock; a file system is most often shared, so every rank
    reads the same listing (a resume step parsed from ``os.listdir`` is no rank's own)."""
    source = """
    def f(path):
        late = time.time() > 5
        there = os.path.exists(path)
        use(late, there)  # here
    """
    late = _taint_at(source, "late")
    assert late is not None and late.source is Source.PROBE
    assert _taint_at(source, "there") is None


@pytest.mark.parametrize(
    ("test", "differs"),
    [
        ("local_rank != -1", False),
        ("local_rank == -1", False),
        ("local_rank >= 0", False),
        ("local_rank in [-1, 0]", True),
        ("local_rank == 0", True),
        ("local_rank > 0", True),
    ],
)
def test_a_comparison_with_minus_one_asks_whether_the_job_was_launched(
    test: str, differs: bool
) -> None:
    source = """
    def f():
        local_rank = int(os.environ.get("LOCAL_RANK", -1))
        use(local_rank)  # here
    """
    assert (_taint_at(source, test) is not None) == differs


def test_world_size_and_unknown_calls_are_uniform() -> None:
    source = """
    def f(cfg):
        world = dist.get_world_size()
        steps = compute(cfg.steps, world)
        use(steps)  # here
    """
    assert _taint_at(source, "steps") is None


def test_a_parameter_is_the_rank_only_where_mp_spawn_hands_it() -> None:
    spawned = """
    import torch.multiprocessing as mp

    def worker(index, size):
        use(index)  # here

    mp.spawn(worker, args=(2,), nprocs=2)
    """
    assert _taint_at(spawned, "index") is not None
    named_only = """
    def reduce_to(tensor, rank=None):
        use(rank)  # here
    """
    assert _taint_at(named_only, "rank") is None


def test_what_a_rank_hands_to_a_reduction_is_its_own() -> None:
    source = """
    def pending(self):
        count = torch.tensor(len(self.inflight))
        use(self.inflight)  # here
        dist.all_reduce(count)
    """
    taint = _taint_at(source, "len(self.inflight)")
    assert taint is not None and taint.source is Source.CONTRIBUTED
    presence = """
    def sync(grad):
        use(grad)  # here
        dist.all_reduce(grad)
    """
    assert _taint_at(presence, "grad is None") is None
    assert _taint_at(presence, "grad.sum() > 0") is not None


def test_the_join_of_two_reasons_does_not_depend_on_their_order() -> None:
    """A join that kept whichever reason came first never reached a fixed point on a
    diffusers training script (two reasons on one line, swapped on every round)."""
    from ddplint.analysis.divergence import Taint

    one = Taint(Facet.CONTENTS, Source.RANK, 7, "args.local_rank")
    other = Taint(Facet.CONTENTS | Facet.SHAPE, Source.PROBE, 7, "time.time()")
    assert one.joined(other) == other.joined(one)
    assert one.joined(other).joined(one) == one.joined(other)


def test_a_tuple_assigned_element_by_element_taints_each_name_with_its_own_value() -> None:
    source = """
    def train(opt):
        epochs, rank = opt.epochs, int(os.environ["RANK"])
        start, first = time.time(), 0
        use(epochs, rank, start, first)  # here
    """
    assert _taint_at(source, "epochs") is None
    assert _taint_at(source, "rank") is not None
    assert _taint_at(source, "first") is None
    assert _taint_at(source, "start") is not None


@pytest.mark.parametrize(
    ("made", "facet"),
    [
        ("torch.zeros(rank + 1)", Facet.SHAPE),
        ("torch.full((len(mine),), 0.0)", Facet.SHAPE),
        ("torch.arange(rank)", Facet.SHAPE),
        ("torch.tensor(mine)", Facet.SHAPE),
        ("x.new_zeros(rank)", Facet.SHAPE),
        ("torch.ones(4, dtype=torch.float16 if rank == 0 else torch.float32)", Facet.DTYPE),
        ("x.to(torch.half if rank else torch.float)", Facet.DTYPE),
    ],
)
def test_a_tensor_made_from_a_per_rank_size_or_dtype_differs_in_that_facet(
    made: str, facet: Facet
) -> None:
    taint = _taint_at(
        f"""
        def f(x, shards):
            rank = dist.get_rank()
            mine = shards[rank :: dist.get_world_size()]
            t = {made}
            use(t)  # here
        """,
        "t",
    )
    assert taint is not None and taint.facets & facet


@pytest.mark.parametrize(
    "made",
    [
        "torch.tensor([rank, 1.0])",
        "torch.full((4,), float(rank))",
        "torch.zeros(4, device=f'cuda:{rank}')",
        "torch.zeros(4).to(f'cuda:{rank}')",
        "torch.zeros(len(scaled))",
    ],
)
def test_a_tensor_of_one_shape_and_dtype_on_every_rank_has_neither_facet(made: str) -> None:
    taint = _taint_at(
        f"""
        def f(shards):
            rank = dist.get_rank()
            scaled = [s * rank for s in shards]
            t = {made}
            use(t)  # here
        """,
        "t",
    )
    assert taint is None or not taint.facets & (Facet.SHAPE | Facet.DTYPE)


def test_an_item_stored_changes_the_contents_not_the_shape() -> None:
    source = """
    def f(preds, largest):
        mine = preds[dist.get_rank() :: dist.get_world_size()]
        padded = torch.zeros(largest)
        padded[: len(mine)] = torch.tensor(mine)
        use(padded)  # here
    """
    taint = _taint_at(source, "padded")
    assert taint is not None and taint.facets == Facet.CONTENTS


@pytest.mark.parametrize(
    ("other_arm", "facet"),
    [
        ("torch.zeros(8)", Facet.SHAPE),
        ("torch.zeros(4, dtype=torch.float16)", Facet.DTYPE),
        ("torch.zeros(4)", None),
        ("torch.zeros(4, dtype=torch.float)", None),
    ],
)
def test_arms_that_make_a_tensor_of_another_literal_size_or_dtype_differ_in_it(
    other_arm: str, facet: Facet | None
) -> None:
    taint = _taint_at(
        f"""
        def f():
            if dist.get_rank() == 0:
                t = torch.zeros(4)
            else:
                t = {other_arm}
            use(t)  # here
        """,
        "t",
    )
    assert taint is not None and taint.source is Source.DECIDED
    if facet is None:
        assert taint.facets == Facet.CONTENTS
    else:
        assert taint.facets & facet


def test_a_dtype_alone_decides_no_test() -> None:
    source = """
    def f():
        rank = dist.get_rank()
        t = torch.ones(4, dtype=torch.float16 if rank == 0 else torch.float32)
        if t.sum() > 0:  # here
            dist.barrier()
    """
    text = HEADER + textwrap.dedent(source)
    tree = ast.parse(text)
    function = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef))
    facts = ModuleAnalysis(tree).function(function)
    (line,) = [i for i, t in enumerate(text.splitlines(), 1) if "# here" in t]
    (test,) = [n for n in facts.graph.nodes if n.line == line and n.statement is not None]
    assert facts.divergence.taint(ast.parse("t", mode="eval").body, test) is not None
    assert facts.divergence.test_taint(test) is None


@pytest.mark.parametrize(
    ("window", "varies"),
    [
        ("x[rank * k : (rank + 1) * k]", False),
        ("x[start : start + k]", False),
        ("x[start : min(n, start + k)]", True),
        ("x[rank * k : (rank + 2) * k]", True),
        ("x[start : start + rank]", True),
    ],
)
def test_a_window_of_one_width_has_the_same_length_on_every_rank(window: str, varies: bool) -> None:
    source = f"""
    def f(x, k, n):
        rank = dist.get_rank()
        start = rank * k
        mine = {window}
        use(mine)  # here
    """
    assert (_taint_at(source, "len(mine)") is not None) is varies


def test_a_count_read_after_the_reduction_is_not_this_ranks_own() -> None:
    source = """
    def f(outputs):
        center = torch.sum(outputs, dim=0)
        dist.all_reduce(center)
        center = center / len(outputs)
        use(outputs)  # here
    """
    assert _taint_at(source, "outputs") is None
    before = source.replace("center = torch.sum(outputs, dim=0)", "center = len(outputs)")
    assert _taint_at(before, "len(outputs)") is not None


def test_a_comprehension_variable_hides_the_functions_name_of_the_same_spelling() -> None:
    source = """
    def f(params, skipped):
        p = params[dist.get_rank()]
        kept = [p for p in params if p not in skipped]
        use(kept)  # here
    """
    assert _taint_at(source, "len(kept)") is None
    outer = source.replace(
        "[p for p in params if p not in skipped]", "[q for q in params if q != p]"
    )
    assert _taint_at(outer, "len(kept)") is not None  # the filter reads this rank's choice
