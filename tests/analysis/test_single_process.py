"""Single-process paths of the analysis core: statements a multi-process run never
reaches (the other arm of a test on the process count, a switch tied to it, a local
function called only from there), and the look-alikes that are not (a user's flag, a
rank test, an arm that starts the process group)."""

from __future__ import annotations

import ast
import textwrap

import pytest

from ddplint.analysis.control_flow import NodeKind
from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.project import NO_PROJECT, NoProject, ProjectFacts
from ddplint.analysis.single_process import reads_rank_variable


class _MainAlone(NoProject):
    """A module whose own program (its ``__main__`` block) is one process."""

    def main_runs_alone(self) -> bool:
        return True


def _alone_by_marker(source: str, project: ProjectFacts = NO_PROJECT) -> dict[str, bool]:
    """For each ``mark("name")`` call: whether it runs only single-process."""
    module = ast.parse(textwrap.dedent(source))
    paths = ModuleAnalysis(module, project).single_process
    found: dict[str, bool] = {}
    for node in ast.walk(module):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "mark"
            and isinstance(node.args[0], ast.Constant)
        ):
            found[str(node.args[0].value)] = paths.holds(node)
    return found


MAIN_BLOCKS = """
def check():
    mark("called from the main block")
def shared():
    mark("called from elsewhere too")
def train():
    shared()
if __name__ == "__main__":
    mark("main")
    check()
    shared()
if "__main__" == __name__:
    mark("reversed")
if __name__ != "__main__":
    mark("imported")
def inner():
    if __name__ == "__main__":
        mark("not at the top level")
"""


def test_a_main_block_is_one_process_where_the_module_run_as_a_program_is() -> None:
    alone = _alone_by_marker(MAIN_BLOCKS, _MainAlone())
    assert alone == {
        "called from the main block": True,
        "called from elsewhere too": False,
        "main": True,
        "reversed": True,
        "imported": False,
        "not at the top level": False,
    }
    # Where its own program may be several processes, or the project is not known.
    assert not any(_alone_by_marker(MAIN_BLOCKS).values())


def test_arms_of_tests_on_the_process_count() -> None:
    found = _alone_by_marker(
        """
        import os
        import torch.distributed as dist

        def f(loss):
            if dist.is_initialized():
                mark("initialized")
            else:
                mark("not initialized")
            if dist.get_world_size() > 1:
                mark("several")
            else:
                mark("one")
            if int(os.environ["WORLD_SIZE"]) == 1:
                mark("world of one")
            if dist.is_available() and dist.is_initialized():
                mark("both")
            else:
                mark("neither")
            if dist.get_rank() == 0:
                mark("rank zero")
            else:
                mark("other ranks")
        """
    )
    assert found == {
        "initialized": False,
        "not initialized": True,
        "several": False,
        "one": True,
        "world of one": True,
        "both": False,
        "neither": True,
        "rank zero": False,
        "other ranks": False,
    }


def test_switches_tied_to_the_process_count_and_user_flags() -> None:
    found = _alone_by_marker(
        """
        import os
        import torch.distributed as dist

        def setup(args):
            args.distributed = False
            if "WORLD_SIZE" in os.environ:
                args.distributed = int(os.environ["WORLD_SIZE"]) > 1
            if args.launcher == "none":
                args.ddp = False
            else:
                args.ddp = True
                dist.init_process_group("nccl")
            args.use_fsdp = True

        def train(args):
            if args.distributed:
                mark("distributed")
            else:
                mark("not distributed")
            if not args.ddp:
                mark("no process group")
            if not args.use_fsdp:
                mark("user flag off")
            if not args.unknown:
                mark("unknown flag off")
        """
    )
    assert found == {
        "distributed": False,
        "not distributed": True,
        "no process group": True,
        "user flag off": False,
        "unknown flag off": False,
    }


