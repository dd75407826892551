"""Where a module chooses the GPU of each rank, on CPython's ``ast`` (DDP501, DDP503).

A rank's GPU is chosen, made current, by a call of ``api.DEVICE_CHOICES``
(``torch.cuda.set_device(local_rank)``), by a function of another module that makes one
(the project's ``chooses_device``), or for the process group by
``init_process_group(device_id=...)``. It is named for one use, leaving the current
device alone, by a ``DistributedDataParallel`` given ``device_ids``, by
``torch.device("cuda", index)``, by ``torch.device(f"cuda:{...}")``, and by a string
``f"cuda:{index}"`` whose index reads the rank (the divergence analysis: what the
index reads, not what it is called). A module that names ``CUDA_VISIBLE_DEVICES``
manages the GPUs each process sees itself.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddplint.analysis.api import DDP_WRAPPERS, DEVICE_CHOICES, torch_distributed_function
from ddplint.analysis.constants import literal_value
from ddplint.analysis.divergence import Source
from ddplint.analysis.effects import header_parts
from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.names import call_argument, dotted_name, keyword_argument

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
#: What a nested scope holds is read in that scope, not in the statement around it.
_NESTED = (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES"


def makes_device_current(analysis: ModuleAnalysis, call: ast.Call) -> bool:
    """``call`` makes this rank's GPU the current device: ``torch.cuda.set_device``
    and the like, or a function of another module of the project that calls one."""
    if analysis.names.resolve(call.func) in DEVICE_CHOICES:
        return True
    spelled = dotted_name(call.func)
    if spelled is None:
        return False
    scope = analysis.nodes.scope_of_call(call)
    return analysis.project.chooses_device(spelled, analysis.nodes.owner_class(scope))


def gives_group_device(analysis: ModuleAnalysis, call: ast.Call) -> bool:
    """``init_process_group(..., device_id=...)``: the group is bound to a GPU."""
    return (
        torch_distributed_function(analysis.names.resolve(call.func)) == "init_process_group"
        and keyword_argument(call, "device_id") is not None
    )


def names_device_for_one_use(analysis: ModuleAnalysis, call: ast.Call) -> bool:
    """The rank's GPU is named for one use without being made current: a DDP wrapper
    given ``device_ids``, ``torch.device("cuda", index)`` or
    ``torch.device(f"cuda:{index}")``."""
    resolved = analysis.names.resolve(call.func)
    if resolved in DDP_WRAPPERS:
        return call_argument(call, 1, "device_ids") is not None
    if resolved != "torch.device" or not call.args:
        return False
    if len(call.args) >= 2:
        return literal_value(call.args[0]) == "cuda"
    first = call.args[0]
    return isinstance(first, ast.JoinedStr) and _text_head(first).startswith("cuda:")


def names_visible_devices(analysis: ModuleAnalysis) -> bool:
    """The module names ``CUDA_VISIBLE_DEVICES`` (sets or reads which GPUs a process
    sees): it manages the GPU of each process itself."""
    return any(node.value == _VISIBLE_DEVICES for node in analysis.nodes.of_type(ast.Constant))


def rank_device_strings(analysis: ModuleAnalysis) -> Iterator[ast.JoinedStr]:
    """Each ``f"cuda:{index}"`` of the module whose index reads the rank, as the
    divergence analysis of its scope has it where the string is made."""
    candidates = [
        string
        for string in analysis.nodes.of_type(ast.JoinedStr)
        if _text_head(string).startswith("cuda:")
    ]
    if not candidates:
        return
    for scope in (analysis.module, *analysis.nodes.functions()):
        graph = analysis.graphs.graph(scope)
        for statement in graph.statements():
            strings = [
                s
                for s in _own_expressions(statement)
                if isinstance(s, ast.JoinedStr) and any(s is c for c in candidates)
            ]
            if not strings:
                continue
            facts = analysis.function(scope)
            node = graph.nodes_of(statement)[0]
            for string in strings:
                indices = [v.value for v in string.values if isinstance(v, ast.FormattedValue)]
                taints = [facts.divergence.taint(index, node) for index in indices]
                if any(t is not None and t.source is Source.RANK for t in taints):
                    yield string


def _text_head(string: ast.JoinedStr) -> str:
    """The literal text an f-string starts with."""
    head = []
    for value in string.values:
        if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
            break
        head.append(value.value)
    return "".join(head)


def _own_expressions(statement: ast.AST) -> Iterator[ast.AST]:
    """The expressions a statement evaluates itself (a compound statement's header;
    not nested statements or scopes)."""
    is_compound = isinstance(getattr(statement, "body", None), list)
    pending: list[ast.AST] = (
        list(header_parts(statement)) if is_compound else list(ast.iter_child_nodes(statement))
    )
    while pending:
        node = pending.pop()
        if isinstance(node, (*_NESTED, ast.stmt)):
            continue
        yield node
        pending.extend(ast.iter_child_nodes(node))
