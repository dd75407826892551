"""Lightning checkpoint file-name templates (``'{epoch}-{val_loss:.3f}'``): which
metrics they format, and the template with one metric removed. Groups are found the
way ``ModelCheckpoint`` finds them; ``${...}`` interpolations in the raw YAML text are
stepped over so that the same group can be cut from the text the user wrote."""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Values Lightning adds itself: the same on every rank.
RANK_INVARIANT = frozenset({"epoch", "step", "global_step", "consumed_samples"})
_SEPARATORS = "-_=. "


@dataclass(frozen=True)
class Group:
    """One ``{name[:format]}`` group: ``start``/``end`` offsets in the template."""

    start: int
    end: int
    name: str


def _close(text: str, start: int) -> int | None:
    """Offset just past the ``}`` matching the ``{`` at ``start``."""
    depth = 0
    i = start
    while i < len(text):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


def groups(template: str) -> list[Group]:
    """The ``{...}`` groups that Lightning formats; ``${...}`` is not one."""
    found: list[Group] = []
    i = 0
    while i < len(template):
        if template.startswith("${", i):
            end = _close(template, i + 1)
            if end is None:
                break
            i = end
            continue
        if template[i] == "{":
            end = _close(template, i)
            if end is None:
                break
            body = template[i + 1 : end - 1]
            name = re.split(r"[:}]", body, maxsplit=1)[0] if not body.startswith("$") else ""
            found.append(Group(i, end, name))
            i = end
            continue
        i += 1
    return found


def metrics(template: str) -> list[str]:
    """Logged metrics the resolved ``template`` formats (not epoch / step)."""
    return [g.name for g in groups(template) if g.name and g.name not in RANK_INVARIANT]


def without_group(raw: str, resolved: str, metric: str) -> str | None:
    """``raw`` with the group that formats ``metric`` removed, with the separator that
    joined it; None when the raw and resolved templates do not line up, or nothing
    would be left."""
    raw_groups, resolved_groups = groups(raw), groups(resolved)
    if len(raw_groups) != len(resolved_groups):
        return None
    for raw_group, resolved_group in zip(raw_groups, resolved_groups, strict=True):
        if resolved_group.name != metric:
            continue
        start, end = raw_group.start, raw_group.end
        before = start
        while before > 0 and raw[before - 1] in _SEPARATORS:
            before -= 1
        if before > 0:
            start = before
        else:
            while end < len(raw) and raw[end] in _SEPARATORS:
                end += 1
        remaining = raw[:start] + raw[end:]
        return remaining if remaining.strip(_SEPARATORS) else None
    return None
