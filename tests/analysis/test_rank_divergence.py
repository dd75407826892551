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
    """The taint of ``expression`` read where the statement marked ``# here`` starts
    (in the function that holds the mark)."""
    text = HEADER + textwrap.dedent(source)
    tree = ast.parse(text)
    analysis = ModuleAnalysis(tree)
    (marked,) = [i for i, t in enumerate(text.splitlines(), 1) if line_marker in t]
    function = min(
        (
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.FunctionDef) and n.lineno <= marked <= (n.end_lineno or 0)
        ),
        key=lambda n: (n.end_lineno or 0) - n.lineno,
    )
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
        assert taint.facets & Facet.CONTENTS and not taint.facets & (Facet.SHAPE | Facet.DTYPE)
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


# -- values every rank holds alike though the analysis once read them as divergent ----


OUTPUTS = """
def f(model, batch, names):
    model.eval()
    outputs = model(batch)
    loss = outputs["loss"]
    summed = {name: outputs[name].sum() for name in names}
    per_rank = {outputs["id"].item(): 1.0 for _ in names}
    use(loss, summed, per_rank)  # here
"""


@pytest.mark.parametrize(
    ("read", "differs"),
    [
        ('"aux" in outputs', False),
        ('"aux" not in outputs', False),
        ('outputs.get("aux") is not None', False),
        ("len(outputs)", False),
        ("sorted(outputs)", False),
        ("list(outputs.keys())", False),
        ('"loss" in summed', False),
        ("len(summed)", False),
        ("list(summed)", False),
        ("outputs", True),
        ('outputs["aux"]', True),
        ('outputs["loss"].item() > 0', True),
        ("summed", True),
        ("1.0 in per_rank", True),
        ("len(per_rank)", True),
        ("per_rank.keys()", True),
        ("loss.item() in [0, 1]", True),
    ],
)
def test_a_model_outputs_keys_are_the_same_on_every_rank(read: str, differs: bool) -> None:
    """The model's code decides which keys its output holds, the data what they hold;
    a mapping built over names every rank shares has the same keys too."""
    assert (_taint_at(OUTPUTS, read) is not None) is differs


def test_iterating_a_mapping_yields_its_keys_and_items_its_values() -> None:
    source = """
    def f(model, batch):
        model.eval()
        outputs = model(batch)
        for key in outputs:
            use(key)  # keys
        for key, value in outputs.items():
            use(key, value)  # items
        means = {k: v.mean() for k, v in outputs.items()}
        use(means)  # here
    """
    assert _taint_at(source, "key", "# keys") is None
    assert _taint_at(source, "key", "# items") is None
    assert _taint_at(source, "value", "# items") is not None
    assert _taint_at(source, '"loss" in means') is None
    assert _taint_at(source, 'means["loss"]') is not None


@pytest.mark.parametrize(
    ("member", "differs"),
    [('"nan" in text', True), ("0 in shard", True), ("name in tags", False)],
)
def test_membership_in_a_sequence_reads_what_it_holds(member: str, differs: bool) -> None:
    """A list, tensor or string is no mapping: ``x in c`` reads its members."""
    source = """
    def f(model, batch, decode, tags):
        model.eval()
        text = decode(model(batch))
        shard = list(range(10))[dist.get_rank() :: 2]
        name = "x"
        use(text, shard, name)  # here
    """
    assert (_taint_at(source, member) is not None) is differs


@pytest.mark.parametrize(
    ("store", "differs"),
    [
        ("counts[name] = loss", False),
        ("counts[dist.get_rank()] = 1", True),
        ("counts.setdefault(dist.get_rank(), 1)", False),  # unknown calls do not store
    ],
)
def test_a_key_stored_that_differs_between_ranks_changes_a_mappings_keys(
    store: str, differs: bool
) -> None:
    source = f"""
    def f(loss, name):
        counts = {{}}
        {store}
        use(counts)  # here
    """
    assert (_taint_at(source, '"x" in counts') is not None) is differs


