"""Ranks and process groups along the dimensions of a parallel grid.

Megatron-style parallel state (and NeMo, DeepSpeed's ``mpu``) lays the ranks on a grid:
tensor x pipeline x data x context. A device mesh does the same with numbered (or named)
dimensions. The members of a group along some dimensions share their coordinates on all
the others, so a condition on those other coordinates is the same on every member:
``if is_pp_last: all_reduce(x, group=get_data_parallel_group())`` runs on all the members
of each data-parallel group or on none of them. ``coordinates`` says which dimensions a
rank condition reads (None when it reads the process's own rank), ``group_dimensions``
which dimensions a group spans (a group built elsewhere spans "itself").
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from ddplint.code.ranks.rank_predicates import RankPredicates
from ddplint.code.syntax.call_args import keyword_argument
from ddplint.code.syntax.names import dotted_name

#: Keywords that name the process group a collective runs on.
GROUP_KEYWORDS = ("group", "pg", "process_group")
#: Parallel-state functions giving this rank's coordinate along their dimensions.
_DIMENSION_RANKS = {
    "get_tensor_model_parallel_rank": frozenset({"tensor"}),
    "get_pipeline_model_parallel_rank": frozenset({"pipeline"}),
    "get_data_parallel_rank": frozenset({"data"}),
    "get_context_parallel_rank": frozenset({"context"}),
}
#: Parallel-state functions giving the group along their dimensions.
_DIMENSION_GROUPS = {
    "get_tensor_model_parallel_group": frozenset({"tensor"}),
    "get_pipeline_model_parallel_group": frozenset({"pipeline"}),
    "get_data_parallel_group": frozenset({"data"}),
    "get_data_parallel_group_gloo": frozenset({"data"}),
    "get_context_parallel_group": frozenset({"context"}),
    "get_model_parallel_group": frozenset({"tensor", "pipeline"}),
    "get_tensor_and_data_parallel_group": frozenset({"tensor", "data"}),
}


def group_argument(call: cst.Call) -> cst.BaseExpression | None:
    """The process group a collective names (``group=pg``, ``process_group=pg``), not a
    literal ``None`` (the world)."""
    for keyword in GROUP_KEYWORDS:
        found = keyword_argument(call, keyword)
        if found is not None:
            value = found.value
            if isinstance(value, cst.Name) and value.value == "None":
                return None
            return value
    return None


class ParallelGrid:
    """Answers "which grid dimensions does this condition or group involve?"."""

    def __init__(self, predicates: RankPredicates, text: Callable[[cst.CSTNode], str]) -> None:
        self._predicates = predicates
        self._text = text

    def uniform_within(self, condition: cst.BaseExpression, group: cst.BaseExpression) -> bool:
        """Every member of ``group`` gives ``condition`` the same value: it reads only
        coordinates along dimensions the group does not span."""
        read = self.coordinates(condition)
        return read is not None and not read & self.group_dimensions(group)

    def coordinates(self, condition: cst.BaseExpression) -> frozenset[str] | None:
        """The grid dimensions whose coordinate ``condition`` reads; None when it reads
        the process's own rank (or a rank this module cannot place on a grid)."""
        found: set[str] = set()
        for read in self._predicates.rank_reads(condition):
            dimensions = self._coordinate(read)
            if dimensions is None:
                return None
            found |= dimensions
        return frozenset(found) if found else None

    def _coordinate(self, read: cst.CSTNode) -> frozenset[str] | None:
        if not isinstance(read, cst.Call):
            return None
        function = dotted_name(read.func) or ""
        last = function.rsplit(".", 1)[-1]
        if last in _DIMENSION_RANKS:
            return _with_context(read, _DIMENSION_RANKS[last])
        if last == "get_local_rank" and isinstance(read.func, cst.Attribute):
            dimension = _first_argument(read, "mesh_dim")
            if dimension is not None:  # ``mesh.get_local_rank(mesh_dim=d)``
                return frozenset({f"mesh:{self._text(dimension)}"})
        if last in ("get_rank", "get_group_rank"):
            group = _first_argument(read, "group")
            if group is not None:  # ``dist.get_rank(group=pg)``: the rank within ``pg``
                return frozenset({f"group:{self._text(group)}"})
        return None

    def group_dimensions(self, group: cst.BaseExpression) -> frozenset[str]:
        """The dimensions ``group`` spans: a parallel-state group, a mesh dimension's
        group (``mesh.get_group(1)``, ``mesh["shard"].get_group()``), else the group
        itself (``group:pg``), known to span whatever a rank asked of ``pg`` reads."""
        value: cst.BaseExpression = group
        if isinstance(group, cst.Name):
            value = self._predicates.assigned_value(group) or group
        if isinstance(value, cst.Call):
            function = dotted_name(value.func) or ""
            last = function.rsplit(".", 1)[-1]
            if last in _DIMENSION_GROUPS:
                return _with_context(value, _DIMENSION_GROUPS[last])
            if last == "get_group" and isinstance(value.func, cst.Attribute):
                dimension = _first_argument(value, "mesh_dim")
                receiver = value.func.value
                if dimension is None and isinstance(receiver, cst.Subscript):
                    index = receiver.slice[0].slice if len(receiver.slice) == 1 else None
                    dimension = index.value if isinstance(index, cst.Index) else None
                if dimension is not None:
                    return frozenset({f"mesh:{self._text(dimension)}"})
        return frozenset({f"group:{self._text(group)}"})


def _with_context(call: cst.Call, dimensions: frozenset[str]) -> frozenset[str]:
    """``with_context_parallel=True`` adds the context dimension."""
    flag = keyword_argument(call, "with_context_parallel")
    if flag is None or (isinstance(flag.value, cst.Name) and flag.value.value == "False"):
        return dimensions
    return dimensions | {"context"}


def _first_argument(call: cst.Call, keyword: str) -> cst.BaseExpression | None:
    """The argument passed as ``keyword=`` or first by position."""
    named = keyword_argument(call, keyword)
    if named is not None:
        return named.value
    if call.args and call.args[0].keyword is None and not call.args[0].star:
        return call.args[0].value
    return None
