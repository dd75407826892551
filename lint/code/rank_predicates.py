"""Rank predicates: expressions whose value differs between ranks.

``dist.get_rank() == 0``, ``self.trainer.is_global_zero``, ``accelerator.is_main_process``,
``int(os.environ["LOCAL_RANK"])``, NeMo's ``is_global_rank_zero()``, a parameter named
``rank``, and names assigned from any of these (``is_main = rank == 0``), followed through
simple assignments in the same function and at module level. ``world_size > 1`` and
``dist.is_initialized()`` are the same on every rank and are not rank predicates.
Functions decorated with ``@rank_zero_only`` run on rank 0 only.
"""

from __future__ import annotations

import libcst as cst

from lint.code.module_index import ModuleIndex, children_of
from lint.code.names import ImportTable, dotted_name

RANK_FUNCTIONS = frozenset(
    {
        "torch.distributed.get_rank",
        "torch.distributed.get_node_local_rank",
        "torch.distributed.distributed_c10d.get_rank",
        "torch.distributed.get_group_rank",
        "deepspeed.comm.get_rank",
        "deepspeed.comm.get_local_rank",
        "nemo.utils.get_rank.is_global_rank_zero",
        "nemo.utils.is_global_rank_zero",
        "lightning.fabric.utilities.rank_zero.rank_zero_only.rank",
        "megatron.core.parallel_state.get_data_parallel_rank",
        "megatron.core.parallel_state.get_tensor_model_parallel_rank",
        "megatron.core.parallel_state.get_pipeline_model_parallel_rank",
        "accelerate.state.PartialState.is_main_process",
    }
)
#: Function names that read the rank wherever they come from (``get_rank()``,
#: ``is_global_rank_zero()``, a project's own ``get_local_rank()``).
RANK_FUNCTION_NAMES = frozenset(
    {
        "get_rank",
        "get_local_rank",
        "get_global_rank",
        "is_global_rank_zero",
        "is_rank_zero",
        "get_node_local_rank",
    }
)
#: Attribute or variable names that hold a rank or a per-rank truth value.
RANK_ATTRIBUTES = frozenset(
    {
        "rank",
        "global_rank",
        "local_rank",
        "node_rank",
        "world_rank",
        "is_global_zero",
        "is_local_zero",
        "is_main_process",
        "is_local_main_process",
        "is_last_process",
        "process_index",
        "local_process_index",
    }
)
RANK_ENV_VARS = frozenset(
    {
        "RANK",
        "LOCAL_RANK",
        "SLURM_PROCID",
        "SLURM_LOCALID",
        "OMPI_COMM_WORLD_RANK",
        "GROUP_RANK",
        "NODE_RANK",
    }
)


def _env_key(call_or_subscript: cst.CSTNode, names: ImportTable) -> str | None:
    """``"RANK"`` for ``os.environ["RANK"]``, ``os.environ.get("RANK")``, ``os.getenv("RANK")``."""
    key: cst.BaseExpression | None = None
    if isinstance(call_or_subscript, cst.Subscript):
        if (
            names.qualified_name(call_or_subscript.value) == "os.environ"
            and call_or_subscript.slice
        ):
            element = call_or_subscript.slice[0].slice
            if isinstance(element, cst.Index):
                key = element.value
    elif (
        isinstance(call_or_subscript, cst.Call)
        and call_or_subscript.args
        and names.qualified_name(call_or_subscript.func) in ("os.environ.get", "os.getenv")
    ):
        key = call_or_subscript.args[0].value
    if isinstance(key, cst.SimpleString):
        return key.evaluated_value if isinstance(key.evaluated_value, str) else None
    return None


class RankPredicates:
    """Answers "does this expression differ between ranks?" for one module."""

    def __init__(self, index: ModuleIndex, names: ImportTable) -> None:
        self._index = index
        self._names = names
        self._assignments = self._collect_assignments()

    def _collect_assignments(
        self,
    ) -> dict[tuple[cst.CSTNode | None, str], list[cst.BaseExpression]]:
        """Values assigned to each plain name, per enclosing function (None = module)."""
        found: dict[tuple[cst.CSTNode | None, str], list[cst.BaseExpression]] = {}
        for node in self._index.nodes(cst.Assign):
            scope = self._index.enclosing_function(node)
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    found.setdefault((scope, target.target.value), []).append(node.value)
        for annotated in self._index.nodes(cst.AnnAssign):
            if annotated.value is not None and isinstance(annotated.target, cst.Name):
                scope = self._index.enclosing_function(annotated)
                found.setdefault((scope, annotated.target.value), []).append(annotated.value)
        return found

    def is_rank_dependent(self, expr: cst.CSTNode, _seen: frozenset[str] = frozenset()) -> bool:
        """Whether ``expr`` reads the rank, directly or through a name assigned from it."""
        scope = self._index.enclosing_function(expr)
        stack: list[cst.CSTNode] = [expr]
        while stack:
            node = stack.pop()
            if isinstance(node, (cst.Lambda, cst.FunctionDef)):
                continue
            if self._reads_rank(node, scope, _seen):
                return True
            stack.extend(children_of(node))
        return False

    def _reads_rank(
        self, node: cst.CSTNode, scope: cst.CSTNode | None, seen: frozenset[str]
    ) -> bool:
        if isinstance(node, cst.Call):
            qualified = self._names.qualified_name(node.func)
            if qualified in RANK_FUNCTIONS:
                return True
            dotted = dotted_name(node.func)
            if dotted is not None and dotted.rsplit(".", 1)[-1] in RANK_FUNCTION_NAMES:
                return True
            key = _env_key(node, self._names)
            return key in RANK_ENV_VARS
        if isinstance(node, cst.Subscript):
            return _env_key(node, self._names) in RANK_ENV_VARS
        if isinstance(node, cst.Attribute):
            return node.attr.value in RANK_ATTRIBUTES or (
                self._names.qualified_name(node) in RANK_FUNCTIONS
            )
        if isinstance(node, cst.Name):
            if node.value in RANK_ATTRIBUTES:
                return True
            return self._name_is_rank(node.value, scope, seen)
        return False

    def _name_is_rank(self, name: str, scope: cst.CSTNode | None, seen: frozenset[str]) -> bool:
        if name in seen:
            return False
        values = self._assignments.get((scope, name))
        if values is None and scope is not None:
            values = self._assignments.get((None, name))
        if not values:
            return False
        return any(self.is_rank_dependent(value, seen | {name}) for value in values)

    def is_rank_zero_only(self, function: cst.FunctionDef) -> bool:
        """Decorated with ``@rank_zero_only`` (Lightning, lightning_utilities, NeMo)."""
        for decorator in function.decorators:
            target = decorator.decorator
            if isinstance(target, cst.Call):
                target = target.func
            dotted = dotted_name(target)
            if dotted is not None and dotted.rsplit(".", 1)[-1] == "rank_zero_only":
                return True
        return False
