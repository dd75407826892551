"""State-dict reads of a model that is not sharded yet.

``get_model_state_dict(model, options=full)`` gathers the shards of an FSDP model: a
collective. On a plain module it copies local tensors and talks to no one. A function
that reads the state dict first and shards the model after (``fully_shard(model)``, or a
project function that shards its argument, ``prepare_fully_shard(model, ...)``) reads it
while the model is plain: rank 0 taking a full copy before sharding is the documented
way to broadcast its weights (``sync_module_states``).
"""

from __future__ import annotations

import libcst as cst

from ddplint.code.collectives.catalogue import SHARDING_WRAPPERS, STATE_DICT_READS, Collective
from ddplint.code.project.view import ProjectView
from ddplint.code.syntax.call_args import argument
from ddplint.code.syntax.module_index import ModuleIndex
from ddplint.code.syntax.names import ImportTable


class UnshardedModels:
    """Answers "does this state-dict read see a model not sharded yet?" for one module."""

    def __init__(self, index: ModuleIndex, names: ImportTable, project: ProjectView) -> None:
        self._index = index
        self._names = names
        self._project = project

    def reads_unsharded(self, collective: Collective) -> bool:
        """The read's model is a name that its function shards later, and not before."""
        if collective.api not in STATE_DICT_READS:
            return False
        model = argument(collective.node, "model", 0)
        if model is None or not isinstance(model.value, cst.Name):
            return False
        name = model.value.value
        scope = self._index.enclosing_function(collective.node) or self._index.module
        order = self._index.order
        sharding = [
            node
            for node in self._index.walk_within(scope)
            if isinstance(node, cst.Call) and self._shards(node, name)
        ]
        read_at = order[collective.node]
        return bool(sharding) and all(order[call] > read_at for call in sharding)

    def _shards(self, call: cst.Call, name: str) -> bool:
        """``call`` shards the model held by ``name``."""
        if self._names.qualified_name(call.func) in SHARDING_WRAPPERS:
            positions: frozenset[int] = frozenset({0})
        else:
            positions = self._project.sharded_arguments(call)
        return any(
            index in positions
            and a.keyword is None
            and isinstance(a.value, cst.Name)
            and a.value.value == name
            for index, a in enumerate(call.args)
        )
