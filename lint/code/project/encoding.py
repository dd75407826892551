"""How project facts cross the cache and process boundary, light enough for the engine
to import at start-up (no LibCST): the versions in their cache keys, the key in
``LintOptions.facts``, and the compact form of a file's facts (``facts.FileFacts``):
positional JSON, written and read here only."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from ddplint.code.project.facts import (
    NO_FACTS,
    Agreement,
    FileFacts,
    NameFacts,
    OwnFunctionFacts,
    ReachedCollective,
    Switch,
)

#: Version of the summary layout: part of the cache key.
SUMMARY_VERSION = "29"
#: Version of linking, ``ProjectIndex.facts_for`` and the facts' encoding: memoized
#: facts of another version are not read.
FACTS_VERSION = "16"
#: The key of the project facts in ``LintOptions.facts``.
OPTIONS_KEY = "project"

#: The boolean fields of ``NameFacts``, one bit each in their encoding (in this order).
_NAME_FLAGS = (
    "rank_test",
    "held",
    "no_rank_test",
    "chooses_device",
    "rank_zero_only",
    "not_a_collective",
    "may_wait",
    "instances_may_wait",
)


def encode_facts(facts: FileFacts) -> str:
    """``[names, functions]``: a name's facts as ``[flags, sharded arguments, reach,
    agreement, kind, rank items]`` (reach ``[api, op, family, creates group, saves
    checkpoint, chain, where, switch]``, switch ``[parameter, position, off]``, agreement
    ``[parameters, reaching, agreeing, items]``), a function's as ``[callers choose device, DDP
    parameters, rank parameters, parameter kinds, loader parameters]``, then ``[runs alone, off
    training, unrun, unreferenced names]``; "" for a file without facts."""
    if not facts:
        return ""
    names = {name: _encode_name(fact) for name, fact in facts.names.items()}
    functions = {
        name: [
            int(fact.callers_choose_device),
            list(fact.ddp_parameters),
            list(fact.rank_parameters),
            [list(pair) for pair in fact.parameter_kinds],
            list(fact.loader_parameters),
        ]
        for name, fact in facts.functions.items()
    }
    programs = [
        int(facts.runs_alone),
        int(facts.off_training),
        int(facts.unrun),
        list(facts.unreferenced),
        int(facts.main_alone),
    ]
    return json.dumps([names, functions, programs], sort_keys=True, separators=(",", ":"))


def _encode_name(fact: NameFacts) -> list[Any]:
    flags = sum(1 << bit for bit, name in enumerate(_NAME_FLAGS) if getattr(fact, name))
    reach = fact.reaches
    encoded_reach = None
    if reach is not None:
        switch = reach.switch
        encoded_reach = [
            reach.api,
            reach.op,
            reach.family,
            reach.creates_group,
            reach.saves_checkpoint,
            list(reach.chain),
            reach.where,
            None if switch is None else _encode_switch(switch),
        ]
    agreement = fact.agreement
    encoded_agreement = None
    if agreement is not None:
        reaching = agreement.reaching
        items = agreement.items
        encoded_agreement = [
            list(agreement.parameters),
            None if reaching is None else list(reaching),
            list(agreement.agreeing),
            None if items is None else [None if i is None else list(i) for i in items],
        ]
    return [
        flags,
        list(fact.sharded_arguments),
        encoded_reach,
        encoded_agreement,
        fact.kind,
        list(fact.rank_items),
    ]


def decode_facts(encoded: str | None) -> FileFacts:
    """The facts ``encode_facts`` wrote; none when absent or of another shape."""
    if not encoded:
        return NO_FACTS
    try:
        names, functions, (alone, untrained, unrun, unreferenced, main) = json.loads(encoded)
        return FileFacts(
            {str(name): _decode_name(value) for name, value in names.items()},
            {
                str(name): OwnFunctionFacts(
                    bool(chooses),
                    _positions(ddp),
                    _positions(rank),
                    _kinds(kinds),
                    _positions(loaders),
                )
                for name, (chooses, ddp, rank, kinds, loaders) in functions.items()
            },
            runs_alone=bool(alone),
            off_training=bool(untrained),
            unrun=bool(unrun),
            unreferenced=tuple(str(name) for name in unreferenced),
            main_alone=bool(main),
        )
    except (ValueError, TypeError, AttributeError):
        return NO_FACTS


def _decode_name(value: Any) -> NameFacts:
    flags, sharded, reach, agreement, kind, rank_items = value
    if not isinstance(flags, int) or not isinstance(kind, (str, type(None))):
        raise TypeError("flags")
    return NameFacts(
        _decode_reach(reach),
        sharded_arguments=_positions(sharded),
        rank_items=_positions(rank_items),
        agreement=_decode_agreement(agreement),
        kind=kind,
        **{name: bool(flags >> bit & 1) for bit, name in enumerate(_NAME_FLAGS)},
    )


def _decode_reach(value: Any) -> ReachedCollective | None:
    if value is None:
        return None
    api, op, family, creates_group, saves_checkpoint, chain, where, switch = value
    if not all(isinstance(text, str) for text in (api, op, family, where, *chain)):
        raise TypeError("reach")
    return ReachedCollective(
        api,
        op,
        family,
        bool(creates_group),
        bool(saves_checkpoint),
        tuple(chain),
        where,
        None if switch is None else _decode_switch(switch),
    )


def _encode_switch(switch: Switch) -> list[Any]:
    encoded: list[Any] = [switch.parameter, switch.position, switch.off]
    if switch.values is not None:
        encoded += [list(switch.values), switch.member, list(switch.default)]
    return encoded


def _decode_switch(value: Any) -> Switch:
    switch = Switch(str(value[0]), int(value[1]), bool(value[2]))
    if len(value) == 6:
        values, member, default = value[3:]
        if not all(isinstance(v, (int, float, str, bool, type(None))) for v in (*values, *default)):
            raise TypeError("switch")
        switch = replace(switch, values=tuple(values), member=bool(member), default=tuple(default))
    return switch


def _decode_agreement(value: Any) -> Agreement | None:
    if value is None:
        return None
    parameters, reaching, agreeing, items = value
    return Agreement(
        _texts(parameters),
        None if reaching is None else _texts(reaching),
        _texts(agreeing),
        None if items is None else tuple(None if i is None else _texts(i) for i in items),
    )


def _texts(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise TypeError("texts")
    return tuple(value)


def _kinds(value: Any) -> tuple[tuple[int, str], ...]:
    if not isinstance(value, list) or not all(
        isinstance(pair, list)
        and len(pair) == 2
        and isinstance(pair[0], int)
        and isinstance(pair[1], str)
        for pair in value
    ):
        raise TypeError("kinds")
    return tuple((position, kind) for position, kind in value)


def _positions(value: Any) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(isinstance(item, int) for item in value):
        raise TypeError("positions")
    return tuple(value)


def informs_rules(encoded: str | None) -> bool:
    """Whether a file's project facts can make a rule fire without any of the words the
    rules' pre-filters look for (``FileFacts.informs_rules``): a file whose facts only
    clear a suspicion keeps its pre-filters."""
    return decode_facts(encoded).informs_rules()
