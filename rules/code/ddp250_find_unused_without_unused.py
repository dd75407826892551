"""DDP250: ``find_unused_parameters=True`` on a model whose forward uses every parameter."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddplint.analysis.api import DDP_WRAPPERS
from ddplint.analysis.ddp_wrappings import sets_static_graph, wrapped_classes
from ddplint.analysis.names import call_argument, keyword_argument
from ddplint.code.context import CodeContext
from ddplint.code.values.declared_values import declared_value
from ddplint.finding import Finding, Severity
from ddplint.rule import CodeRule


class FindUnusedWithoutUnused(CodeRule):
    """
    ## What it does
    Flags `find_unused_parameters=True` on `DistributedDataParallel(Net(...))` when the
    class `Net` is defined in the same file and its `forward` visibly uses every
    parameter on its one path: a straight-line `forward` (no branch, loop, `with`,
    early return, `detach()` or `no_grad`, also in the methods of the class it calls)
    that touches every `self.x` holding parameters, each a `torch.nn` layer or a class
    of the same file that passes the same test. The model may be built right there,
    bound to a name first (a re-bound name is its latest value) or to `self.x` in the
    method that wraps it, or handed to a function of the module that wraps it; the
    flag may be a literal, a name bound to one, or a value whose declared default (a
    parameter's, an argparse option's, a config field's) or YAML config value is
    `True`, which the message cites. Nothing is
    reported when a submodule comes from elsewhere (a factory, an argument, an imported
    class), when the class derives from anything but `nn.Module`, or when
    `static_graph=True` is set. This rule is built on the analysis core (its object
    flow, constants, declared defaults and config bindings).

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
    needs_peers = True
    reads_libcst = False
    needles = ("find_unused_parameters",)

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        analysis = ctx.analysis
        calls = analysis.nodes.calls_in_order()
        if any(_called_method(call) == "_set_static_graph" for call in calls):
            return
        for call in calls:
            if analysis.names.resolve(call.func) not in DDP_WRAPPERS:
                continue
            flag = keyword_argument(call, "find_unused_parameters")
            model = call_argument(call, 0, "module")
            if flag is None or model is None or sets_static_graph(analysis, call):
                continue
            scope = analysis.nodes.scope_of_call(call)
            why = _flag_true(ctx, flag.value, scope)
            if why is None:
                continue
            classes = wrapped_classes(analysis, model, call)
            if not classes or not all(analysis.whole_forwards.uses_everything(c) for c in classes):
                continue
            class_name = " / ".join(f"`{c}`" for c in classes)
            forward = " / ".join(f"`{c}.forward`" for c in classes)
            message = (
                f"{forward} {'uses' if len(classes) == 1 else 'use'} every parameter on its "
                "one path, so "
                f"`find_unused_parameters=True`{why} only adds a walk of the autograd graph "
                "after every forward (DDP warns that it found no unused parameters)"
            )
            summary = (
                f"{class_name} {'uses' if len(classes) == 1 else 'use'} every parameter: "
                "`find_unused_parameters=True` "
                "costs a graph walk per step"
            )
            yield ctx.ast_finding(self, flag, message, summary=summary)


def _flag_true(ctx: CodeContext, value: ast.expr, scope: ast.AST) -> str | None:
    """``""`` when ``value`` is True where it is written (a literal or a name bound to
    one), a clause citing the declared default or config value when that is True; None
    otherwise."""
    declared = declared_value(ctx, value, scope)
    if declared is None or declared.value is not True:
        return None
    return f" ({declared.cited})" if declared.cited else ""


def _called_method(call: ast.Call) -> str | None:
    return call.func.attr if isinstance(call.func, ast.Attribute) else None
