"""Load YAML (and JSON, as YAML 1.2) with ruamel.yaml round-trip: positions for every key
and value, comments kept, nothing constructed from tags, and every failure one
``SourceError`` at its place."""

from __future__ import annotations

import re
import warnings
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.constructor import ConstructorError, DuplicateKeyError, RoundTripConstructor
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.scanner import RoundTripScanner, ScannerError

from ddplint.source import SourceError

#: Deeper flow nesting (``[[[[...]]]]``) is refused as the scanner meets it: ruamel's
#: scanner slows down quadratically with the flow level, and no training config comes close.
MAX_FLOW_DEPTH = 100


class _BoundedScanner(RoundTripScanner):
    """ruamel's round-trip scanner, stopping at the first flow collection opened deeper
    than ``MAX_FLOW_DEPTH`` (brackets in comments and quoted strings do not count)."""

    def fetch_flow_collection_start(self, TokenClass: Any, to_push: str) -> None:
        if len(self.flow_context) >= MAX_FLOW_DEPTH:
            raise ScannerError(
                None,
                None,
                f"collections nested more than {MAX_FLOW_DEPTH} deep",
                self.reader.get_mark(),
            )
        super().fetch_flow_collection_start(TokenClass, to_push)


#: Entries merge keys (``<<: *base``) may copy into mappings, over one file. A chain of
#: mappings each merging the previous one grows with the square of its length; real
#: configs merge a few hundred entries at most.
MAX_MERGED_ENTRIES = 200_000


class _BoundedConstructor(RoundTripConstructor):
    """ruamel's round-trip constructor, counting what merge keys bring into mappings and
    stopping with a load error past ``MAX_MERGED_ENTRIES`` (bounded by work, not size);
    a scalar Python cannot represent (an int over CPython's 4,300 digits,
    ``!!timestamp 2001-99-99``, ``!!int 12abc``) is a load error at its place."""

    merged_entries = 0

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, OverflowError) as exc:
            raise ConstructorError(
                None, None, f"a value Python cannot represent ({exc})", node.start_mark
            ) from None

    def flatten_mapping(self, node: Any) -> Any:
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge" and value_node is node:
                raise ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    "a mapping merges itself (`<<:` names the mapping's own anchor)",
                    key_node.start_mark,
                )
        merged = super().flatten_mapping(node)
        self.merged_entries += sum(len(m) for m in merged if hasattr(m, "__len__"))
        if self.merged_entries > MAX_MERGED_ENTRIES:
            raise ConstructorError(
                None,
                None,
                f"merge keys (`<<:`) expand to more than {MAX_MERGED_ENTRIES:,} entries",
                node.start_mark,
            )
        return merged


def _yaml() -> YAML:
    # Round-trip mode builds plain containers: an unknown or ``!!python/...`` tag becomes
    # a tagged map/sequence/scalar, never an object; aliases stay shared references.
    yaml = YAML(typ="rt", pure=True)
    yaml.Scanner = _BoundedScanner
    yaml.Constructor = _BoundedConstructor
    yaml.allow_duplicate_keys = False
    return yaml


#: ruamel's parser messages in plain words: (pattern on "problem (context)", wording,
#: whether the place to show is where the construct opened rather than where it failed).
_PLAIN_WORDS: tuple[tuple[re.Pattern[str], str, bool], ...] = tuple(
    (re.compile(pattern), wording, at_opening)
    for pattern, wording, at_opening in (
        (r"found character '\\t' that cannot start", "a tab: YAML indents with spaces only", False),
        (
            r"found character '(.)' that cannot start",
            r"a plain value cannot start with `\1`: quote it",
            False,
        ),
        (
            r"^mapping values are not allowed here",
            "a `: ` inside a plain value: quote the value, or start a nested mapping on a new line",
            False,
        ),
        (r"found undefined alias '(.*)'", r"`*\1` names no anchor `&\1` defined above it", False),
        (r"end of stream.*quoted scalar", "a quoted string that is never closed", True),
        (r"expected ',' or '\]'.*<stream end>", "a `[` list that is never closed with `]`", True),
        (
            r"expected ',' or '\}'.*<stream end>",
            "a `{` mapping that is never closed with `}`",
            True,
        ),
        (
            r"expected ',' or '\]', but got ':'",
            "a `[` list not closed with `]` before a `key:`",
            True,
        ),
        (
            r"expected ',' or '\}', but got ':'",
            "a `{` mapping not closed with `}` before a `key:`",
            True,
        ),
        (
            r"expected <block end>, but found '<block mapping start>'",
            "this line's indentation does not line up with the keys around it",
            False,
        ),
        (
            r"expected <block end>, but found '\?'",
            "a `key:` line where a `- ` list item at this indentation was expected",
            False,
        ),
        (
            r"expected <block end>, but found '-'",
            "a `- ` list item where a `key:` at this indentation was expected",
            False,
        ),
        (
            r"expected <block end>, but found '<scalar>'",
            "a value where a `key:` at this indentation was expected",
            False,
        ),
    )
)


def _describe(exc: MarkedYAMLError) -> tuple[str, bool]:
    """What went wrong, in plain words where the message is a known one, and whether to
    point at where the construct opened (``context_mark``)."""
    problem = (exc.problem or "").strip()
    context = (exc.context or "").strip()
    if isinstance(exc, DuplicateKeyError):
        # ruamel's wording is long and mentions its own settings; keep the fact.
        return (f"duplicate key: {problem}" if problem else "duplicate key"), False
    raw = f"{problem} ({context})" if problem and context else problem or context
    for pattern, wording, at_opening in _PLAIN_WORDS:
        found = pattern.search(raw)
        if found:
            return found.expand(wording), at_opening
    return raw or type(exc).__name__, False


def load_documents(text: str, *, json: bool = False) -> list[Any]:
    """Every document of ``text`` (a multi-document stream gives several); ``json``:
    the text is JSON, read as the YAML 1.2 it is, with the same positions.

    Raises ``SourceError`` with the 1-based line and column of the problem for invalid
    YAML, duplicate keys included.
    """
    if json:
        # YAML refuses tabs as indentation; in JSON a tab is only ever whitespace between
        # tokens (strings cannot hold one), so a space in its place keeps every column.
        text = text.replace("\t", " ")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return list(_yaml().load_all(text))
    except MarkedYAMLError as exc:
        description, at_opening = _describe(exc)
        marks = (exc.context_mark, exc.problem_mark) if at_opening else (exc.problem_mark,)
        mark = next((m for m in (*marks, exc.context_mark) if m is not None), None)
        line = mark.line + 1 if mark is not None else None
        column = mark.column + 1 if mark is not None else None
        raise SourceError(f"cannot load YAML: {description}", line, column) from None
    except YAMLError as exc:
        raise SourceError(f"cannot load YAML: {exc}") from None
