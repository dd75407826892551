"""Work one rank does while the others wait for it, on the analysis core (DDP306): the
body of a ``with`` whose context manager waits in a barrier (a project's
``torch_distributed_zero_first(rank)``, known by the collective its code reaches, here
or in another module of the project, whatever it is called) or is one of the
libraries' ``main_process_first()`` (accelerate, transformers ``TrainingArguments``),
and the body of a test on the rank (``if rank == 0:``, by the divergence analysis)
followed by a barrier in the same function. The waiting ranks sit in a collective, so
the process group's timeout bounds how long that work may take.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from ddplint.analysis.control_flow import Scope
from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.names import dotted_name
from ddplint.analysis.rank_guards import BY_RANK

#: The libraries' context managers that run their body on one rank first while the
#: others wait (accelerate's ``Accelerator`` / ``PartialState`` and transformers'
#: ``TrainingArguments``): their code is not the project's, so their API names say it.
LIBRARY_ONE_RANK_FIRST = frozenset({"main_process_first", "local_main_process_first"})
#: Calls that take no time worth a timeout (logging, paths, conversions).
_QUICK_CALLS = frozenset(
    {
        "print",
        "len",
        "str",
        "int",
        "float",
        "bool",
        "isinstance",
        "range",
        "enumerate",
        "format",
        "exists",
        "isdir",
        "isfile",
        "join",
        "makedirs",
        "mkdir",
        "info",
        "debug",
        "warning",
        "warn",
        "log",
        "write",
        "flush",
        "get_rank",
        "get_world_size",
    }
)
#: Collectives that only wait (the last part of the core's name for them).
_WAITS = frozenset({"barrier", "wait_for_everyone", "monitored_barrier"})


@dataclass(frozen=True)
class RankZeroWork:
    """A block run by one rank while the others wait; ``work`` is its first call that
    does real work, ``how`` says where it runs (for messages)."""

    block: ast.stmt
    work: ast.Call
    how: str


def rank_zero_work(analysis: ModuleAnalysis) -> Iterator[RankZeroWork]:
    """Every such block of the module."""
    withs: list[ast.With | ast.AsyncWith] = [*analysis.nodes.of_type(ast.With)]
    withs += analysis.nodes.of_type(ast.AsyncWith)
    for statement in sorted(withs, key=lambda w: (w.lineno, w.col_offset)):
        for item in statement.items:
            call = item.context_expr
            if not isinstance(call, ast.Call):
                continue
            name = (dotted_name(call.func) or "").rsplit(".", 1)[-1]
            scope = analysis.nodes.scope_of_call(call)
            if name in LIBRARY_ONE_RANK_FIRST or _waits(analysis, call, scope):
                work = _first_work(statement.body)
                if work is not None:
                    yield RankZeroWork(statement, work, f"inside `{name}()`")
    for scope in analysis.scopes_with_collectives():
        yield from _guarded_then_waited(analysis, scope)


def _waits(analysis: ModuleAnalysis, call: ast.Call, scope: Scope) -> bool:
    """Running ``call`` reaches a barrier first (here or in another module)."""
    reached = analysis.first_reached(call, scope)
    return reached is not None and reached.name.rsplit(".", 1)[-1] in _WAITS


def _guarded_then_waited(analysis: ModuleAnalysis, scope: Scope) -> Iterator[RankZeroWork]:
    """The bodies of the rank tests of ``scope`` that a barrier of ``scope`` follows."""
    function = analysis.function(scope)
    waits = [
        collective.call
        for effects in function.effects.values()
        for collective, through in effects
        if through is None and collective.name.rsplit(".", 1)[-1] in _WAITS
    ]
    for statement in function.graph.statements():
        if not isinstance(statement, ast.If):
            continue
        test = function.graph.nodes_of(statement)[0]
        taint = function.divergence.test_taint(test)
        if taint is None or taint.source not in BY_RANK:
            continue
        end = (statement.end_lineno or statement.lineno, statement.end_col_offset or 0)
        later = any((wait.lineno, wait.col_offset) > end for wait in waits)
        work = _first_work(statement.body)
        if later and work is not None:
            yield RankZeroWork(statement, work, f"under `if {ast.unparse(statement.test)}:`")


def _first_work(body: list[ast.stmt]) -> ast.Call | None:
    """The first call of ``body`` that does real work (not logging, paths, waits)."""
    calls: list[ast.Call] = []
    for statement in body:
        calls.extend(node for node in ast.walk(statement) if isinstance(node, ast.Call))
    for call in sorted(calls, key=lambda c: (c.lineno, c.col_offset)):
        name = (dotted_name(call.func) or "").rsplit(".", 1)[-1]
        quick = name in _QUICK_CALLS or name in _WAITS or name.startswith("log")
        if name and not quick:
            return call
    return None
