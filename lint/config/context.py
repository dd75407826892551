"""What a config rule sees: the YAML (or JSON) documents of one file (training, DeepSpeed
and accelerate configs marked), positions, OmegaConf values, world size, code facts, and
checked fixes."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

from ddplint.code_facts import OPTIONS_KEY, CodeFacts
from ddplint.config.accelerate import ACCELERATE_NEEDLES, is_accelerate_config
from ddplint.config.deepspeed import DEEPSPEED_NEEDLES, DeepSpeedConfig, deepspeed_configs
from ddplint.config.document import ConfigDocument, Entry, KeyPath, dotted
from ddplint.config.loader import load_documents
from ddplint.config.training import TRAINING_NEEDLES, is_training_config
from ddplint.config.values import MAX_EXPANDED_NODES, expanded_size, plain_tree
from ddplint.config.world_size import WorldSize, world_size
from ddplint.finding import Applicability, Edit, Finding, Fix, RuleIdentity
from ddplint.fix import apply_edits
from ddplint.source import SourceError, SourceFile, is_json

if TYPE_CHECKING:
    from ddplint.settings import LintOptions

#: Characters of fixed text re-loaded to check the fixes of one file. Each check loads
#: the whole file again, so a file with hundreds of fixable findings would take minutes;
#: past the budget the fixes of a file are checked together, with one re-load.
FIX_CHECK_BUDGET = 200_000
#: Fix checks always allowed, whatever the file's size.
MIN_FIX_CHECKS = 2
#: A file is loaded only when it holds one of these: a training config's words, or a
#: DeepSpeed or accelerate config's own keys.
LOAD_NEEDLES = TRAINING_NEEDLES + tuple(
    needle.encode() for needle in (*DEEPSPEED_NEEDLES, *ACCELERATE_NEEDLES)
)


class ConfigContext:
    """One YAML file: every document, and the ones that are training configs."""

    def __init__(
        self, source: SourceFile, documents: list[ConfigDocument], options: LintOptions
    ) -> None:
        self.source = source
        self.documents = documents
        self.options = options
        self._world: dict[int, WorldSize] = {}
        self._fix_checks_left = max(MIN_FIX_CHECKS, FIX_CHECK_BUDGET // max(1, len(source.text)))
        self._unchecked: list[tuple[Fix, int, dict[KeyPath, Any]]] = []

    @classmethod
    def load(cls, source: SourceFile, options: LintOptions) -> ConfigContext:
        """Load every document; raises ``SourceError`` for YAML that does not load.
        A file with no training-config words is not loaded at all."""
        if not any(needle in source.raw for needle in LOAD_NEEDLES):
            return cls(source, [], options)
        if is_json(source.path):
            return cls._load_json(source, options)
        roots = load_documents(source.text)
        return cls(source, [ConfigDocument(r, i, source) for i, r in enumerate(roots)], options)

    @classmethod
    def _load_json(cls, source: SourceFile, options: LintOptions) -> ConfigContext:
        """A JSON file that does not load (comments, trailing text) is someone else's
        format (JSON with comments, JSON lines), not a config to report: no documents."""
        try:
            roots = load_documents(source.text, json=True)
        except SourceError:
            roots = []
        return cls(source, [ConfigDocument(r, i, source) for i, r in enumerate(roots)], options)

    @cached_property
    def configs(self) -> list[ConfigDocument]:
        """The documents that are training configs."""
        return [doc for doc in self.documents if is_training_config(doc.root)]

    @cached_property
    def deepspeed_configs(self) -> list[DeepSpeedConfig]:
        """The DeepSpeed configs of every document (whole files and nested sections)."""
        return [found for doc in self.documents for found in deepspeed_configs(doc)]

    @cached_property
    def accelerate_configs(self) -> list[ConfigDocument]:
        """The documents that are accelerate launch configs."""
        return [doc for doc in self.documents if is_accelerate_config(doc.root)]

    @cached_property
    def code_facts(self) -> CodeFacts:
        return CodeFacts.decode(self.options.fact(OPTIONS_KEY))

    def world(self, doc: ConfigDocument) -> WorldSize:
        if doc.index not in self._world:
            self._world[doc.index] = world_size(doc)
        return self._world[doc.index]

    def finding(
        self,
        rule: RuleIdentity,
        doc: ConfigDocument,
        at: Entry,
        message: str,
        fix: Fix | None = None,
        key_path: KeyPath | None = None,
        *,
        summary: str = "",
    ) -> Finding:
        """A finding on the key of ``at``. The message follows the dotted key path
        (``key_path``, or the entry's own): "`trainer.sync_batchnorm` <message>"; so does
        ``summary``, the short clause of concise output. A suppression comment on the
        key's line or on its value's line applies."""
        span = doc.key_span(at)
        value_span = doc.value_span(at)
        last_line = value_span[2] if value_span else span[2]
        path = dotted(key_path if key_path is not None else at.path)
        return Finding.of(
            rule,
            self.source.path,
            span,
            f"`{path}` {message}",
            fix,
            key_path=path,
            statement_lines=(span[0], max(span[0], last_line)),
            summary=f"`{path}` {summary}" if summary else "",
        )

    def checked_fix(
        self,
        doc: ConfigDocument,
        edits: list[Edit | None],
        changes: Mapping[KeyPath, Any],
        applicability: Applicability,
        message: str,
    ) -> Fix | None:
        """A fix made of ``edits`` if, re-parsed, the file differs from the original only
        by ``changes`` (key path -> new raw value); None otherwise. Once the file's own
        checks are used up (``FIX_CHECK_BUDGET``) the fix is checked later, together with
        every other such fix of the file, by ``settle_fixes``."""
        if not edits or any(e is None for e in edits):
            return None
        chosen = tuple(e for e in edits if e is not None)
        fix = Fix(applicability, chosen, message)
        if self._fix_checks_left <= 0:
            self._unchecked.append((fix, doc.index, dict(changes)))
            return fix
        self._fix_checks_left -= 1
        return fix if self._only_changes(chosen, {doc.index: dict(changes)}) else None

    def settle_fixes(self, findings: list[Finding]) -> list[Finding]:
        """Check the fixes made past the budget all at once (one re-load of the file):
        kept if together they change exactly what they say, else all taken away."""
        if not self._unchecked:
            return findings
        unchecked, self._unchecked = self._unchecked, []
        pending = {id(fix) for fix, _, _ in unchecked}
        edits = [edit for fix, _, _ in unchecked for edit in fix.edits]
        changes: dict[int, dict[KeyPath, Any]] = {}
        for _, index, change in unchecked:
            changes.setdefault(index, {}).update(change)
        if not _overlapping(edits) and self._only_changes(edits, changes):
            return findings
        return [
            replace(f, fix=None) if f.fix is not None and id(f.fix) in pending else f
            for f in findings
        ]

    def _only_changes(
        self, edits: Sequence[Edit], changes: Mapping[int, Mapping[KeyPath, Any]]
    ) -> bool:
        """Whether the file with ``edits`` applied re-loads with exactly ``changes`` (per
        document index: key path -> new raw value) and nothing else changed."""
        try:
            roots = load_documents(apply_edits(self.source, edits), json=is_json(self.source.path))
        except SourceError:
            return False
        if len(roots) != len(self.documents):
            return False
        # Without aliases a document has at most a node per two characters: the copy
        # below stays linear in the file (an alias bomb still stops at the limit).
        limit = MAX_EXPANDED_NODES + len(self.source.text) // 2
        for other, after in zip(self.documents, roots, strict=True):
            before = other.root
            if expanded_size(before, limit) is None or expanded_size(after, limit) is None:
                return False
            expected = plain_tree(before)
            for path, value in changes.get(other.index, {}).items():
                _set_in(expected, path, value)
            if plain_tree(after) != expected:
                return False
        return True


def _overlapping(edits: Sequence[Edit]) -> bool:
    spans = sorted((e.line, e.column, e.end_line, e.end_column) for e in edits)
    return any((b[0], b[1]) < (a[2], a[3]) for a, b in itertools.pairwise(spans))


def _set_in(tree: Any, path: KeyPath, value: Any) -> None:
    for key in path[:-1]:
        tree = tree[key]
    tree[path[-1]] = value
