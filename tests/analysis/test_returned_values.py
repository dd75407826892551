"""Which parameters reach what a function returns (``returns``), the even shares of a
padded sequence (``shares``) and the clock stamps whose truth is shared
(``divergence``)."""

from __future__ import annotations

import ast
import textwrap

import pytest

from ddplint.analysis.names import Names
from ddplint.analysis.returns import parameters_reaching_returns, returned_reach
from ddplint.analysis.shares import even_strides
from ddplint.code.project.summaries import own_nodes


def _function(source: str) -> tuple[ast.FunctionDef, Names]:
    module = ast.parse(textwrap.dedent(source))
    function = module.body[-1]
    assert isinstance(function, ast.FunctionDef)
    return function, Names(module)


def _reaching(source: str) -> frozenset[str] | None:
    function, names = _function(source)
    parameters = [a.arg for a in function.args.args if a.arg != "self"]
    return parameters_reaching_returns(function, parameters, names)


def test_a_rank_that_only_picks_who_prints_does_not_reach_the_result() -> None:
    source = """
    import os
    def load(model, rank, path):
        if rank == 0:
            print("loading")
        step = int(os.path.basename(path))
        return step
    """
    assert _reaching(source) == {"path"}


@pytest.mark.parametrize(
    "body",
    [
        "return int(path) + rank",  # arithmetic on the parameter
        "shift = rank * 2\n    return shift",  # through a name
        "for r in [rank]:\n        last = r\n    return last",  # through a loop
        "out = {}\n    out[path] = rank\n    return out",  # an item stored
        "out = []\n    out.append(rank)\n    return out",  # a method filling it
        "path = path + rank\n    return path",  # a parameter re-bound in the body
        "return helper(path, rank)",  # a function called, through its arguments
    ],
)
def test_a_parameter_that_flows_into_the_result_reaches_it(body: str) -> None:
    assert "rank" in (_reaching(f"def load(rank, path):\n    {body}\n") or set())


def test_options_and_placement_do_not_reach_the_result() -> None:
    source = """
    import torch
    def make(rank, size):
        return torch.zeros(size, device=rank).to(rank)
    """
    assert _reaching(source) == {"size"}


@pytest.mark.parametrize(
    "body",
    [
        "return dist.get_rank()",  # its own rank read
        "return os.environ['RANK']",
        "return time.time() - path",  # a clock
        "return self.rank",  # a field: not followed
        "return COUNTER + path",  # a module global: not followed
    ],
)
def test_a_result_that_may_read_its_own_values_has_no_summary(body: str) -> None:
    source = f"""
    import os
    import time
    import torch.distributed as dist
    def load(self, path):
        {body}
    """
    assert _reaching(source) is None


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # a receiver filled in a default: ``holder`` takes the rank
        ("def load(rank, path, box=holder.fill(rank)):\n    return holder\n", {"rank"}),
        # a decorator's call fills its receiver too
        ("@holder.fill(rank)\ndef load(rank, path):\n    return holder\n", {"rank"}),
        # what a nested function binds and returns is not this function's
        (
            "def load(rank, path):\n    def inner():\n        x = rank\n        return x\n"
            "    x = path\n    return x\n",
            {"path"},
        ),
        ("def load(rank, path):\n    return (lambda: rank)\n", {"rank"}),
        ("def load(rank, path):\n    pass\n", None),
    ],
)
def test_the_summary_walk_of_the_body_answers_as_the_function_own_walk(
    source: str, expected: set[str] | None
) -> None:
    """The project summary hands its one walk of the body (``summaries.own_nodes``:
    nested scopes not entered, the signature not walked); the answer is the one the
    function's own walk gives, the signature included."""
    function, names = _function(source)
    parameters = [a.arg for a in function.args.args]
    alone = parameters_reaching_returns(function, parameters, names)
    handed = parameters_reaching_returns(function, parameters, names, own_nodes(function))
    assert alone == handed == (None if expected is None else frozenset(expected))


def test_padded_pieces_are_shared_evenly_by_a_factor_of_their_count() -> None:
    function, names = _function(
        """
        import torch
        def share(t, n, k):
            m = k * n
            pieces = torch.nn.functional.pad(t, [0, -len(t) % m]).chunk(m)
            unpadded = t.chunk(m)
            other = torch.nn.functional.pad(t, [0, -len(t) % k]).chunk(m)
            return pieces, unpadded, other
        """
    )
    strides = even_strides(function, names)
    assert set(strides) == {"pieces"}
    assert ast.dump(ast.parse("n", mode="eval").body) in strides["pieces"]


def test_a_function_called_is_read_through_its_arguments() -> None:
    assert _reaching("def load(rank, path):\n    return parse_step(path)\n") == {"path"}


def test_each_item_of_a_returned_tuple_has_its_own_reach() -> None:
    source = """
def resume(args, model, logger, steps_per_epoch):
    logger.info("resuming")
    state = torch.load(args.path)
    model.load_state_dict(state)
    if args.fresh:
        return model, 0
    return model, start_step(state, steps_per_epoch)
"""
    tree = ast.parse(source)
    [function] = tree.body
    assert isinstance(function, ast.FunctionDef)
    parameters = [a.arg for a in function.args.args]
    reach = returned_reach(function, parameters, Names(tree))
    assert reach.items == (
        frozenset({"model", "args"}),
        frozenset({"args", "steps_per_epoch"}),
    )
    assert reach.whole == frozenset({"model", "args", "steps_per_epoch"})
    uneven = ast.parse("def f(a, b):\n    if a:\n        return a, b\n    return a, b, 1\n")
    [odd] = uneven.body
    assert isinstance(odd, ast.FunctionDef)
    assert returned_reach(odd, ["a", "b"], Names(uneven)).items is None
