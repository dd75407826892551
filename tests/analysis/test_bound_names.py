"""The names an assignment target binds (``analysis.names.bound_names``)."""

from __future__ import annotations

import ast

from ddplint.analysis.names import bound_names


def _bound(source: str) -> list[str]:
    statement = ast.parse(source).body[0]
    assert isinstance(statement, ast.Assign)
    return [name for target in statement.targets for name in bound_names(target)]


def test_plain_dotted_unpacked_and_starred_targets_bind_their_names() -> None:
    assert _bound("a = 1") == ["a"]
    assert _bound("self.model.rank = 1") == ["self.model.rank"]
    assert _bound("(a, [b, *c]), d.e = x") == ["a", "b", "c", "d.e"]
    assert _bound("a = b = 1") == ["a", "b"]


def test_an_item_stored_into_a_container_binds_no_name() -> None:
    assert _bound("a[0] = 1") == []
    assert _bound("a.b[i], c = x") == ["c"]
    assert _bound("f().x = 1") == []
