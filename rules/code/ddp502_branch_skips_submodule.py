"""DDP502: a forward branch that skips a submodule while DDP expects every parameter."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddplint.analysis.ddp_wrappings import (
    DataParallelWrapping,
    data_parallel_wrappings,
    sets_static_graph,
    wrapped_classes,
)
from ddplint.analysis.forward_branches import ForwardBranches
from ddplint.analysis.names import has_star_arguments
from ddplint.code.context import CodeContext
from ddplint.code.edits.ast_edits import add_ast_keyword, ast_node_text, replace_ast_node
from ddplint.code.values.declared_values import declared_value
from ddplint.finding import Applicability, Edit, Finding, Fix, Severity
from ddplint.rule import CodeRule


class BranchSkipsSubmodule(CodeRule):
    """
    ## What it does
    Flags an `if` in `forward` (or a LightningModule's `training_step`) of a module
    class whose condition reads the inputs, a rank or a random draw, when one path calls
    a submodule with parameters (`self.head(x)`) that the other path does not, and the
    same file wraps models with DDP without `find_unused_parameters=True`:
    `DistributedDataParallel(...)`, `DDPStrategy(...)` or `Trainer(strategy="ddp")`.
    The flag is read as written, through a name bound to it, or from a declared
    default (a parameter's, an argparse option's, a config field's) or the YAML
    config the module is bound to, which the message cites; the wrapped model is
    followed through names (a re-bound name is its latest value), `self.x` fields and
    the callers of a function that wraps what it is handed.

    The forward is followed into the methods of the same class it calls
    (`self._aux_loss(x)`) and into the `forward` of submodules whose class the same
    file defines (`self.criterion = MatchingLoss()`), up to three calls deep. A
    condition counts when it reads an input, a value computed from the inputs
    (`if matches.numel() == 0:`), the epoch (`if self.epoch < 10:`), a rank or a random
    draw (also through a local: `p = torch.rand([])`). Stochastic depth (a block that
    returns its input on a random draw) and LayerDrop (`for layer in self.layers:` with
    `if random draw: continue` before `layer(x)`) are forms of it: a random draw is
    not the same on every rank and, even with a seed every rank shares, leaves the
    dropped layer's parameters without a gradient on that step.
    The inputs count through every value computed from them, flow-sensitively (a
    name bound again is a new value), and a field of the module counts when code
    outside `__init__` sets it (`self.epoch += 1`, `model.module.epoch = epoch`).
    Branches on the module's own settings (`if self.use_head:`) are not flagged:
    they take the same path every step. A submodule counts as used on a path when
    the path reads `self.x`, calls a name bound to it (`head = self.head`; `for
    layer in self.layers`) or calls a method of the class that uses it on every
    path; what the forward uses on every path is used, whatever a branch of a
    method it calls does. Parameter-free layers (dropout, activations,
    pooling, losses) do not count, nor do frozen submodules
    (`self.x.requires_grad_(False)`, or `p.requires_grad = False` for each of
    `self.x.parameters()`): DDP does not wait for parameters without gradients.

    ## Why is this bad?
    DDP reduces gradients of every parameter it expects to see. In an iteration where
    the branch skips a submodule, its parameters get no gradient, the reduction never
    finishes, and the next iteration fails with `RuntimeError: Expected to have finished
    reduction in the prior iteration` (reproduced) — one iteration late, so the stack
    trace points at the wrong step. When the condition differs across ranks, they can
    also hang. `static_graph=True` does not help: it promises that the set of used
    parameters never changes between iterations, which such a branch breaks.

    ## Example
    ```python
    class Net(nn.Module):
        def forward(self, x, use_aux: bool):
            y = self.body(x)
            if use_aux:
                y = y + self.aux_head(x)
            return y

    model = DDP(Net().cuda(), device_ids=[local_rank])
    ```

    ## Use instead
    ```python
    model = DDP(Net().cuda(), device_ids=[local_rank], find_unused_parameters=True)
    ```
    or make every path use every submodule (`y + 0 * self.aux_head(x)`).

    ## Fix safety
    The fix adds `find_unused_parameters=True` to the wrapper (for
    `Trainer(strategy="ddp")`: `strategy="ddp_find_unused_parameters_true"`). It is
    unsafe and opt-in: it costs an extra graph traversal every step, and the finding
    is a medium-confidence reading of the branch. No fix is offered when the wrapper
    sets `static_graph=True`: the graph is then read once, and the set of used
    parameters must change neither way; the branch itself has to go. No fix is
    offered either when the flag is set to a value declared elsewhere (the default
    or the config is the place to change).

    This rule is built on the analysis core (the forward's control-flow graph, the
    divergence of its inputs, object flow to the wrapped class, declared defaults and
    config bindings).

    ## References
    - PyTorch docs: `DistributedDataParallel` (`find_unused_parameters`).
    - Lightning docs: "ddp_find_unused_parameters_true".
    - catalyst issue #1110 (stochastic depth under DDP), fairseq issues #2389 and
      #3599 (LayerDrop needs unused-parameter detection).
    """

    code = "DDP502"
    name = "branch-skips-submodule"
    summary = "forward branch leaves parameters unused without find_unused_parameters"
    severity = Severity.WARNING
    default_enabled = False
    needs_peers = True
    reads_libcst = False
    fix_applicability = Applicability.UNSAFE
    needles = ("DistributedDataParallel", "DDPStrategy", "strategy=")

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        analysis = ctx.analysis
        wrappings = data_parallel_wrappings(analysis)
        settings = {id(w.call): _unused_setting(ctx, w) for w in wrappings}
        if not any(s is not None for s in settings.values()):
            return
        branches = ForwardBranches(analysis)
        for cls in analysis.nodes.of_type(ast.ClassDef):
            if not analysis.objects.class_kinds.is_module_class(cls):
                continue
            wrapping = [w for w in wrappings if _wraps(ctx, w, cls.name)]
            if not wrapping or any(settings[id(w.call)] is None for w in wrapping):
                continue
            cited = [c for w in wrapping if (c := settings[id(w.call)])]
            fix = (
                None
                if cited or any(sets_static_graph(ctx.analysis, w.call) for w in wrapping)
                else _fix(ctx, wrapping)
            )
            line = wrapping[0].call.lineno
            flag = f" (`find_unused_parameters` is False: {cited[0]})" if cited else ""
            for branch in branches.skipping_branches(cls):
                names = ", ".join(f"`self.{n}`" for n in branch.skipped)
                verb = "runs" if len(branch.skipped) == 1 else "run"
                where = f" in `{branch.label}` ({branch.called_from})" if branch.called_from else ""
                message = (
                    f"{names} {verb} on only one path of this branch{where}, whose "
                    f"condition reads {branch.reason}, and DDP (line {line}) wraps "
                    f"`{cls.name}` without `find_unused_parameters=True`{flag}: an "
                    "iteration that skips it fails at the next step (Expected to have "
                    "finished reduction in the prior iteration)"
                )
                summary = (
                    f"{names} {verb} on one branch path only, without `find_unused_parameters`"
                )
                yield ctx.ast_finding(self, branch.test, message, summary=summary, fix=fix)


def _unused_setting(ctx: CodeContext, wrapping: DataParallelWrapping) -> str | None:
    """``""`` when the wrapping leaves ``find_unused_parameters`` off where it is written
    (left out, or False), the clause that cites a declared default or config value of
    False; None when it may be on (True, unknown, ``**kwargs``)."""
    if wrapping.strategy is not None:
        return ""
    given = wrapping.find_unused
    if given is None:
        return None if has_star_arguments(wrapping.call) else ""
    scope = ctx.analysis.nodes.scope_of_call(wrapping.call)
    declared = declared_value(ctx, given.value, scope)
    if declared is None or declared.value is not False:
        return None
    return declared.cited


def _wraps(ctx: CodeContext, wrapping: DataParallelWrapping, class_name: str) -> bool:
    """Whether one of the models ``wrapping`` wraps is built from ``class_name``."""
    return any(
        class_name in wrapped_classes(ctx.analysis, model, call) for model, call in wrapping.models
    )


def _fix(ctx: CodeContext, wrappings: list[DataParallelWrapping]) -> Fix:
    edits: list[Edit] = []
    for wrapping in wrappings:
        if wrapping.strategy is not None:
            old = str(wrapping.strategy.value)
            new = old.removesuffix("_find_unused_parameters_false") + "_find_unused_parameters_true"
            quote = "'" if ast_node_text(ctx, wrapping.strategy).startswith("'") else '"'
            edits.append(replace_ast_node(ctx, wrapping.strategy, f"{quote}{new}{quote}"))
        else:
            edits.append(add_ast_keyword(ctx, wrapping.call, "find_unused_parameters=True"))
    return Fix(Applicability.UNSAFE, tuple(edits), "Set `find_unused_parameters=True` on DDP")