@pytest.mark.parametrize(
    "derived",
    [
        "count",
        "count.item()",
        "count.item() > 0",
        "int(count)",
        "bool(count)",
        "count.tolist()",
        "count > 0",
        "float(count) / world + 1",
        "flag",
        "total",
    ],
)
def test_what_is_computed_from_an_agreed_value_agrees(derived: str) -> None:
    source = """
    def f(model, batch):
        model.eval()
        count = torch.tensor(float(model(batch).isnan().any()))
        world = dist.get_world_size()
        work = dist.all_reduce(count, async_op=True)
        work.wait()
        flag = count.item() > 0
        total = int(count) * world
        use(flag, total)  # here
    """
    assert _taint_at(source, derived) is None
    # Without the collective every one of them is this rank's own.
    unreduced = source.replace("work = dist.all_reduce(count, async_op=True)", "work = None")
    assert _taint_at(unreduced, derived) is not None


@pytest.mark.parametrize(
    ("helper", "call", "agrees"),
    [
        ("def sync(x):\n    dist.all_reduce(x)\n    return x", "flag = sync(flag)", True),
        ("def sync(x):\n    dist.all_reduce(x)", "sync(flag)", True),
        (
            "def sync(x):\n    x = x.clone()\n    dist.all_reduce(x)",
            "sync(flag)",
            False,  # the agreed tensor is a copy: the caller's is unchanged
        ),
        ("def sync(x):\n    dist.barrier()\n    return x", "flag = sync(flag)", False),
        (
            "def sync(x):\n    t = torch.tensor(float(x))\n    dist.all_reduce(t)\n"
            "    return t.item() > 0",
            "flag = sync(flag)",
            True,
        ),
    ],
)
def test_a_local_helper_that_reduces_its_argument_makes_it_agree(
    helper: str, call: str, agrees: bool
) -> None:
    source = f"""
{helper}


def f(model, batch):
    model.eval()
    flag = torch.tensor(float(model(batch).sum() > 3))
    {call}
    use(flag)  # here
"""
    assert (_taint_at(source, "flag") is None) is agrees


def test_a_method_that_reduces_its_argument_makes_it_agree() -> None:
    source = """
    class Trainer:
        def _any(self, flag):
            dist.all_reduce(flag, op=dist.ReduceOp.MAX)
            return flag.item() > 0

        def _mine(self, flag):
            dist.barrier()
            return flag.item() > 0

        def step(self, model, batch):
            model.eval()
            flag = torch.tensor(float(model(batch).sum() > 3))
            own = self._mine(flag)  # a barrier: the flag is still this rank's
            stop = self._any(flag)
            use(stop, own)  # here
    """
    assert _taint_at(source, "stop") is None
    assert _taint_at(source, "own") is not None
    # Another class's method of the same name is not the one this class calls.
    other = """
    class Reducer:
        def _any(self, flag):
            dist.all_reduce(flag)
            return flag.item() > 0

    class Trainer:
        def _any(self, flag):
            dist.barrier()
            return flag.item() > 0

        def step(self, model, batch):
            model.eval()
            flag = torch.tensor(float(model(batch).sum() > 3))
            stop = self._any(flag)
            use(stop)  # here
    """
    assert _taint_at(other, "stop") is not None


@pytest.mark.parametrize(
    ("read", "differs"),
    [
        ("gathered", False),
        ("any(g.item() for g in gathered)", False),
        ("torch.cat(gathered).sum() > 0", False),
        ("all(x == gathered[0] for x in gathered)", False),
        ("max(gathered)", False),
        ("objects", False),
        ("max(len(o) for o in objects)", False),
        ("out.sum() > 0", False),
        ("functional.sum() > 0", False),
        ("gathered[rank]", True),
        ("objects[rank]", True),
        ("shard.sum() > 0", True),
    ],
)
def test_the_whole_result_of_a_gather_agrees(read: str, differs: bool) -> None:
    source = """
    import torch.distributed._functional_collectives as funcol

    def f(model, batch):
        model.eval()
        rank = dist.get_rank()
        t = model(batch).sum()
        world = dist.get_world_size()
        gathered = [torch.zeros_like(t) for _ in range(world)]
        dist.all_gather(gathered, t)
        objects = [None] * world
        dist.all_gather_object(objects, t.tolist())
        out = torch.empty(world, device=t.device)
        dist.all_gather_into_tensor(out, t)
        functional = funcol.all_reduce(t, "sum", None)
        shard = funcol.reduce_scatter_tensor(out, "sum", 0, None)
        use(gathered)  # here
    """
    assert (_taint_at(source, read) is not None) is differs