def test_an_arm_that_starts_the_process_group_is_not_single_process() -> None:
    found = _alone_by_marker(
        """
        import torch.distributed as dist

        def f():
            if not dist.is_initialized():
                dist.init_process_group("nccl")
                mark("starting")
            mark("after")
        """
    )
    assert found == {"starting": False, "after": False}


def test_a_return_for_an_existing_group_before_the_start_is_not_single_process() -> None:
    # Before the group starts, every run answers "is there a group?" no: what follows
    # the early return starts it, and runs in a multi-process job too.
    found = _alone_by_marker(
        """
        import torch.distributed as dist

        def init_distributed(world_size, rank):
            if dist.is_available() and dist.is_initialized():
                return dist.get_world_size(), dist.get_rank()
            mark("before the start")
            dist.init_process_group("nccl", world_size=world_size, rank=rank)
            return world_size, rank

        def report():
            if dist.is_initialized():
                return
            mark("no group here")
        """
    )
    assert found == {"before the start": False, "no group here": True}


def test_what_follows_a_raise_for_several_processes_and_local_callees() -> None:
    found = _alone_by_marker(
        """
        import torch.distributed as dist

        def helper():
            mark("helper")

        def shared():
            mark("shared")

        def f(step):
            try:
                step()
            except RuntimeError:
                if dist.is_initialized():
                    raise
                mark("swallowed")
                helper()
            shared()
            if not dist.is_initialized():
                shared()
        """
    )
    assert found == {"helper": True, "shared": False, "swallowed": True}


@pytest.mark.parametrize(
    ("test", "alone"),
    [
        ("world_size > 1", True),
        ("world_size >= 2", True),
        ("world_size != 1", True),
        ("world_size > 2", False),
        ("world_size == 0", False),
    ],
)
def test_world_size_bounds(test: str, alone: bool) -> None:
    found = _alone_by_marker(
        f"""
        import torch.distributed as dist

        def f():
            world_size = dist.get_world_size() if dist.is_initialized() else 1
            if {test}:
                raise SystemExit(1)
            mark("after")
        """
    )
    assert found == {"after": alone}


def test_swallowing_handlers() -> None:
    module = ast.parse(
        textwrap.dedent(
            """
            import torch.distributed as dist

            def f(model, loader):
                for batch in loader:
                    try:
                        model(batch)
                    except RuntimeError:
                        if dist.is_initialized():
                            raise
                        continue
                    try:
                        model(batch)
                    except ValueError:
                        if dist.get_rank() == 0:
                            raise
                        continue
            """
        )
    )
    paths = ModuleAnalysis(module).single_process
    handlers = sorted(
        (n for n in ast.walk(module) if isinstance(n, ast.ExceptHandler)), key=lambda h: h.lineno
    )
    assert [paths.swallows_alone(h) for h in handlers] == [True, False]


def test_a_parameter_handed_to_the_library_as_the_world_size() -> None:
    found = _alone_by_marker(
        """
        from torch.utils.data import DistributedSampler

        def train(dataset, world_size, rank, batch_size):
            sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank)
            if world_size > 1:
                mark("several")
            else:
                mark("one")
            if batch_size > 1:
                mark("batches")
            else:
                mark("one item")
        """
    )
    assert found == {"several": False, "one": True, "batches": False, "one item": False}


def test_the_divergence_reads_process_count_tests_as_the_paths_do() -> None:
    # One reading of the tests (``asks_several``): the divergence's one-process branch
    # of ``a and b`` and of a flag bound once to a world-size read, as the paths'.
    module = ast.parse(
        textwrap.dedent(
            """
            import torch.distributed as dist

            def f(args):
                if dist.is_available() and dist.is_initialized():
                    pass
                several = args.world_size > 1
                if several:
                    pass
                if args.use_ddp:
                    pass
            """
        )
    )
    analysis = ModuleAnalysis(module)
    function = next(node for node in module.body if isinstance(node, ast.FunctionDef))
    facts = analysis.function(function)
    paths = analysis.single_process
    tests = [
        node
        for node in facts.graph.nodes
        if isinstance(node.statement, ast.If) and node.kind is NodeKind.TEST
    ]
    assert [facts.divergence.one_process_edge(node) for node in tests] == [
        paths.single_process_edge(node) for node in tests
    ]
    assert paths.single_process_edge(tests[2]) is None
    assert all(paths.single_process_edge(node) is not None for node in tests[:2])


