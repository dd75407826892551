"""What a config rule sees: the YAML documents of one file (training configs marked),
positions, OmegaConf values, world size, code facts, and checked fixes."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any

from ddplint.code_facts import OPTIONS_KEY, CodeFacts
from ddplint.config.document import ConfigDocument, Entry, KeyPath, dotted
from ddplint.config.loader import load_documents
from ddplint.config.training import TRAINING_NEEDLES, is_training_config
from ddplint.config.values import expanded_size, plain_tree
from ddplint.config.world_size import WorldSize, world_size
from ddplint.finding import Applicability, Edit, Finding, Fix
from ddplint.fix import apply_edits
from ddplint.source import SourceError, SourceFile

if TYPE_CHECKING:
    from ddplint.rule import Rule
    from ddplint.settings import LintOptions

#: Characters of fixed text re-loaded to check the fixes of one file. Each check loads
#: the whole file again, so a file with hundreds of fixable findings would take minutes;
#: past the budget findings come without a fix (``--fix`` takes them pass by pass).
FIX_CHECK_BUDGET = 200_000
#: Fix checks always allowed, whatever the file's size.
MIN_FIX_CHECKS = 2


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

    @classmethod
    def load(cls, source: SourceFile, options: LintOptions) -> ConfigContext:
        """Load every document; raises ``SourceError`` for YAML that does not load.
        A file with no training-config words is not loaded at all."""
        if not any(needle in source.raw for needle in TRAINING_NEEDLES):
            return cls(source, [], options)
        roots = load_documents(source.text)
        return cls(source, [ConfigDocument(r, i, source) for i, r in enumerate(roots)], options)

    @cached_property
    def configs(self) -> list[ConfigDocument]:
        """The documents that are training configs."""
        return [doc for doc in self.documents if is_training_config(doc.root)]

    @cached_property
    def code_facts(self) -> CodeFacts:
        return CodeFacts.decode(self.options.fact(OPTIONS_KEY))

    def world(self, doc: ConfigDocument) -> WorldSize:
        if doc.index not in self._world:
            self._world[doc.index] = world_size(doc)
        return self._world[doc.index]

    def finding(
        self,
        rule: type[Rule] | Rule,
        doc: ConfigDocument,
        at: Entry,
        message: str,
        fix: Fix | None = None,
        key_path: KeyPath | None = None,
    ) -> Finding:
        """A finding on the key of ``at``. The message follows the dotted key path
        (``key_path``, or the entry's own): "`trainer.sync_batchnorm` <message>". A
        suppression comment on the key's line or on its value's line applies."""
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
        by ``changes`` (key path -> new raw value); None otherwise, and None once the
        file's fix checks are used up (``FIX_CHECK_BUDGET``)."""
        if not edits or any(e is None for e in edits) or self._fix_checks_left <= 0:
            return None
        self._fix_checks_left -= 1
        chosen = [e for e in edits if e is not None]
        try:
            roots = load_documents(apply_edits(self.source, chosen))
        except SourceError:
            return None
        if len(roots) != len(self.documents):
            return None
        for other, after in zip(self.documents, roots, strict=True):
            before = other.root
            if expanded_size(before) is None or expanded_size(after) is None:
                return None
            expected = plain_tree(before)
            if other.index == doc.index:
                for path, value in changes.items():
                    _set_in(expected, path, value)
            if plain_tree(after) != expected:
                return None
        return Fix(applicability, tuple(chosen), message)


def _set_in(tree: Any, path: KeyPath, value: Any) -> None:
    for key in path[:-1]:
        tree = tree[key]
    tree[path[-1]] = value