@pytest.mark.parametrize(
    ("imports", "gather", "differs"),
    [
        ("", "accelerator.gather(t)", False),
        ("", "accelerator.gather_for_metrics(t)", False),
        ("", "t * 2", True),
        # a library's gather, by its qualified name
        ("from accelerate.utils import gather", "gather(t)", False),
        ("from accelerate.utils.operations import reduce", "reduce(t)", False),
        ("from accelerate import utils", "utils.gather_object(t.tolist())", False),
        ("from composer.utils import dist as cdist", "cdist.all_gather_object(t.tolist())", False),
        ("from composer.utils import dist as cdist", "cdist.get_local_rank() + t", True),
        ("from mylib import gather", "gather(t)", True),  # unknown: carries its argument
    ],
)
def test_a_framework_or_library_gather_agrees(imports: str, gather: str, differs: bool) -> None:
    source = f"""
    from accelerate import Accelerator
    {imports}

    def f(model, batch):
        accelerator = Accelerator()
        model.eval()
        t = model(batch)
        every = {gather}
        use(every)  # here
    """
    assert (_taint_at(source, "every") is not None) is differs


def test_a_lightning_all_gather_agrees() -> None:
    source = """
    import lightning as L

    class Module(L.LightningModule):
        def validation_step(self, batch, index):
            mine = torch.tensor(float(time.time()))
            every = self.all_gather(mine)
            use(every)  # here
    """
    # (``> 1``: a clock tested only for ``> 0`` reads whether it was read at all)
    assert _taint_at(source, "every.sum() > 1") is None
    assert _taint_at(source, "mine.sum() > 1") is not None
    assert _taint_at(source, "mine.sum() > 0") is None


def test_fields_of_one_object_are_separate() -> None:
    source = """
    class Trainer:
        def __init__(self):
            self.leader = dist.get_rank() == 0
            self.epochs = 3

        def mark(self, loss):
            self.last = loss
            self.seen = 0

        def run(self, job):
            job.owner = dist.get_rank()
            job.size = 4
            use(job)  # here
    """
    assert _taint_at(source, "self.leader") is not None
    assert _taint_at(source, "self.epochs") is None
    assert _taint_at(source, "self.seen") is None
    assert _taint_at(source, "self.never_written") is None
    assert _taint_at(source, "job.owner") is not None
    assert _taint_at(source, "job.size") is None
    assert _taint_at(source, "job.other") is None


@pytest.mark.parametrize(
    ("computed", "differs"),
    [
        ("pick(size, device=device)", False),
        ("pick(size, logger=writer)", False),
        ("helper.pick(size, device=device)", False),
        ("pick(rank, device=device)", True),
        ("helper.pick(rank)", True),
        ("pick(*[rank])", True),
    ],
)
def test_an_unknown_call_carries_its_positional_data_not_its_keyword_options(
    computed: str, differs: bool
) -> None:
    source = f"""
    def f(size, pick, helper, make_writer):
        rank = dist.get_rank()
        device = torch.device(f"cuda:{{rank}}")
        writer = make_writer() if rank == 0 else None
        root = {computed}
        use(root)  # here
    """
    assert (_taint_at(source, "root") is not None) is differs


def test_zip_and_enumerate_bind_each_part_from_its_own_iterable() -> None:
    source = """
    def f(model, batch, names):
        model.eval()
        outputs = model(batch)
        by_name = {name: out for name, out in zip(names, outputs)}
        by_index = {i: out for i, out in enumerate(outputs)}
        for name, out in zip(names, outputs):
            use(name, out)  # here
    """
    assert _taint_at(source, "name") is None
    assert _taint_at(source, "out") is not None
    assert _taint_at(source, "len(by_name)") is None
    assert _taint_at(source, "len(by_index)") is None
    mine = source.replace("zip(names, outputs)", "zip(outputs, names)")
    assert _taint_at(mine, "len(by_name)") is not None  # keyed by this rank's outputs


