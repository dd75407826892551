"""Decisions some ranks made alone: which flag in a test holds a value that only some
ranks set (``if rank == 0: stop = ...`` ... ``if stop: break``).

``where_ranks_part`` finds the place the ranks part; where the reason is such a value
(``Source.DECIDED``), ``decided_flag`` names the flag that carries it, so a rule can
report the decision with the flag's name.
"""

from __future__ import annotations

import ast

from ddplint.analysis.divergence import Source, Taint
from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.questions import Parting


def decided_by_some_ranks(parting: Parting) -> bool:
    """Whether the ranks part because of a value set under a test on the rank (or on
    another value that differs between ranks)."""
    return parting.taint.source is Source.DECIDED


def decided_flag(analysis: ModuleAnalysis, parting: Parting) -> tuple[str, Taint] | None:
    """The name (``stop``, ``self.early_stop``) in the parting's test whose value only
    some ranks set, and why it differs; None where no one name carries it."""
    function = analysis.function(parting.function)
    statement = parting.test
    expression = statement.test if isinstance(statement, (ast.If, ast.While)) else statement
    node = next((n for n in function.graph.nodes if n.statement is statement), None)
    if node is None:
        node = next((n for n in function.graph.nodes if n.statement is parting.cause), None)
    if node is None:
        return None
    for inner in ast.walk(expression):
        if not isinstance(inner, (ast.Name, ast.Attribute)):
            continue
        taint = function.divergence.taint(inner, node)
        if taint is not None and taint.source is Source.DECIDED:
            return ast.unparse(inner), taint
    return None
