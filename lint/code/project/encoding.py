"""How project facts travel from the engine to a file's analysis, light enough for the
engine to import at start-up (no LibCST): the versions in their cache keys, the key in
``LintOptions.facts``, their encoding, and whether they can make a rule fire."""

from __future__ import annotations

import json
from typing import Any

#: Version of the summary layout: part of the cache key.
SUMMARY_VERSION = "6"
#: Version of linking and ``ProjectIndex.facts_for``: memoized facts of another are unused.
FACTS_VERSION = "1"
#: The key of the project facts in ``LintOptions.facts``.
OPTIONS_KEY = "project"


def encode_facts(facts: dict[str, dict[str, Any]]) -> str:
    return json.dumps(facts, sort_keys=True, separators=(",", ":"))


def informs_rules(encoded: str | None) -> bool:
    """Whether a file's project facts can make a rule fire without any of the words the
    rules' pre-filters look for (a project name that reaches a collective, tests the
    rank, ...). Facts that only clear a suspicion (``u``: a known function returning no
    rank test, ``c``: callers that choose the GPU, ``w``: arguments it shards) cannot:
    such a file keeps its pre-filters."""
    if not encoded:
        return False
    facts = json.loads(encoded)
    return any(set(fact) - {"u", "c", "w"} for fact in facts.values())