@pytest.mark.parametrize(
    ("scalar", "shaped"),
    [("sum(sizes)", False), ("max(sizes)", False), ("int(len(sizes))", False), ("sizes", True)],
)
def test_a_number_computed_from_a_per_rank_list_has_no_shape_of_its_own(
    scalar: str, shaped: bool
) -> None:
    source = f"""
    def f(items):
        mine = items[dist.get_rank() :: 3]
        sizes = [len(x) for x in mine]
        total = {scalar}
        use(total)  # here
    """
    taint = _taint_at(source, "total")
    assert taint is not None and bool(taint.facets & Facet.SHAPE) is shaped
    if not shaped:
        made = _taint_at(source, "torch.tensor([total])")
        assert made is not None and not made.facets & Facet.SHAPE


@pytest.mark.parametrize(
    ("test", "differs"),
    [
        ("started > 0", False),
        ("0 < started", False),
        ("started != 0", False),
        ("started > 5.0", True),
        ("started == 2.0", True),
        ("rank > 0", True),
    ],
)
def test_a_clock_tested_only_for_being_read_is_shared(test: str, differs: bool) -> None:
    source = """
    def f():
        rank = dist.get_rank()
        started = time.time()
        use(started)  # here
    """
    assert (_taint_at(source, test) is not None) is differs


@pytest.mark.parametrize(
    ("other_arm", "differs"),
    [("pass", False), ("dist.barrier()", True)],
)
def test_an_arm_that_shares_nothing_beside_one_that_shares_runs_one_process(
    other_arm: str, differs: bool
) -> None:
    source = f"""
    def f(opts):
        stop = time.time() > opts.budget if dist.get_rank() == 0 else False
        if opts.num_gpus > 1:
            flag = torch.tensor(stop)
            dist.broadcast(flag, 0)
            stop = flag.item()
        else:
            {other_arm}
        use(stop)  # here
    """
    assert (_taint_at(source, "stop") is not None) is differs


def test_whether_a_contribution_is_a_tensor_is_shared() -> None:
    source = """
    def f(value):
        kind = torch.is_tensor(value)  # here
        dist.all_reduce(value)
    """
    assert _taint_at(source, "torch.is_tensor(value)") is None
    assert _taint_at(source, "value + 1") is not None


def test_a_mapping_unpacked_into_a_call_reaches_its_result_where_a_keyword_does_not() -> None:
    unpacked = _taint_at(
        """
        def f(load, path):
            given = {"shard": dist.get_rank()}
            out = load(path, **given)
            use(out)  # here
        """,
        "out",
    )
    option = _taint_at(
        """
        def f(load, path):
            out = load(path, shard=dist.get_rank())
            use(out)  # here
        """,
        "out",
    )
    assert unpacked is not None and unpacked.source is Source.RANK
    assert option is None


def test_whether_autograd_tracks_a_value_is_alike_on_every_rank() -> None:
    source = """
        def f(model, x):
            loss = model(x) * dist.get_rank()
            use(loss)  # here
        """
    assert _taint_at(source, "loss") is not None
    assert _taint_at(source, "loss.requires_grad") is None
    assert _taint_at(source, "loss.is_leaf") is None


def test_a_test_divergent_in_an_earlier_round_only_ends_the_solve() -> None:
    """The rounds of the solve need not grow: a loop step taken apart in one round (its
    iterable decided by a stamped clock's test) reaches the next round agreed. The solve
    ends, and that step is uniform in the answer (it once stopped the module with an
    internal error: a reinforcement-learning script's top level)."""
    text = textwrap.dedent(
        """
        import time
        import numpy as np
        import torch

        run_name = f"run__{int(time.time())}"
        envs = make_envs(run_name)
        if not max_steps:
            max_steps = envs.max_steps
        if max_steps <= 0:
            max_steps = 1024
        memory = torch.zeros((4, max_steps))
        for iteration in range(10):
            with torch.no_grad():
                window = select(memory, 1)
                action, new_memory = agent.act(observation, window)
            observation, terminations, truncations = envs.step(action)
            finished = np.logical_or(terminations, truncations)
            for index, done in enumerate(finished):  # step
                if done:
                    memories[index] = memories[index].clone()
        """
    )
    tree = ast.parse(text)
    facts = ModuleAnalysis(tree).function(tree)
    (line,) = [i for i, t in enumerate(text.splitlines(), 1) if "# step" in t]
    (step,) = [n for n in facts.graph.nodes if n.line == line and n.statement is not None]
    assert facts.divergence.test_taint(step) is None


