"""The hazard catalogue, ``docs/hazards.md``, generated from the rules' own documentation
(what ``ddplint explain`` prints), so that it cannot drift from them.

    python -m ddplint.hazard_docs             # rewrite docs/hazards.md
    python -m ddplint.hazard_docs --check     # exit 1 when the file is out of date
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from ddplint import blind_precision
from ddplint.rule import Rule
from ddplint.rules import all_rules

#: Where the catalogue lives in the repository.
DEFAULT_PATH = Path("docs") / "hazards.md"
#: How a rule's References cite another rule's entry in the catalogue.
CITATION = re.compile(r"docs/hazards\.md#(ddp\d{3})")

_INTRODUCTION = """\
# ddplint hazard catalogue

Every hazard ddplint checks for, one entry per rule: what it flags, why it breaks a
distributed run, the correct form, whether `--fix` can repair it, and where to read more.
`ddplint explain CODE` prints the same text; `ddplint rules` lists the rules.

Blind precision: TRUE / (TRUE + FALSE) of the findings read on code nobody tuned the rules
on (`bench/blind_corpus.py`, `docs/precision.md`, "Blind figures"), as TRUE/(TRUE+FALSE),
the share, and the findings read; the index adds every blind corpus up, each entry names
them. A rule is on by default only when it reaches 90%
over at least 10 blind findings (or 0 false of at least 5).

This file is generated from the rules' documentation by `python -m ddplint.hazard_docs`;
edit the rule's docstring (`rules/code/` or `rules/config/`), never this file.
"""


def _anchor(code: str) -> str:
    return code.lower()


def _entry(rule: type[Rule]) -> str:
    """One rule's section: an anchor (``#ddp201``), a heading, its status line, and its
    documentation with the headings one level down and citations of other entries as
    links within the page."""
    body = re.sub(r"^(#{2,5}) ", r"#\1 ", rule.documentation(), flags=re.MULTILINE)
    body = CITATION.sub(lambda m: f"[{m.group(1).upper()}](#{m.group(1)})", body)
    return (
        f'<a id="{_anchor(rule.code)}"></a>\n\n'
        f"## {rule.code} {rule.name}\n\n{rule.status()}\n\n{rule.measured()}\n\n{body}\n"
    )


def _index(rules: dict[str, type[Rule]]) -> str:
    rows = [
        "| Code | Name | What it flags | Default | Fix | Blind precision |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for code, rule in rules.items():
        default = "on" if rule.default_enabled else "preview"
        fix = rule.fix_applicability.value if rule.fix_applicability else "-"
        summary = rule.summary.replace("|", "\\|")
        blind = blind_precision.summary(code)
        rows.append(
            f"| [{code}](#{_anchor(code)}) | {rule.name} | {summary} | {default} | {fix} "
            f"| {blind} |"
        )
    return "\n".join(rows) + "\n"


def render(rules: dict[str, type[Rule]] | None = None) -> str:
    """The whole catalogue for ``rules`` (every rule by default), in code order."""
    rules = all_rules() if rules is None else rules
    parts = [_INTRODUCTION, _index(rules), *(_entry(rule) for rule in rules.values())]
    return "\n".join(parts)


def dangling_citations(rules: dict[str, type[Rule]] | None = None) -> list[str]:
    """``CODE -> ddpNNN`` for every citation of a catalogue entry that does not exist."""
    rules = all_rules() if rules is None else rules
    return [
        f"{code} -> {cited}"
        for code, rule in rules.items()
        for cited in CITATION.findall(rule.documentation())
        if cited.upper() not in rules
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ddplint.hazard_docs", description=__doc__)
    parser.add_argument("path", nargs="?", type=Path, default=DEFAULT_PATH)
    parser.add_argument("--check", action="store_true", help="exit 1 when out of date")
    args = parser.parse_args(argv)
    dangling = dangling_citations()
    if dangling:
        print(f"citations of missing entries: {', '.join(dangling)}", file=sys.stderr)
        return 1
    text = render()
    current = args.path.read_text(encoding="utf-8") if args.path.exists() else None
    if args.check:
        if current != text:
            print(f"{args.path} is out of date: run python -m ddplint.hazard_docs", file=sys.stderr)
            return 1
        return 0
    if current != text:
        args.path.parent.mkdir(parents=True, exist_ok=True)
        args.path.write_text(text, encoding="utf-8")
        print(f"wrote {args.path} ({len(all_rules())} rules)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
