"""Object flow of one allocation through a module, and the loops that walk it
(``analysis.object_flow``), and the samplers walked every epoch without ``set_epoch``
(``analysis.sampler_epochs``)."""

from __future__ import annotations

import ast
import textwrap

import pytest

from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.object_flow import ModuleCode, ObjectFlow
from ddplint.analysis.sampler_epochs import samplers_without_set_epoch

HEAD = "from torch.utils.data import DataLoader, DistributedSampler\n"


def walks(code: str) -> list[tuple[int, int, int]]:
    """(walk line, outer loop line, calls from the outer loop) of each loop over what
    ``make()`` returns, lines counted in ``code``."""
    module = ast.parse(textwrap.dedent(code))
    analysis = ModuleAnalysis(module)
    made = [
        node
        for node in ast.walk(module)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Made"
    ]
    flow = ObjectFlow(
        ModuleCode(analysis.nodes, analysis.names), lambda e, _: any(e is m for m in made)
    )
    return [(w.walk.lineno, w.outer.lineno, len(w.calls)) for w in flow.loops()]


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        # A name, in the same function.
        ("x = Made()\nfor e in range(3):\n    for b in x:\n        pass\n", [(3, 2, 0)]),
        # Walked once: no outer loop.
        ("x = Made()\nfor b in x:\n    pass\n", []),
        # Re-bound to something else before the walk of another name: not this object.
        ("x = Made()\ny = list()\nfor e in range(3):\n    for b in y:\n        pass\n", []),
        # A factory's return, walked through enumerate and a progress bar.
        (
            "from tqdm import tqdm\ndef make():\n    return Made()\n"
            "def run():\n    x = make()\n    while True:\n"
            "        for i, b in enumerate(tqdm(x)):\n            pass\n",
            [(7, 6, 0)],
        ),
        # A helper's parameter, the helper called in the epoch loop.
        (
            "def one(batches):\n    for b in batches:\n        pass\n"
            "def run():\n    x = Made()\n    for e in range(3):\n        one(x)\n",
            [(2, 6, 1)],
        ),
        # A helper nested in the function that makes the object.
        (
            "def run():\n    x = Made()\n    def one(batches):\n"
            "        for e in range(3):\n            for b in batches:\n                pass\n"
            "    one(x)\n",
            [(5, 4, 0)],
        ),
        # The same helper handed something else: not this object.
        (
            "def one(batches):\n    for b in batches:\n        pass\n"
            "def run():\n    x = Made()\n    for e in range(3):\n        one([1, 2])\n",
            [],
        ),
        # A field set in __init__ from a constructor argument, walked by a method that
        # another method's loop calls through self.
        (
            "class T:\n    def __init__(self, loader):\n        self.loader = loader\n"
            "    def _epoch(self):\n        for b in self.loader:\n            pass\n"
            "    def fit(self):\n        for e in range(3):\n            self._epoch()\n"
            "def main():\n    T(Made()).fit()\n",
            [(5, 8, 1)],
        ),
        # A module-level name read in a function...
        (
            "x = Made()\ndef run():\n    for e in range(3):\n"
            "        for b in x:\n            pass\n",
            [(4, 3, 0)],
        ),
        # ...but not where a parameter of the function has that name.
        (
            "x = Made()\ndef run(x):\n    for e in range(3):\n"
            "        for b in x:\n            pass\n",
            [],
        ),
        # Two callers up: the loop is around the caller of the caller.
        (
            "def inner(x):\n    for b in x:\n        pass\n"
            "def middle(x):\n    inner(x)\n"
            "def run():\n    x = Made()\n    for e in range(3):\n        middle(x)\n",
            [(2, 8, 2)],
        ),
        # An item of a dict display, read back by its key where the dict travels.
        (
            "class T:\n    def __init__(self, loaders):\n        self.loaders = loaders\n"
            "    def fit(self):\n        for e in range(3):\n"
            "            for b in self.loaders['train']:\n                pass\n"
            "def main():\n    T({'train': Made(), 'dev': list()}).fit()\n",
            [(6, 5, 0)],
        ),
        # ...not by another key.
        (
            "class T:\n    def __init__(self, loaders):\n        self.loaders = loaders\n"
            "    def fit(self):\n        for e in range(3):\n"
            "            for b in self.loaders['dev']:\n                pass\n"
            "def main():\n    T({'train': Made(), 'dev': list()}).fit()\n",
            [],
        ),
        # An item stored by key, and two keys deep.
        (
            "def run():\n    runs = {}\n    runs['train'] = {'loader': Made()}\n"
            "    for e in range(3):\n        for b in runs['train']['loader']:\n"
            "            pass\n",
            [(5, 4, 0)],
        ),
        # A key that is not a constant says nothing.
        (
            "def run(name):\n    runs = {}\n    runs[name] = Made()\n"
            "    for e in range(3):\n        for b in runs['train']:\n            pass\n",
            [],
        ),
        # Either branch of a conditional, and either operand of `or`.
        (
            "x = Made() if c else None\nfor e in range(3):\n    for b in x:\n        pass\n",
            [(3, 2, 0)],
        ),
        ("x = given or Made()\nfor e in range(3):\n    for b in x:\n        pass\n", [(3, 2, 0)]),
        # ...but a conditional of other values is not this object.
        ("x = list() if c else None\nfor e in range(3):\n    for b in x:\n        pass\n", []),
        # An iterator made anew inside a loop (when the last one ran out) walks it.
        (
            "x = Made()\nit = iter(x)\nfor step in range(9):\n    try:\n"
            "        b = next(it)\n    except StopIteration:\n        it = iter(x)\n",
            [(7, 3, 0)],
        ),
        # An iterator made once, before the loop, walks it once; so does a peek at one
        # item (`next(iter(x))`) inside a loop.
        ("x = Made()\nit = iter(x)\nfor step in range(9):\n    b = next(it)\n", []),
        ("x = Made()\nfor e in range(3):\n    shape = next(iter(x))\n", []),
        # An iterator kept on self, made anew by a method a loop calls.
        (
            "class T:\n    def __init__(self):\n        self.loader = Made()\n"
            "    def refill(self):\n        self.it = iter(self.loader)\n"
            "    def fit(self):\n        for e in range(3):\n            self.refill()\n",
            [(5, 7, 1)],
        ),
    ],
)
def test_loops_over_an_allocation(code: str, expected: list[tuple[int, int, int]]) -> None:
    assert walks(code) == expected