@pytest.mark.parametrize(
    ("test", "alone"),
    [
        ("args.local_rank == -1", True),  # the programs' own "not launched distributed"
        ("args.local_rank != -1", False),
        ("int(os.environ['LOCAL_RANK']) < 0", True),
        ("dist.get_rank() >= 0", False),
        ("args.local_rank in [-1, 0]", False),  # rank 0 takes it too: a rank test
        ("args.local_rank == 0", False),
        ("args.local_rank - 1 == -1", False),  # arithmetic on the rank is no launch test
        ("args.world == -1", False),  # not the rank
    ],
)
def test_the_launched_rank_against_minus_one(test: str, alone: bool) -> None:
    found = _alone_by_marker(
        f"""
        import os
        import torch.distributed as dist

        def f(args):
            if {test}:
                mark("taken")
        """
    )
    assert found == {"taken": alone}


@pytest.mark.parametrize(
    ("binding", "test", "alone"),
    [
        # The launcher's rank compared with -1 asks whether a launcher started the run.
        ('WHO = int(os.getenv("RANK", -1))', "WHO == -1", True),
        ('WHO = int(os.environ.get("LOCAL_RANK", -1))', "WHO < 0", True),
        ('WHO = int(os.getenv("RANK", -1))', "WHO == -1 and stop", True),
        ('WHO = int(os.getenv("RANK", -1))', "WHO != -1", False),
        # Which rank, not whether launched: rank 0 of a launched run takes it too.
        ('WHO = int(os.getenv("RANK", -1))', "WHO in (-1, 0)", False),
        ('WHO = int(os.getenv("RANK", -1))', "WHO == 0", False),
        # Not the launcher's variable.
        ('WHO = int(os.getenv("SEED", -1))', "WHO == -1", False),
        # Bound twice, once to something else.
        ('WHO = int(os.getenv("RANK", -1))\nWHO = pick()', "WHO == -1", False),
    ],
)
def test_the_launchers_rank_compared_with_minus_one(binding: str, test: str, alone: bool) -> None:
    found = _alone_by_marker(
        f"import os\n\n{binding}\n\n\ndef f(stop):\n    if {test}:\n        mark('arm')\n"
    )
    assert found == {"arm": alone}


def test_the_launchers_rank_read_in_the_function() -> None:
    found = _alone_by_marker(
        """
        import os

        def f():
            direct = int(os.environ.get("LOCAL_RANK", -1))
            if direct == -1:
                mark("direct")
            if int(os.getenv("RANK", "-1")) == -1:
                mark("inline")
        """
    )
    assert found == {"direct": True, "inline": True}


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ('os.environ["LOCAL_RANK"]', True),
        ('os.environ.get("RANK", "0")', True),
        ('os.getenv("LOCAL_RANK")', True),
        ('os.environ.get("HOME")', False),
        # a key that is a literal but no string (unhashable): no rank read, no crash
        ('os.environ.get(["LOCAL_RANK"], -1)', False),
        ('os.environ[{"RANK": 0}]', False),
    ],
)
def test_the_launcher_rank_variable_is_read_by_its_string_key(
    expression: str, expected: bool
) -> None:
    module = ast.parse(f"import os\n{expression}\n")
    names = ModuleAnalysis(module).names
    value = module.body[-1]
    assert isinstance(value, ast.Expr)
    assert reads_rank_variable(value.value, names) is expected
