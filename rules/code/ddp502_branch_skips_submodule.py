"""DDP502: a forward branch that skips a submodule while DDP expects every parameter."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from ddplint.code.collectives.ddp_wrappers import DataParallelWrapper, data_parallel_wrappers
from ddplint.code.context import CodeContext
from ddplint.code.edits.argument_edits import add_keyword_argument
from ddplint.code.edits.edits import replace_node
from ddplint.code.steps.forward_submodules import (
    built_class,
    class_methods,
    parameterised_submodules,
)
from ddplint.code.syntax.call_args import keyword_argument
from ddplint.code.syntax.constants import literal_value
from ddplint.code.syntax.names import dotted_name
from ddplint.finding import Applicability, Edit, Finding, Fix, Severity
from ddplint.rule import CodeRule

#: Methods DDP runs as the forward (Lightning wraps ``training_step``).
DDP_FORWARDS = frozenset({"forward", "training_step"})
_RANDOM_PREFIXES = ("random.", "numpy.random.", "torch.rand", "torch.bernoulli")
_RANK_WORDS = frozenset({"rank", "global_rank", "local_rank", "get_rank", "is_global_zero"})


@dataclass(frozen=True)
class _Branch:
    """One conditional in a DDP forward and the submodules only one of its paths uses."""

    test: cst.BaseExpression
    one_path_only: tuple[str, ...]
    reason: str


class BranchSkipsSubmodule(CodeRule):
    """
    ## What it does
    Flags an `if` in `forward` (or a LightningModule's `training_step`) of a module
    class whose condition reads the inputs, a rank or a random draw, when one path calls
    a submodule with parameters (`self.head(x)`) that the other path does not, and the
    same file wraps models with DDP without `find_unused_parameters=True`:
    `DistributedDataParallel(...)`, `DDPStrategy(...)` or `Trainer(strategy="ddp")`.

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
    Branches on the module's own settings (`if self.use_head:`) are not flagged:
    they take the same path every step. Parameter-free layers (dropout, activations,
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
    parameters must change neither way; the branch itself has to go.

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
    fix_applicability = Applicability.UNSAFE
    needles = ("DistributedDataParallel", "DDPStrategy", "strategy=")

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        wrappers = data_parallel_wrappers(ctx.names, ctx.index.nodes(cst.Call))
        if not any(w.find_unused_parameters is False for w in wrappers):
            return
        for cls in ctx.index.nodes(cst.ClassDef):
            if not ctx.forward_paths.is_module_class(cls):
                continue
            wrapping = [w for w in wrappers if _wraps(ctx, w, cls.name.value)]
            if not wrapping or any(w.find_unused_parameters is not False for w in wrapping):
                continue
            fix = None if any(_static_graph(w) for w in wrapping) else _fix(ctx, wrapping)
            line = ctx.range_of(wrapping[0].call)[0]
            for unit in _forward_units(ctx, cls):
                for branch in _branches(ctx, unit.method, unit.submodules, unit.elsewhere):
                    names = ", ".join(f"`self.{n}`" for n in branch.one_path_only)
                    verb = "runs" if len(branch.one_path_only) == 1 else "run"
                    where = f" in `{unit.label}` ({unit.called_from})" if unit.called_from else ""
                    message = (
                        f"{names} {verb} on only one path of this branch{where}, whose "
                        f"condition reads {branch.reason}, and DDP (line {line}) wraps "
                        f"`{cls.name.value}` without `find_unused_parameters=True`: an "
                        "iteration that skips it fails at the next step (Expected to have "
                        "finished reduction in the prior iteration)"
                    )
                    summary = (
                        f"{names} {verb} on one branch path only, without `find_unused_parameters`"
                    )
                    yield ctx.finding(self, branch.test, message, fix, summary=summary)


@dataclass(frozen=True)
class _ForwardUnit:
    """A method that runs in the wrapped forward: the forward itself, a method of the
    same class it calls, or the ``forward`` of a submodule whose class this module
    defines. ``submodules`` are the parameterised ``self.x`` of the method's class;
    ``elsewhere`` those its caller runs outside any branch (always used)."""

    method: cst.FunctionDef
    submodules: frozenset[str]
    elsewhere: frozenset[str]
    label: str
    called_from: str


#: How many calls deep the forward is followed (each hop: a helper or a submodule).
_MAX_UNIT_DEPTH = 3


def _forward_units(ctx: CodeContext, cls: cst.ClassDef) -> Iterator[_ForwardUnit]:
    """The wrapped class's forwards, then what they run in this module."""
    pending = [
        _ForwardUnit(m, parameterised_submodules(ctx.index, cls), frozenset(), m.name.value, "")
        for m in class_methods(cls)
        if m.name.value in DDP_FORWARDS
    ]
    seen: set[cst.FunctionDef] = set()
    depth = {unit.method: 0 for unit in pending}
    while pending:
        unit = pending.pop(0)
        if unit.method in seen:
            continue
        seen.add(unit.method)
        yield unit
        if depth[unit.method] >= _MAX_UNIT_DEPTH:
            continue
        for callee in _callees(ctx, unit):
            depth.setdefault(callee.method, depth[unit.method] + 1)
            pending.append(callee)


def _callees(ctx: CodeContext, unit: _ForwardUnit) -> Iterator[_ForwardUnit]:
    """Same-class methods (``self._loss(...)``) and same-module submodule classes
    (``self.criterion(...)`` with ``self.criterion = HeadLoss()``) ``unit`` calls."""
    owner = ctx.index.enclosing_class(unit.method)
    if owner is None:
        return
    local = ctx.call_reach
    always = unit.elsewhere | _unbranched_submodules(ctx, unit.method)
    caller = f"called from `{unit.label}`"
    classes = {c.name.value: c for c in ctx.index.nodes(cst.ClassDef)}
    submodule_classes = _submodule_classes(ctx, owner)
    for node in ctx.index.walk_within(unit.method):
        if not isinstance(node, cst.Call):
            continue
        method = local.callee(node)
        method_class = ctx.index.enclosing_class(method) if method is not None else None
        if method is not None and method_class is not None:
            label = f"{method_class.name.value}.{method.name.value}"
            yield _ForwardUnit(method, unit.submodules, always, label, caller)
            continue
        dotted = dotted_name(node.func) or ""
        cls_name = submodule_classes.get(dotted.removeprefix("self."))
        sub_cls = classes.get(cls_name or "")
        if sub_cls is None or not ctx.forward_paths.is_module_class(sub_cls):
            continue
        forward = next((m for m in class_methods(sub_cls) if m.name.value == "forward"), None)
        if forward is not None:
            yield _ForwardUnit(
                forward,
                parameterised_submodules(ctx.index, sub_cls),
                frozenset(),
                f"{sub_cls.name.value}.forward",
                caller,
            )


def _submodule_classes(ctx: CodeContext, cls: cst.ClassDef) -> dict[str, str]:
    """``criterion -> HeadLoss`` for every ``self.criterion = HeadLoss(...)`` in ``cls``."""
    found = {}
    for node in ctx.index.walk_within(cls, into_functions=True):
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.Call):
            built = dotted_name(node.value.func)
            for target in node.targets:
                dotted = dotted_name(target.target) or ""
                if built and dotted.startswith("self.") and dotted.count(".") == 1:
                    found[dotted[5:]] = built
    return found


def _unbranched_submodules(ctx: CodeContext, method: cst.FunctionDef) -> frozenset[str]:
    """Submodules ``method`` calls outside any ``if``: used on every path."""
    called = set()
    for node in ctx.index.walk_within(method):
        if isinstance(node, cst.Call) and ctx.index.enclosing(node, cst.If, cst.FunctionDef) in (
            method,
            None,
        ):
            dotted = dotted_name(node.func) or ""
            if dotted.startswith("self.") and dotted.count(".") == 1:
                called.add(dotted[5:])
    return frozenset(called)


def _wraps(ctx: CodeContext, wrapper: DataParallelWrapper, class_name: str) -> bool:
    """Whether one of the models ``wrapper`` wraps is built from ``class_name``."""
    return any(built_class(ctx.index, model) == class_name for model in wrapper.models)


def _called_submodules(ctx: CodeContext, roots: list[cst.CSTNode]) -> set[str]:
    called = set()
    for root in roots:
        for node in (root, *ctx.index.walk_within(root)):
            if isinstance(node, cst.Call):
                dotted = dotted_name(node.func) or ""
                if dotted.startswith("self.") and dotted.count(".") == 1:
                    called.add(dotted[5:])
    return called


def _branches(
    ctx: CodeContext,
    method: cst.FunctionDef,
    submodules: frozenset[str],
    always: frozenset[str] = frozenset(),
) -> Iterator[_Branch]:
    parameters = {p.name.value for p in method.params.params[1:]} | {
        p.name.value for p in method.params.kwonly_params
    }
    derived = _input_derived_locals(ctx, method, parameters)
    drawn = _drawn_locals(ctx, method)
    for node in ctx.index.walk_within(method):
        if not isinstance(node, cst.If):
            continue
        reason = _dynamic_reason(ctx, node.test, parameters, derived, drawn)
        if reason is None:
            continue
        dropped = _layer_dropped(ctx, node, submodules)
        if dropped is not None:
            yield _Branch(node.test, (dropped,), reason)
            continue
        taken = _called_submodules(ctx, [node.body])
        other_roots: list[cst.CSTNode] = (
            [node.orelse] if node.orelse else _rest_after_return(ctx, node)
        )
        other = _called_submodules(ctx, other_roots)
        elsewhere = _called_outside(ctx, method, node, other_roots) | always
        one_path = ((taken ^ other) & submodules) - elsewhere
        if one_path:
            yield _Branch(node.test, tuple(sorted(one_path)), reason)


def _layer_dropped(ctx: CodeContext, branch: cst.If, submodules: frozenset[str]) -> str | None:
    """Layer drop: ``for layer in self.layers:`` (or ``enumerate(self.layers)``) whose
    body skips the rest with ``if ...: continue`` before calling ``layer(...)``; the
    submodule ``layers`` is then partly unused on the steps the test takes."""
    loop = ctx.index.enclosing(branch, cst.For, cst.FunctionDef)
    if not isinstance(loop, cst.For) or not isinstance(loop.body, cst.IndentedBlock):
        return None
    body = branch.body
    if not isinstance(body, cst.IndentedBlock) or not body.body:
        return None
    last = body.body[-1]
    if not (isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], cst.Continue)):
        return None
    iterated, layer = _iterated_layers(loop)
    if iterated not in submodules or layer is None:
        return None
    statements = list(loop.body.body)
    position = next((i for i, s in enumerate(statements) if ctx.index.is_inside(branch, s)), None)
    if position is None:
        return None
    for statement in statements[position + 1 :]:
        for node in (statement, *ctx.index.walk_within(statement)):
            if isinstance(node, cst.Call) and dotted_name(node.func) == layer:
                return iterated
    return None