def unset(code: str) -> list[int]:
    analysis = ModuleAnalysis(ast.parse(HEAD + textwrap.dedent(code)))
    return [u.sampler.lineno - 1 for u in samplers_without_set_epoch(analysis)]


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        # No set_epoch at all.
        (
            "s = DistributedSampler(d)\nl = DataLoader(d, sampler=s)\n"
            "for e in range(3):\n    for b in l:\n        pass\n",
            [1],
        ),
        # On the sampler in the epoch loop.
        (
            "s = DistributedSampler(d)\nl = DataLoader(d, sampler=s)\n"
            "for e in range(3):\n    s.set_epoch(e)\n    for b in l:\n        pass\n",
            [],
        ),
        # Through the loader's sampler.
        (
            "s = DistributedSampler(d)\nl = DataLoader(d, sampler=s)\n"
            "for e in range(3):\n    l.sampler.set_epoch(e)\n    for b in l:\n        pass\n",
            [],
        ),
        # Once, before the epoch loop.
        (
            "s = DistributedSampler(d)\nl = DataLoader(d, sampler=s)\ns.set_epoch(0)\n"
            "for e in range(3):\n    for b in l:\n        pass\n",
            [1],
        ),
        # On another sampler of the module only (the loop trains).
        (
            "s = DistributedSampler(d)\nv = DistributedSampler(d)\n"
            "l = DataLoader(d, sampler=s)\nfor e in range(3):\n    v.set_epoch(e)\n"
            "    for b in l:\n        b.loss.backward()\n",
            [1],
        ),
        # The same, but the walk only evaluates: its order does not matter.
        (
            "s = DistributedSampler(d)\nv = DistributedSampler(d)\n"
            "l = DataLoader(d, sampler=s)\nfor e in range(3):\n    v.set_epoch(e)\n"
            "    for b in l:\n        b.loss\n",
            [],
        ),
        # On something the module does not make: it may be this sampler.
        (
            "s = DistributedSampler(d)\nl = DataLoader(d, sampler=s)\n"
            "def hook(loader, e):\n    loader.sampler.set_epoch(e)\n"
            "for e in range(3):\n    for b in l:\n        pass\n",
            [],
        ),
        # In a function the epoch loop calls.
        (
            "s = DistributedSampler(d)\nl = DataLoader(d, sampler=s)\n"
            "def before(e):\n    s.set_epoch(e)\n"
            "for e in range(3):\n    before(e)\n    for b in l:\n        pass\n",
            [],
        ),
        # In a function called only outside the epoch loop.
        (
            "s = DistributedSampler(d)\nl = DataLoader(d, sampler=s)\n"
            "def before(e):\n    s.set_epoch(e)\nbefore(0)\n"
            "for e in range(3):\n    for b in l:\n        pass\n",
            [1],
        ),
    ],
)
def test_samplers_without_set_epoch(code: str, expected: list[int]) -> None:
    assert unset(code) == expected


def test_the_first_item_of_a_tuple_a_call_makes_holds_the_object() -> None:
    module = ast.parse(
        textwrap.dedent(
            """
            def setup(model):
                engine, opt, *_ = Pair(model)
                helper, first = Pair(model)
                *rest, last = Pair(model)
                return engine, opt, first, last

            class Trainer:
                def init(self, model):
                    self.engine, self.opt = Pair(model)

                def step(self):
                    self.engine.step()
                    self.opt.step()
            """
        )
    )
    analysis = ModuleAnalysis(module)

    def pair(expression: ast.expr, _: ast.AST) -> bool:
        return (
            isinstance(expression, ast.Call)
            and isinstance(expression.func, ast.Name)
            and expression.func.id == "Pair"
        )

    flow = ObjectFlow(ModuleCode(analysis.nodes, analysis.names), lambda e, _: False, pair)
    setup, trainer = module.body
    assert isinstance(setup, ast.FunctionDef) and isinstance(trainer, ast.ClassDef)
    engine, opt, first, last = setup.body[-1].value.elts  # type: ignore[attr-defined]
    assert flow.carries(engine, setup)
    assert not flow.carries(opt, setup)  # only the first item
    assert not flow.carries(first, setup)
    assert not flow.carries(last, setup)  # a starred first target takes no single item
    step = trainer.body[1]
    calls = [s.value.func.value for s in step.body]  # type: ignore[attr-defined]
    assert flow.carries(calls[0], step)  # self.engine, in another method
    assert not flow.carries(calls[1], step)
