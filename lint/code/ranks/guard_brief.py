"""Which ranks a rank guard lets through, in the few words concise output has room for
("on rank 0 only", "on some ranks only"); ``RankReachability.describe`` says it in full."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from ddplint.code.ranks.rank_conditions import Not, admitted_ranks
from ddplint.code.syntax.names import dotted_name

if TYPE_CHECKING:
    from ddplint.code.context import CodeContext
    from ddplint.code.ranks.rank_reachability import RankGuard

#: Decorators whose function runs on global rank 0 alone.
RANK_ZERO_DECORATORS = frozenset({"rank_zero_only", "on_main_process"})


def runs_on_rank_zero(ctx: CodeContext, guard: RankGuard) -> bool:
    """Whether the guard lets global rank 0 through and no other rank."""
    if guard.kind == "decorator" and isinstance(guard.node, cst.Decorator):
        target = guard.node.decorator
        target = target.func if isinstance(target, cst.Call) else target
        return (dotted_name(target) or "").rsplit(".", 1)[-1] in RANK_ZERO_DECORATORS
    if guard.condition is None:
        return False
    formula = ctx.rank_reachability.conditions.formula(guard.condition)
    if guard.kind == "early_exit" and isinstance(formula, Not):
        formula = formula.operand  # `if not is_global_zero: return` lets rank 0 through
    elif guard.kind not in ("branch", "and"):
        return False
    return formula is not None and admitted_ranks(formula) == frozenset({0})


def ranks_brief(ctx: CodeContext, guard: RankGuard) -> str:
    """``on rank 0 only`` or ``on some ranks only``."""
    return "on rank 0 only" if runs_on_rank_zero(ctx, guard) else "on some ranks only"
