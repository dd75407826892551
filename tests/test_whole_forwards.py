"""The core's whole-forward question (DDP250): does a module class use every parameter
it holds on the one path of its forward, and which class a wrapped model builds."""

from __future__ import annotations

import ast

from ddplint.analysis.functions import ModuleAnalysis

PRELUDE = "import torch\nfrom torch import nn\n"

STRAIGHT = """
class Net(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.width = width
        self.body = nn.Linear(width, width)
        self.head = nn.Linear(width, 2)

    def forward(self, x):
        return self.head(self.body(x))
"""


def _analysis(code: str) -> ModuleAnalysis:
    return ModuleAnalysis(ast.parse(PRELUDE + code))


def _whole(code: str, name: str = "Net") -> bool:
    return _analysis(code).whole_forwards.uses_everything(name)


def test_straight_forward_is_whole() -> None:
    assert _whole(STRAIGHT)


def test_branch_loop_or_graph_cut_is_no_proof() -> None:
    branching = STRAIGHT.replace(
        "return self.head(self.body(x))",
        "if x.sum() > 0:\n            x = self.body(x)\n        return self.head(x)",
    )
    detached = STRAIGHT.replace("self.body(x))", "self.body(x).detach())")
    early = STRAIGHT.replace(
        "return self.head(self.body(x))", "return self.body(x)\n        return self.head(x)"
    )
    assert not _whole(branching)
    assert not _whole(detached)
    assert not _whole(early)


def test_submodule_used_through_a_helper_method() -> None:
    helper = STRAIGHT.replace(
        "return self.head(self.body(x))",
        "return self.head(self._body(x))\n\n    def _body(self, x):\n        return self.body(x)",
    )
    branching_helper = helper.replace(
        "return self.body(x)", "return self.body(x) if x.sum() > 0 else x"
    )
    assert _whole(helper)
    assert not _whole(branching_helper)


def test_submodule_not_in_sight_is_no_proof() -> None:
    handed = STRAIGHT.replace("nn.Linear(width, width)", "make_body(width)")
    argument = STRAIGHT.replace("width: int", "width").replace(
        "self.width = width", "self.width = width\n        self.extra = width"
    )
    assert not _whole(handed)
    assert not _whole(argument)


def test_submodule_never_touched_is_no_proof() -> None:
    assert not _whole(STRAIGHT.replace("self.head(self.body(x))", "self.body(x)"))


def test_frozen_submodule_need_not_run() -> None:
    frozen = STRAIGHT.replace(
        "self.head = nn.Linear(width, 2)",
        "self.head = nn.Linear(width, 2)\n        self.head.requires_grad_(False)",
    ).replace("self.head(self.body(x))", "self.body(x)")
    assert _whole(frozen)


def _wrapped_class(code: str) -> str | None:
    analysis = _analysis(code)
    call = next(
        node
        for node in ast.walk(analysis.module)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "DDP"
    )
    return analysis.whole_forwards.built_class(call.args[0], call)


def test_built_class_follows_the_latest_binding() -> None:
    rebound = (
        "def main(DDP):\n    model = Other()\n    model = Net(4).cuda()\n    return DDP(model)\n"
    )
    branched = (
        "def main(DDP, big):\n    model = Net(4)\n    if big:\n        model = Other()\n"
        "    return DDP(model)\n"
    )
    assert _wrapped_class(rebound) == "Net"
    assert _wrapped_class(branched) is None


def test_built_class_follows_a_name_bound_once_at_module_level() -> None:
    assert _wrapped_class("model = Net(4)\nwrapped = DDP(model)\n") == "Net"
    assert _wrapped_class("model = Net(4)\nmodel = make(model)\nwrapped = DDP(model)\n") is None


def test_built_class_of_an_attribute_bound_in_the_same_method() -> None:
    method = "class T:\n    def setup(self, DDP):\n        self.model = Net(4)\n{between}"
    method += "        return DDP(self.model)\n"
    assert _wrapped_class(method.format(between="")) == "Net"
    assert _wrapped_class(method.format(between="        self.reset()\n")) is None
