"""DDP406: ``persistent_workers=True`` written as a constant while ``num_workers`` is a
setting that may be 0."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddplint.analysis.api import DATA_LOADERS, DATALOADER_POSITIONS
from ddplint.analysis.constants import is_zero, nodes_within, scope_nodes
from ddplint.analysis.control_flow import Scope
from ddplint.analysis.literal_values import UNKNOWN
from ddplint.analysis.names import keyword_argument, passed_argument
from ddplint.code.context import CodeContext
from ddplint.code.edits.ast_edits import ast_node_text, replace_ast_node
from ddplint.finding import Applicability, Finding, Fix, Severity
from ddplint.rule import CodeRule
from ddplint.rules.prefilters import persistent_workers_true

#: Calls whose result is at least 1 whatever the machine (``None`` aside).
_AT_LEAST_ONE = frozenset({"os.cpu_count", "multiprocessing.cpu_count"})


class PersistentWorkersFixedTrue(CodeRule):
    """
    ## What it does
    Flags a `DataLoader` given `persistent_workers=True` as a constant while its
    `num_workers` is a setting (an argument, an option, a config value) that nothing
    keeps above 0, directly or through a `**kwargs` dict built in the same function
    (`common = dict(num_workers=args.workers, persistent_workers=True)`).

    Not flagged: `num_workers` a positive constant, a value decided where it is set (a
    module constant bound once, a key of a dict literal in the file that nothing writes
    or merges over: `config = {"num_workers": 8}`), a call that cannot give 0
    (`os.cpu_count()`, `max(1, ...)`), a loader built under a test of that same value
    (`if args.workers > 0:`), and a setting whose declared default or configured value
    is 0 (DDP404 reports those: the run fails as configured).

    ## Why is this bad?
    `DataLoader` raises `ValueError: persistent_workers option needs num_workers > 0`
    when it is built. The setting is the first thing a user turns to 0 to rule out
    worker processes while debugging a hang or a crash, and the debugging run then dies
    before its first step, on every rank.

    ## Example
    ```python
    loader = DataLoader(dataset, num_workers=args.workers, persistent_workers=True)
    ```

    ## Use instead
    ```python
    loader = DataLoader(
        dataset, num_workers=args.workers, persistent_workers=args.workers > 0
    )
    ```

    ## Fix safety
    The fix writes `persistent_workers=<num_workers> > 0`: with workers nothing changes,
    with none the call no longer raises. It is safe when `num_workers` is a name, an
    attribute or a subscript; unsafe when it calls something (the call then runs twice).
    No fix when the keywords come from a dict bound outside the loader's function (the
    finding is at that dict, with the loader as its related place): it may serve other
    loaders, and `num_workers` may not be in scope there.

    This rule is built on the analysis core (constant values, values decided where they
    are set, declared defaults and config values on Python's `ast`).

    ## References
    - PyTorch docs: `torch.utils.data.DataLoader` (`persistent_workers`).
    - DDP404 (the value is 0 as written or configured), DDP601 (the same in YAML).
    """

    code = "DDP406"
    reads_libcst = False
    name = "persistent-workers-fixed-true"
    summary = "persistent_workers=True while num_workers is a setting that may be 0"
    severity = Severity.WARNING
    default_enabled = False
    fix_applicability = Applicability.SAFE
    needles = ("persistent_workers",)
    required = ("DataLoader",)
    narrowed_by = staticmethod(persistent_workers_true)

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        analysis = ctx.analysis
        for scope, calls in analysis.nodes.calls_by_scope.items():
            for call in calls:
                if analysis.names.resolve(call.func) not in DATA_LOADERS:
                    continue
                spread = analysis.constants.spread_keywords(call, scope)
                given = keyword_argument(call, "persistent_workers")
                persistent = given.value if given else spread.get("persistent_workers")
                if persistent is None or analysis.constants.value(persistent, scope) is not True:
                    continue
                workers = passed_argument(
                    call, "num_workers", DATALOADER_POSITIONS["num_workers"]
                ) or spread.get("num_workers")
                if workers is None or not _may_be_zero(ctx, call, workers, scope):
                    continue
                yield self._finding(ctx, call, persistent, workers, scope)

    def _finding(
        self,
        ctx: CodeContext,
        call: ast.Call,
        persistent: ast.expr,
        workers: ast.expr,
        scope: Scope,
    ) -> Finding:
        text = ast_node_text(ctx, workers)
        condition = f"{text} > 0"
        plain = isinstance(workers, (ast.Name, ast.Attribute, ast.Subscript)) and not any(
            isinstance(node, ast.Call) for node in ast.walk(workers)
        )
        owner = ctx.analysis.constants.owner_of(scope)
        beside = any(node is persistent for node in scope_nodes(owner))
        fix = None
        if beside:  # settings bound elsewhere may serve other loaders, out of its reach
            fix = Fix(
                Applicability.SAFE if plain else Applicability.UNSAFE,
                (replace_ast_node(ctx, persistent, condition),),
                f"Set `persistent_workers={condition}`",
            )
        inside = any(node is persistent for node in ast.walk(call))
        related = [] if inside else [(call, "the DataLoader it is spread into")]
        message = (
            f"`persistent_workers=True` while `num_workers={text}` is a setting nothing "
            "keeps above 0: set to 0 (as when debugging a hang), DataLoader raises "
            "ValueError (persistent_workers option needs num_workers > 0) on every rank"
        )
        summary = f"persistent_workers=True; num_workers={text} may be 0"
        return ctx.ast_finding(self, persistent, message, summary=summary, related=related, fix=fix)


def _may_be_zero(ctx: CodeContext, call: ast.Call, workers: ast.expr, scope: Scope) -> bool:
    """Whether ``workers`` is a setting that can be 0 and that DDP404 leaves alone."""
    analysis = ctx.analysis
    if analysis.constants.value(workers, scope) is not UNKNOWN:
        return False
    if _at_least_one(ctx, workers, scope):
        return False
    if analysis.literal_values.value(workers) is not UNKNOWN:
        return False  # a literal wherever it runs (``config["num_workers"]``); 0: DDP404
    default = analysis.fallback_defaults.of(workers, scope)
    if default is not None and is_zero(default.value):
        return False  # DDP404: zero by default
    found = ctx.config_reads.value_at(ast_node_text(ctx, workers), workers.lineno)
    if found is not None and is_zero(found.value):
        return False  # DDP404: zero as configured
    return not _tested_around(ctx, call, workers)


def _tested_around(ctx: CodeContext, call: ast.Call, workers: ast.expr) -> bool:
    """Whether ``call`` runs under an ``if`` (or a conditional expression) whose test
    reads ``workers`` itself (``args.workers`` in ``args.workers > 0``; not in
    ``args.workers_eval > 0``)."""
    spelled = ast.dump(workers)
    nodes = ctx.analysis.nodes
    branches: list[ast.If | ast.IfExp] = [*nodes.of_type(ast.If), *nodes.of_type(ast.IfExp)]
    for branch in branches:
        if not any(ast.dump(part) == spelled for part in ast.walk(branch.test)):
            continue
        if isinstance(branch, ast.If):
            inside = any(node is call for node in nodes_within([*branch.body, *branch.orelse]))
        else:
            inside = any(node is call for node in ast.walk(branch))
        if inside:
            return True
    return False


def _at_least_one(ctx: CodeContext, workers: ast.expr, scope: Scope) -> bool:
    """A positive constant, a call of ``_AT_LEAST_ONE``, ``max`` of anything with one
    such argument, ``min`` of such arguments only (``min(8, os.cpu_count())``)."""
    analysis = ctx.analysis
    if not isinstance(workers, ast.Call):
        value = analysis.constants.value(workers, scope)
        return isinstance(value, int) and not isinstance(value, bool) and value >= 1
    name = analysis.names.resolve(workers.func)
    if name in _AT_LEAST_ONE:
        return True
    arguments = list(workers.args)
    if name == "max":
        return any(_at_least_one(ctx, a, scope) for a in arguments)
    if name == "min":
        return bool(arguments) and all(_at_least_one(ctx, a, scope) for a in arguments)
    return False
