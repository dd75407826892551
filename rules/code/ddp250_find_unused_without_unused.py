"""DDP250: ``find_unused_parameters=True`` on a model whose forward uses every parameter."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from ddplint.code.collectives.ddp_wrappers import data_parallel_wrappers, is_ddp_wrapper
from ddplint.code.context import CodeContext
from ddplint.code.steps.forward_submodules import WholeForwards, built_class
from ddplint.code.syntax.call_args import keyword_argument
from ddplint.code.syntax.constants import literal_value
from ddplint.finding import Finding, Severity
from ddplint.rule import CodeRule


class FindUnusedWithoutUnused(CodeRule):
    """
    ## What it does
    Flags `find_unused_parameters=True` on `DistributedDataParallel(Net(...))` when the
    class `Net` is defined in the same file and its `forward` visibly uses every
    parameter on its one path: a straight-line `forward` (no branch, loop, `with`,
    early return, `detach()` or `no_grad`) that touches every `self.x` holding
    parameters, each a `torch.nn` layer or a class of the same file that passes the
    same test. Nothing is reported when a submodule comes from elsewhere (a factory, an
    argument, an imported class), when the class derives from anything but
    `nn.Module`, or when `static_graph=True` is set.

    ## Why is this bad?
    With the flag on, DDP walks the autograd graph from the forward's outputs after
    every forward to find parameters that will get no gradient. When there are none,
    that walk is pure overhead on every step, and DDP says so at run time ("
    find_unused_parameters=True was specified in DDP constructor, but did not find any
    unused parameters in the forward pass").

    ## Example
    ```python
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(8, 8)
            self.head = nn.Linear(8, 2)

        def forward(self, x):
            return self.head(torch.relu(self.body(x)))

    model = DDP(Net().cuda(), device_ids=[rank], find_unused_parameters=True)
    ```

    ## Use instead
    ```python
    model = DDP(Net().cuda(), device_ids=[rank])
    ```

    ## Fix safety
    No fix is offered: the flag may be kept on purpose for a forward that changes later
    (a config switch that is not in sight), and removing it from a model that does skip
    parameters turns a slowdown into a crash.

    ## References
    - PyTorch docs: `DistributedDataParallel` (`find_unused_parameters`: "traversing
      the autograd graph introduces extra overheads").
    - KAIR issue #103, Meta-DETR issue #60, modelscope issue #192 (the run-time
      warning on models that use every parameter).
    """

    code = "DDP250"
    name = "find-unused-without-unused"
    summary = "find_unused_parameters=True on a model whose forward uses every parameter"
    severity = Severity.INFO
    default_enabled = False
    needles = ("find_unused_parameters",)

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        calls = ctx.index.nodes(cst.Call)
        if any(_calls_method(call, "_set_static_graph") for call in calls):
            return
        whole = WholeForwards(ctx.index, ctx.names)
        for wrapper in data_parallel_wrappers(ctx.names, calls):
            if wrapper.find_unused_parameters is not True or not is_ddp_wrapper(
                ctx.names, wrapper.call
            ):
                continue
            static = keyword_argument(wrapper.call, "static_graph")
            if static is not None and literal_value(static.value) is not False:
                continue
            flag = keyword_argument(wrapper.call, "find_unused_parameters")
            for model in wrapper.models:
                class_name = built_class(ctx.index, model)
                if flag is None or class_name is None or not whole.uses_everything(class_name):
                    continue
                message = (
                    f"`{class_name}.forward` uses every parameter on its one path, so "
                    "`find_unused_parameters=True` only adds a walk of the autograd graph "
                    "after every forward (DDP warns that it found no unused parameters)"
                )
                summary = (
                    f"`{class_name}` uses every parameter: `find_unused_parameters=True` "
                    "costs a graph walk per step"
                )
                yield ctx.finding(self, flag, message, summary=summary)


def _calls_method(call: cst.Call, method: str) -> bool:
    return isinstance(call.func, cst.Attribute) and call.func.attr.value == method
