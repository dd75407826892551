"""A container that some ranks add items to and others do not: its length and keys are
this rank's own, in the function and, for a field of ``self``, in the class's other
methods."""

from __future__ import annotations

import pytest

from ddplint.analysis.divergence import Facet, Source
from tests.analysis.test_rank_divergence import _taint_at


@pytest.mark.parametrize(
    ("filled", "test", "shape_differs"),
    [
        ("seen[step] = loss", "dist.get_rank() == 0", True),
        ("seen.append(loss)", "time.time() > deadline", True),
        ("seen.extend([loss])", "dist.get_rank() == 0", True),
        ("seen[step] = loss", "step % 10 == 0", False),
        ("seen.append(loss)", "deadline > 3", False),
    ],
)
def test_a_container_filled_under_a_divergent_test_differs_in_length(
    filled: str, test: str, shape_differs: bool
) -> None:
    source = f"""
    def f(step, loss, deadline, seen):
        if {test}:
            {filled}
        use(seen)  # here
    """
    taint = _taint_at(source, "seen")
    if not shape_differs:
        assert taint is None
        return
    assert taint is not None and taint.source is Source.DECIDED
    assert taint.facets & Facet.SHAPE


def test_a_container_filled_on_every_arm_holds_rank_values_but_its_length_agrees() -> None:
    source = """
    def f(loss, seen):
        if dist.get_rank() == 0:
            seen.append(loss)
        else:
            seen.append(loss * 2)
        use(seen)  # here
    """
    taint = _taint_at(source, "seen")
    assert taint is None or not taint.facets & Facet.SHAPE


@pytest.mark.parametrize(
    ("store", "shape_differs"),
    [
        ("self.pending[step] = loss", True),
        ("self.pending.append(loss)", True),
        ("other.pending[step] = loss", False),
    ],
)
def test_a_field_filled_on_some_ranks_differs_in_the_other_methods(
    store: str, shape_differs: bool
) -> None:
    source = f"""
    class Recorder:
        def __init__(self, other):
            self.pending = []
            self.other = other

        def observe(self, step, loss, other):
            if dist.get_rank() == 0:
                {store}

        def flush(self):
            use(self.pending)  # here
    """
    taint = _taint_at(source, "self.pending")
    assert (taint is not None and bool(taint.facets & Facet.SHAPE)) is shape_differs


@pytest.mark.parametrize(
    ("read", "differs"),
    [
        ('state["ema"]', True),
        ('"ema" in state', True),
        ('state["step"]', False),
        ('"step" in state', False),
        ("state is None", False),
    ],
)
def test_an_item_stored_under_a_fixed_key_on_some_ranks_leaves_the_other_keys_agreed(
    read: str, differs: bool
) -> None:
    source = f"""
    def f(path, ema_path):
        state = torch.load(path)
        if dist.get_rank() == 0:
            state["ema"] = torch.load(ema_path)
        value = {read}
        use(value)  # here
    """
    taint = _taint_at(source, "value")
    assert (taint is not None) is differs
