"""Each rule's precision measured on code nobody tuned it on (issue 23).

The figures live in one data file, ``blind_precision.json`` beside this module, written from
the recorded verdicts by ``python bench/blind_corpus.py diff RUN --write-precision``
(plus the figures of earlier blind reviews, kept by hand in the same file). ``ddplint
rules`` and the hazard catalogue (``docs/hazards.md``) read it from here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

DATA = Path(__file__).with_name("blind_precision.json")


@dataclass(frozen=True)
class Measure:
    """One rule's findings read on one blind corpus and how they were judged."""

    corpus: str
    true: int
    false: int
    debatable: int

    @property
    def read(self) -> int:
        """Findings read."""
        return self.true + self.false + self.debatable

    @property
    def precision(self) -> float | None:
        """TRUE / (TRUE + FALSE), or None when nothing was judged either way."""
        judged = self.true + self.false
        return self.true / judged if judged else None

    def short(self) -> str:
        """``3/4 75% of 6``: TRUE of TRUE + FALSE, the share, findings read (``0 read``)."""
        if not self.read:
            return "0 read"
        share = "n/a" if self.precision is None else f"{100 * self.precision:.0f}%"
        return f"{self.true}/{self.true + self.false} {share} of {self.read}"

    def sentence(self, corpora: dict[str, str]) -> str:
        """One sentence for the catalogue: counts, precision and the corpus named."""
        where = corpora.get(self.corpus, self.corpus)
        if not self.read:
            return f"Blind precision: no finding on {where}."
        share = "n/a" if self.precision is None else f"{100 * self.precision:.0f}%"
        return (
            f"Blind precision: {share} ({self.true} TRUE, {self.false} FALSE, "
            f"{self.debatable} DEBATABLE of {self.read} findings read) on {where}."
        )


@cache
def _load() -> tuple[dict[str, str], dict[str, tuple[Measure, ...]]]:
    data = json.loads(DATA.read_text(encoding="utf-8"))
    corpora = {str(k): str(v) for k, v in data["corpora"].items()}
    rules = {
        code: tuple(
            Measure(str(m["corpus"]), int(m["true"]), int(m["false"]), int(m["debatable"]))
            for m in measures
        )
        for code, measures in data["rules"].items()
    }
    return corpora, rules


def corpora() -> dict[str, str]:
    """The blind corpora by short name, each with its description (commit, date)."""
    return _load()[0]


def measures(code: str) -> tuple[Measure, ...]:
    """Every blind measure of rule ``code``, newest corpus first (empty when none)."""
    return _load()[1].get(code, ())


def summary(code: str) -> str:
    """Every blind corpus added up, in a few characters, for ``ddplint rules`` and the
    catalogue's index (``-`` when the rule was never measured)."""
    found = measures(code)
    if not found:
        return "-"
    total = Measure(
        "all",
        sum(m.true for m in found),
        sum(m.false for m in found),
        sum(m.debatable for m in found),
    )
    return total.short()


def sentences(code: str) -> str:
    """The catalogue's lines on a rule's blind precision, or a note that none was read."""
    found = measures(code)
    if not found:
        return "Blind precision: not measured yet."
    names = corpora()
    return " ".join(measure.sentence(names) for measure in found)