def _iterated_layers(loop: cst.For) -> tuple[str | None, str | None]:
    """(``layers``, ``layer``) for ``for layer in self.layers`` and ``for i, layer in
    enumerate(self.layers)``."""
    iterable: cst.BaseExpression = loop.iter
    target: cst.BaseExpression = loop.target
    if (
        isinstance(iterable, cst.Call)
        and dotted_name(iterable.func) == "enumerate"
        and iterable.args
        and isinstance(target, cst.Tuple)
        and len(target.elements) == 2
    ):
        iterable, target = iterable.args[0].value, target.elements[1].value
    spelled = dotted_name(iterable) or ""
    if not spelled.startswith("self.") or spelled.count(".") != 1:
        return None, None
    return spelled[5:], dotted_name(target)


def _rest_after_return(ctx: CodeContext, branch: cst.If) -> list[cst.CSTNode]:
    """When the ``if`` body ends in ``return``, the statements after it are the other path."""
    body = branch.body
    if not isinstance(body, cst.IndentedBlock) or not body.body:
        return []
    last = body.body[-1]
    if not (isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], cst.Return)):
        return []
    block = ctx.index.parent.get(branch)
    if not isinstance(block, cst.IndentedBlock):
        return []
    statements = list(block.body)
    position = next(i for i, s in enumerate(statements) if s is branch)
    return list(statements[position + 1 :])


