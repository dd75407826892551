"""Hand cases for the control-flow graph and the post-dominators built on it."""

from __future__ import annotations

import ast
import textwrap

from ddplint.analysis.control_flow import (
    EdgeKind,
    Graph,
    Node,
    NodeKind,
    ScopeGraphs,
    build_graph,
    takes_a_turn,
)
from ddplint.analysis.dominance import PostDominance


def _graph(source: str) -> Graph:
    tree = ast.parse(textwrap.dedent(source))
    function = tree.body[0]
    assert isinstance(function, ast.FunctionDef)
    return build_graph(function)


def _at(graph: Graph, line: int) -> Node:
    (node,) = [n for n in graph.nodes if n.line == line and n.kind is not NodeKind.WITH_EXIT]
    return node


def _successor_lines(node: Node, *, exceptions: bool = False) -> set[int | str]:
    found: set[int | str] = set()
    for successor, edge in node.successors:
        if edge is EdgeKind.EXCEPTION and not exceptions:
            continue
        found.add(successor.kind.value if successor.statement is None else successor.line)
    return found


def test_a_return_inside_try_finally_runs_its_own_copy_of_the_finally_body() -> None:
    graph = _graph(
        """
        def f(a):
            try:
                if a:
                    return 1
                x = 2
            finally:
                cleanup()
            after()
        """
    )
    cleanups = [n for n in graph.nodes if n.line == 8 and n.kind is NodeKind.STATEMENT]
    assert len(cleanups) == 3  # normal way out, the return's, an exception's
    returning = _at(graph, 5)
    (copy,) = [s for s, e in returning.successors if e is EdgeKind.RETURN]
    # The return's copy goes on to the exit, never to after().
    assert _successor_lines(copy) == {"exit"}
    assert 9 in {s.line for n in cleanups for s, _ in n.successors}


def test_break_leaves_through_the_with_exit_and_skips_the_loop_else() -> None:
    graph = _graph(
        """
        def f(items):
            for item in items:
                with lock:
                    if item:
                        break
            else:
                finished()
            done()
        """
    )
    breaking = _at(graph, 6)
    (with_exit,) = [s for s, _ in breaking.successors]
    assert with_exit.kind is NodeKind.WITH_EXIT
    assert _successor_lines(with_exit) == {9}
    step = _at(graph, 3)
    assert 8 in _successor_lines(step)  # the else runs when the loop is exhausted


def test_assert_raise_and_sys_exit_are_exits_the_code_spells() -> None:
    graph = _graph(
        """
        def f(a):
            assert a
            if a > 1:
                sys.exit(1)
            raise ValueError(a)
        """
    )
    asserting = _at(graph, 3)
    assert {(s.kind, e) for s, e in asserting.successors if e is EdgeKind.RAISE} == {
        (NodeKind.RAISE, EdgeKind.RAISE)
    }
    exiting = _at(graph, 5)
    assert [e for _, e in exiting.successors if e is not EdgeKind.EXCEPTION] == [EdgeKind.RAISE]
    assert _successor_lines(_at(graph, 6)) == {"raise"}


def test_exceptions_reach_the_handlers_and_a_swallowing_with() -> None:
    graph = _graph(
        """
        def f():
            try:
                with suppress(KeyError):
                    work()
                more()
            except ValueError:
                recover()
        """
    )
    work = _at(graph, 5)
    (unwind,) = [s for s, e in work.successors if e is EdgeKind.EXCEPTION]
    assert unwind.kind is NodeKind.WITH_EXIT
    # __exit__ may swallow (go on after the with) or re-raise (to the handlers).
    kinds = {s.kind for s, _ in unwind.successors}
    assert NodeKind.DISPATCH in kinds
    assert 6 in {s.line for s, _ in unwind.successors}
    handler = _at(graph, 7)
    assert {e for _, e in handler.successors} >= {EdgeKind.TRUE, EdgeKind.EXCEPTION}


def test_nested_functions_lambdas_and_comprehensions_are_graphs_of_their_own() -> None:
    tree = ast.parse(
        textwrap.dedent(
            """
            def outer(xs):
                def inner():
                    return 1
                squares = [x * x for x in xs if x]
                key = lambda x: -x
            """
        )
    )
    scopes = list(ScopeGraphs(tree).scopes())
    kinds = [type(s).__name__ for s in scopes]
    assert kinds == ["Module", "FunctionDef", "FunctionDef", "ListComp", "Lambda"]
    comprehension = ScopeGraphs(tree).graph(scopes[3])
    assert [n.kind for n in comprehension.nodes if n.statement is not None] == [
        NodeKind.STEP,
        NodeKind.TEST,
        NodeKind.STATEMENT,
    ]


def test_a_barrier_after_a_rank_zero_break_depends_on_the_break_test() -> None:
    graph = _graph(
        """
        def f(loader, rank):
            for batch in loader:
                if rank == 0:
                    break
                barrier()
            final()
        """
    )
    dominance = PostDominance(graph)
    test, barrier, final, step = _at(graph, 4), _at(graph, 6), _at(graph, 7), _at(graph, 3)
    assert {(d.test, d.edge) for d in dominance.dependences(barrier)} == {(test, EdgeKind.FALSE)}
    # Later iterations depend on the break's test too (a loop-carried exit).
    assert (test, EdgeKind.FALSE) in {(d.test, d.edge) for d in dominance.dependences(step)}
    assert dominance.dependences(final) == []
    assert dominance.post_dominates(final, test)
    assert dominance.immediate(test) is final


def test_an_endless_loop_still_has_post_dominators() -> None:
    graph = _graph(
        """
        def serve():
            while True:
                handle()
        """
    )
    dominance = PostDominance(graph)
    assert dominance.immediate(_at(graph, 4)) is _at(graph, 3)


def test_a_way_leaves_a_loop_when_no_way_on_comes_back_to_its_head() -> None:
    source = """
        def f(loader, outer):
            for epoch in outer:
                for x in loader:
                    try:
                        if x:
                            done = 1
                            break
                    except ValueError:
                        continue
                    if x > 1:
                        again = 1
                        continue
                    for y in x:
                        inner = 1
                        return
        """
    function = ast.parse(textwrap.dedent(source)).body[0]
    assert isinstance(function, ast.FunctionDef)
    outer = function.body[0]
    assert isinstance(outer, ast.For)
    (loop,) = [s for s in outer.body if isinstance(s, ast.For)]
    graph = build_graph(function)
    # an exception the handler turns into ``continue`` is an error path, not a way back
    assert graph.leaves_loop(_at(graph, 7), loop)
    assert not graph.leaves_loop(_at(graph, 12), loop)
    assert graph.leaves_loop(_at(graph, 15), loop)  # the inner loop's return leaves both
    assert not graph.leaves_loop(_at(graph, 7), outer)  # the outer loop comes back round


def test_loops_that_surely_take_a_turn() -> None:
    def turns(source: str) -> bool:
        return takes_a_turn(ast.parse(source).body[0])

    assert turns("for n, x in (('a', a), ('b', b)): pass")
    assert turns("for k in {'a': 1}: pass")
    assert turns("for c in 'ab': pass")
    assert turns("for i in range(3): pass")
    assert turns("for i in range(1, 4, 2): pass")
    # may take none: a starred item, an empty display, a range not known or empty
    assert not turns("for x in (*extra,): pass")
    assert not turns("for x in []: pass")
    assert not turns("for x in {**extra}: pass")
    assert not turns("for i in range(n): pass")
    assert not turns("for i in range(3, 0): pass")
    assert not turns("for i in range(0, 3, 0): pass")
    assert not turns("for x in items: pass")
