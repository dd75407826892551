"""The types an annotation says a value has (``analysis.names.annotated_types``)."""

from __future__ import annotations

import ast

from ddplint.analysis.names import annotated_types, dotted_name


def _types(annotation: str) -> list[str | None]:
    expression = ast.parse(annotation, mode="eval").body
    return [dotted_name(t) for t in annotated_types(expression)]


def test_optional_union_pipe_and_quoted_annotations_name_each_type() -> None:
    assert _types("L.Trainer") == ["L.Trainer"]
    assert _types("Optional[Trainer]") == ["Trainer"]
    assert _types("typing.Union[pl.Trainer, None]") == ["pl.Trainer", None]
    assert _types("Trainer | None") == ["Trainer", None]
    assert _types("'pl.Trainer'") == ["pl.Trainer"]
    assert _types("Optional['pl.Trainer | None']") == ["pl.Trainer", None]


def test_containers_and_broken_quotes_name_no_element_type() -> None:
    assert _types("list[Trainer]") == [None]
    assert _types("'not a type ('") == []
    assert list(annotated_types(None)) == []