def _called_outside(
    ctx: CodeContext, method: cst.FunctionDef, branch: cst.If, other_roots: list[cst.CSTNode]
) -> set[str]:
    """Submodules the method calls outside ``branch`` and its other path."""
    excluded = [branch, *other_roots]
    called = set()
    for node in ctx.index.walk_within(method):
        if not isinstance(node, cst.Call) or any(ctx.index.is_inside(node, r) for r in excluded):
            continue
        dotted = dotted_name(node.func) or ""
        if dotted.startswith("self.") and dotted.count(".") == 1:
            called.add(dotted[5:])
    return called


def _input_derived_locals(
    ctx: CodeContext, method: cst.FunctionDef, parameters: set[str]
) -> frozenset[str]:
    """Local names assigned (directly or through other such names) from the method's
    inputs: ``matches = targets[idx]`` in a loss that then tests ``if len(matches):``."""
    derived: set[str] = set()
    assignments = [
        node
        for node in ctx.index.walk_within(method)
        if isinstance(node, cst.Assign) and len(node.targets) == 1
    ]
    for _ in range(3):
        grown = False
        for assign in assignments:
            target = assign.targets[0].target
            if not isinstance(target, cst.Name) or target.value in derived | parameters:
                continue
            reads = {
                n.value for n in ctx.index.walk_within(assign.value) if isinstance(n, cst.Name)
            }
            if isinstance(assign.value, cst.Name):
                reads.add(assign.value.value)
            if reads & (parameters | derived):
                derived.add(target.value)
                grown = True
        if not grown:
            break
    return frozenset(derived)


