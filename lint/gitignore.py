"""``.gitignore`` rules applied without git, for when git cannot list a repository's
files (a damaged ``.git``, a checkout git refuses as "dubious ownership").

The rules of git's documentation (gitignore(5)): blank lines and ``#`` comments skipped,
``!`` re-includes, a trailing ``/`` matches folders only, a pattern with a ``/`` before
its end is anchored to its file's folder, otherwise it matches a name at any depth;
``*``, ``?``, ``[...]`` and ``**`` as git reads them; the last matching rule decides.
A folder that is ignored is not entered, so nothing below it can be re-included.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ddplint.source import FileTooLarge, read_source_bytes

#: A .gitignore larger than this (1 MiB) is not read.
MAX_IGNORE_FILE_BYTES = 1024 * 1024


@dataclass(frozen=True)
class IgnoreRule:
    """One pattern line, for paths relative to ``base`` (posix, "" for the root)."""

    base: str
    regex: re.Pattern[str]
    negated: bool
    folders_only: bool

    def matches(self, relative: str, is_folder: bool) -> bool:
        if self.folders_only and not is_folder:
            return False
        if self.base:
            if not relative.startswith(self.base + "/"):
                return False
            relative = relative[len(self.base) + 1 :]
        return self.regex.fullmatch(relative) is not None


def _translate(glob: str) -> str:
    """A gitignore glob (no leading or trailing slash) as a regex over posix paths."""
    out: list[str] = []
    index = 0
    while index < len(glob):
        char = glob[index]
        if glob.startswith("**/", index):
            out.append("(?:.*/)?")
            index += 3
        elif glob.startswith("/**", index) and index + 3 == len(glob):
            out.append("/.*")
            index += 3
        elif glob.startswith("**", index):
            out.append(".*")
            index += 2
        elif char == "*":
            out.append("[^/]*")
            index += 1
        elif char == "?":
            out.append("[^/]")
            index += 1
        elif char == "[" and "]" in glob[index + 2 :]:
            end = glob.index("]", index + 2)
            body = glob[index + 1 : end]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            index = end + 1
        elif char == "\\" and index + 1 < len(glob):
            out.append(re.escape(glob[index + 1]))
            index += 2
        else:
            out.append(re.escape(char))
            index += 1
    return "".join(out)


def parse_rules(text: str, base: str) -> list[IgnoreRule]:
    """The rules of a .gitignore in folder ``base`` (posix, relative to the walk root)."""
    rules = []
    for line in text.splitlines():
        pattern = re.sub(r"(?<!\\)\s+$", "", line)
        if not pattern or pattern.startswith("#"):
            continue
        negated = pattern.startswith("!")
        pattern = pattern[1:] if negated else pattern
        if pattern.startswith(("\\!", "\\#")):
            pattern = pattern[1:]
        folders_only = pattern.endswith("/")
        pattern = pattern.rstrip("/")
        if not pattern:
            continue
        anchored = "/" in pattern
        body = _translate(pattern.lstrip("/"))
        regex = body if anchored else f"(?:.*/)?{body}"
        rules.append(IgnoreRule(base, re.compile(regex, re.DOTALL), negated, folders_only))
    return rules


def read_rules(ignore_file: Path, base: str) -> list[IgnoreRule]:
    """The rules of ``ignore_file`` (none when it is absent, unreadable or too big)."""
    try:
        raw = read_source_bytes(ignore_file, MAX_IGNORE_FILE_BYTES)
    except (OSError, FileTooLarge):
        return []
    return parse_rules(raw.decode("utf-8", "replace"), base)


def is_ignored(rules: list[IgnoreRule], relative: str, is_folder: bool) -> bool:
    """Whether the last rule matching ``relative`` ignores it."""
    ignored = False
    for rule in rules:
        if rule.matches(relative, is_folder):
            ignored = not rule.negated
    return ignored
