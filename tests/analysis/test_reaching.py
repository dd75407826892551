"""The bindings of a name that reach a point (``analysis.reaching``)."""

from __future__ import annotations

import ast
import textwrap

from ddplint.analysis.control_flow import Graph, Node, build_graph
from ddplint.analysis.reaching import Reaching, bindings_reaching


def _at(source: str, line: int, name: str) -> Reaching:
    """What reaches the node of ``line`` in the first function of ``source``."""
    function = ast.parse(textwrap.dedent(source)).body[0]
    assert isinstance(function, ast.FunctionDef)
    graph = build_graph(function)
    return bindings_reaching(graph, _node_at(graph, line), name)


def _node_at(graph: Graph, line: int) -> Node:
    return next(n for n in graph.nodes if n.line == line and n.statement is not None)


def _lines(reaching: Reaching) -> list[int]:
    return [node.line for node, _ in reaching.bindings]


def test_the_nearest_binding_on_a_straight_way_hides_earlier_ones() -> None:
    reaching = _at(
        """\
        def f(model):
            model = wrap(model)
            model = load(path)
            use(model)
        """,
        4,
        "model",
    )
    assert _lines(reaching) == [3] and not reaching.from_entry
    assert ast.unparse(reaching.bindings[0][1]) == "load(path)"


def test_a_binding_on_one_arm_leaves_the_older_value_reaching_too() -> None:
    reaching = _at(
        """\
        def f(model, again):
            model = wrap(model)
            if again:
                model = load(path)
            use(model)
        """,
        5,
        "model",
    )
    assert _lines(reaching) == [2, 4] and not reaching.from_entry


def test_the_value_the_function_started_with_reaches_when_no_way_binds_it() -> None:
    reaching = _at(
        """\
        def f(model, again):
            if again:
                model = load(path)
            use(model)
        """,
        4,
        "model",
    )
    assert _lines(reaching) == [3] and reaching.from_entry


def test_a_loop_binds_before_the_use_in_its_body_and_around_its_back_edge() -> None:
    source = """\
        def f(model, paths):
            model = wrap(model)
            for path in paths:
                use(model)
                model = load(path)
        """
    assert _lines(_at(source, 4, "model")) == [2, 5]
    inside = _at(
        """\
        def f(model, paths):
            model = wrap(model)
            for path in paths:
                model = load(path)
                use(model)
        """,
        5,
        "model",
    )
    assert _lines(inside) == [4]


def test_targets_without_one_value_give_none() -> None:
    reaching = _at(
        """\
        def f(pairs):
            for model, path in pairs:
                use(model)
        """,
        3,
        "model",
    )
    assert [value for _, value in reaching.bindings] == [None]
    augmented = _at("def f(x):\n    x += 1\n    use(x)\n", 3, "x")
    assert [value for _, value in augmented.bindings] == [None]