def _drawn_locals(ctx: CodeContext, method: cst.FunctionDef) -> frozenset[str]:
    """Local names assigned a random draw (``p = torch.rand([])``)."""
    drawn = set()
    for node in ctx.index.walk_within(method):
        if not isinstance(node, cst.Assign) or len(node.targets) != 1:
            continue
        target = node.targets[0].target
        if isinstance(target, cst.Name) and _draws(ctx, node.value):
            drawn.add(target.value)
    return frozenset(drawn)


def _draws(ctx: CodeContext, expression: cst.BaseExpression) -> bool:
    return any(
        isinstance(node, cst.Call)
        and (ctx.names.qualified_name(node.func) or "").startswith(_RANDOM_PREFIXES)
        for node in (expression, *ctx.index.walk_within(expression))
    )


def _dynamic_reason(
    ctx: CodeContext,
    test: cst.BaseExpression,
    parameters: set[str],
    derived: frozenset[str] = frozenset(),
    drawn: frozenset[str] = frozenset(),
) -> str | None:
    """What makes the condition change between steps or ranks, in words; None when it
    reads only the module's own settings."""
    for node in (test, *ctx.index.walk_within(test)):
        if isinstance(node, cst.Name) and node.value in drawn:
            return f"a random draw (`{node.value}`)"
        if isinstance(node, cst.Name) and node.value in parameters:
            return f"the input `{node.value}`"
        if isinstance(node, cst.Name) and node.value in derived:
            return f"`{node.value}`, computed from the inputs"
        if isinstance(node, cst.Attribute) and "epoch" in node.attr.value:
            return f"the epoch (`{ctx.node_text(node)}`)"
        if isinstance(node, cst.Call):
            qualified = ctx.names.qualified_name(node.func) or ""
            if qualified.startswith(_RANDOM_PREFIXES):
                return "a random draw"
        word = ""
        if isinstance(node, cst.Name):
            word = node.value
        elif isinstance(node, cst.Attribute):
            word = node.attr.value
        if word in _RANK_WORDS:
            return "the rank"
    return None


def _static_graph(wrapper: DataParallelWrapper) -> bool:
    """Whether the wrapper sets ``static_graph`` to anything but a literal False (the flag
    would not help then: the graph is read once)."""
    static = keyword_argument(wrapper.call, "static_graph")
    return static is not None and literal_value(static.value) is not False


def _fix(ctx: CodeContext, wrappers: list[DataParallelWrapper]) -> Fix:
    edits: list[Edit] = []
    for wrapper in wrappers:
        if wrapper.strategy is not None:
            old = str(literal_value(wrapper.strategy.value))
            new = old.removesuffix("_find_unused_parameters_false") + "_find_unused_parameters_true"
            quote = "'" if ctx.node_text(wrapper.strategy.value).startswith("'") else '"'
            edits.append(replace_node(ctx, wrapper.strategy.value, f"{quote}{new}{quote}"))
        else:
            edits.append(add_keyword_argument(ctx, wrapper.call, "find_unused_parameters=True"))
    return Fix(Applicability.UNSAFE, tuple(edits), "Set `find_unused_parameters=True` on DDP")
