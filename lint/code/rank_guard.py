"""Is a node reached on one rank only? The small form the code facts need: inside an
``if`` / ``else`` whose test reads a rank (``trainer.is_global_zero``, ``global_rank == 0``,
``dist.get_rank()``, ``os.environ["RANK"]``), or in a function decorated
``@rank_zero_only``. Early exits (``if not is_global_zero: return``) are not followed."""

from __future__ import annotations

import libcst as cst

from lint.code.module_index import ModuleIndex
from lint.code.names import dotted_name

RANK_ATTRIBUTES = frozenset(
    {"global_rank", "local_rank", "is_global_zero", "is_main_process", "is_local_main_process"}
)
RANK_FUNCTIONS = frozenset({"get_rank", "get_local_rank", "is_global_rank_zero"})
RANK_NAMES = frozenset({"rank", "local_rank", "global_rank"})
RANK_ENVIRONMENT = frozenset({"RANK", "LOCAL_RANK", "SLURM_PROCID"})


def _reads_environment_rank(node: cst.CSTNode) -> bool:
    """``os.environ["RANK"]`` / ``os.environ.get("LOCAL_RANK")`` / ``os.getenv(...)``."""
    strings: list[cst.SimpleString] = []
    if isinstance(node, cst.Subscript) and dotted_name(node.value) in ("os.environ", "environ"):
        strings = [
            e.slice.value
            for e in node.slice
            if isinstance(e.slice, cst.Index) and isinstance(e.slice.value, cst.SimpleString)
        ]
    elif isinstance(node, cst.Call) and dotted_name(node.func) in (
        "os.environ.get",
        "os.getenv",
        "environ.get",
    ):
        strings = [a.value for a in node.args[:1] if isinstance(a.value, cst.SimpleString)]
    return any(s.evaluated_value in RANK_ENVIRONMENT for s in strings)


def reads_rank(index: ModuleIndex, expression: cst.CSTNode) -> bool:
    """Whether ``expression`` reads the process rank."""
    for node in (expression, *index.walk_within(expression)):
        if isinstance(node, cst.Attribute) and node.attr.value in RANK_ATTRIBUTES:
            return True
        if isinstance(node, cst.Name) and node.value in RANK_NAMES:
            return True
        if isinstance(node, cst.Call):
            name = dotted_name(node.func) or ""
            if name.rsplit(".", 1)[-1] in RANK_FUNCTIONS:
                return True
        if _reads_environment_rank(node):
            return True
    return False


def _decorated_rank_zero_only(function: cst.FunctionDef) -> bool:
    for decorator in function.decorators:
        target = decorator.decorator
        if isinstance(target, cst.Call):
            target = target.func
        name = dotted_name(target) or ""
        if name.rsplit(".", 1)[-1] == "rank_zero_only":
            return True
    return False


def rank_guard(index: ModuleIndex, node: cst.CSTNode) -> cst.CSTNode | None:
    """The ``if`` or ``def`` that makes ``node`` run on some ranks only, or None."""
    child = node
    for ancestor in index.ancestors(node):
        if (
            isinstance(ancestor, cst.If)
            and child is not ancestor.test
            and reads_rank(index, ancestor.test)
        ):
            return ancestor
        if isinstance(ancestor, cst.FunctionDef):
            return ancestor if _decorated_rank_zero_only(ancestor) else None
        child = ancestor
    return None