PRESENCE = """
def f(a, b):
    rank = dist.get_rank()
    {made}
    if x is None:  # here
        pass
"""


@pytest.mark.parametrize(
    ("made", "divergent"),
    [
        # which object the name holds at all was chosen by the rank
        ("x = open(a) if rank == 0 else None", True),
        ("x = None\n    if rank == 0:\n        x = open(a)", True),
        ("if rank == 0:\n        a = b\n    x = a", True),
        # a call's result is the call's own object, whatever the rank chose as its input
        ("if rank == 0:\n        a = b\n    x = open(a)", False),
        ("if rank == 0:\n        a = b\n    x = os.path.join(a, 'm.onnx').strip()", False),
        ("x = open(a)", False),
    ],
)
def test_whether_a_name_holds_a_value(made: str, divergent: bool) -> None:
    """``x is None`` differs between ranks where the rank chose which value ``x`` holds,
    not where it only chose what went into the call that made it."""
    found = _taint_at(PRESENCE.format(made=made), "x is None")
    assert (found is not None) is divergent
    if divergent:
        assert found is not None and found.facets == Facet.CONTENTS


TYPED = """
def f():
    size = {made}
    if dist.get_rank() == 0:
        data = torch.zeros(dist.get_rank() + 1)
        size{fill}
    use(size)  # here
"""


@pytest.mark.parametrize(
    ("made", "fill", "shape_differs"),
    [
        # a legacy typed constructor makes a tensor: an item set on rank 0 changes what
        # it holds, never its shape
        ("torch.LongTensor(1).cuda()", "[0] = data.shape[0]", False),
        ("torch.cuda.LongTensor([0])", "[0] = data.shape[0]", False),
        ("torch.zeros(1, dtype=torch.long)", "[0] = data.shape[0]", False),
        # a list filled on rank 0 only is longer there
        ("[]", ".append(data.shape[0])", True),
    ],
)
def test_an_item_set_on_some_ranks_changes_a_tensor_not_its_shape(
    made: str, fill: str, shape_differs: bool
) -> None:
    found = _taint_at(TYPED.format(made=made, fill=fill), "size")
    assert (found is not None and bool(found.facets & Facet.SHAPE)) is shape_differs


@pytest.mark.parametrize(
    ("made", "shape_differs"),
    [
        ("torch.LongTensor(len(data))", True),  # sizes: the rank's own length
        ("torch.LongTensor([len(data)])", False),  # one item: the rank's length inside
        ("torch.FloatTensor(data.tolist())", True),  # data: this rank's list
        ("torch.LongTensor(4)", None),  # a literal size: the same tensor everywhere
    ],
)
def test_typed_constructors_take_sizes_or_data(made: str, shape_differs: bool | None) -> None:
    source = f"""
    def f():
        data = torch.zeros(dist.get_rank() + 1)
        t = {made}
        use(t)  # here
    """
    found = _taint_at(source, "t")
    if shape_differs is None:
        assert found is None
    else:
        assert found is not None and bool(found.facets & Facet.SHAPE) is shape_differs


STAMPED = """
def f(root, make_env, gym):
    run_name = f"{{root}}__{{int(time.time())}}"
    {made}
    use(value)  # here
"""


@pytest.mark.parametrize(
    ("made", "stamped"),
    [
        # text built from the stamp keeps it: its contents differ between ranks
        ("value = os.path.join(root, run_name)", True),
        ("value = run_name.upper()", True),
        ("value = '/'.join([root, run_name])", True),
        # a stamped text handed to a call as a name or label: what the call makes is not
        # the text, and does not differ by the clock (a vector env, a logger, a model)
        ("envs = make_env(run_name)\n    value = envs.envs[0].spec.max_episode_steps", False),
        ("value = gym.make(run_name).spec.max_episode_steps", False),
    ],
)
def test_a_stamp_stays_in_text(made: str, stamped: bool) -> None:
    found = _taint_at(STAMPED.format(made=made), "value")
    assert (found is not None and found.source is Source.STAMP) is stamped
