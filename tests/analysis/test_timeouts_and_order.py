"""How long a ``timedelta`` timeout is, where one rank works while the others wait,
and run-order traces, on the analysis core (the questions of DDP306)."""

from __future__ import annotations

import ast

import pytest

from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.rank_zero_work import rank_zero_work
from ddplint.analysis.run_order import GraphOrder, entry_points, run_order
from ddplint.analysis.timeout_lengths import describe_seconds, timedelta_length


def _analysis(code: str) -> ModuleAnalysis:
    return ModuleAnalysis(ast.parse(code))


@pytest.mark.parametrize(
    ("code", "seconds"),
    [
        ("from datetime import timedelta\ng(timedelta(seconds=60))", 60.0),
        ("import datetime\ng(datetime.timedelta(minutes=5, seconds=30))", 330.0),
        ("from datetime import timedelta\ng(timedelta(0, 90))", 90.0),
        ("from datetime import timedelta\nt = timedelta(hours=2)\ng(t)", 7200.0),
        ("from datetime import timedelta\ndef f(s=300):\n    g(timedelta(seconds=s))", 300.0),
        ("from datetime import timedelta\nM = 5\ndef f():\n    g(timedelta(minutes=M))", 300.0),
        ("from datetime import timedelta\ndef f(s):\n    g(timedelta(seconds=s))", None),
        ("from datetime import timedelta\ndef f(kw):\n    g(timedelta(**kw))", None),
        ("g(timedelta(seconds=60))", None),  # not datetime's
    ],
)
def test_timedelta_length(code: str, seconds: float | None) -> None:
    analysis = _analysis(code)
    scope, call = next(
        (scope, call)
        for scope, calls in analysis.nodes.calls_by_scope.items()
        for call in calls
        if isinstance(call.func, ast.Name) and call.func.id == "g"
    )
    length = timedelta_length(analysis, call.args[0], scope)
    assert (length.seconds if length is not None else None) == seconds


def test_describe_seconds() -> None:
    assert [describe_seconds(s) for s in (45, 300, 7200, 90)] == ["45 s", "5 min", "2 h", "90 s"]


def test_run_order_enters_module_functions_from_entry_points() -> None:
    analysis = _analysis(
        "def setup():\n    init()\n    wait()\n"
        "def worker():\n    setup()\n    choose()\n"
        "def unused_helper():\n    other()\n"
    )
    entries = entry_points(analysis)
    names = [e.name for e in entries if isinstance(e, ast.FunctionDef)]
    assert names == ["worker", "unused_helper"]  # setup() is called by worker()
    worker = next(e for e in entries if isinstance(e, ast.FunctionDef) and e.name == "worker")
    trace = [ast.unparse(call.func) for call in run_order(analysis, worker)]
    assert trace == ["setup", "init", "wait", "choose"]


def test_graph_order_traces_with_the_chain_of_entered_functions() -> None:
    analysis = _analysis(
        "def setup():\n    init()\n    wait()\n"
        "def worker():\n    setup()\n    choose()\n    return\n    dead()\n"
    )
    worker = next(f for f in analysis.nodes.functions() if f.name == "worker")
    trace = [(ast.unparse(t.call.func), t.chain) for t in GraphOrder(analysis).trace(worker)]
    assert trace == [
        ("setup", ()),
        ("init", ("setup",)),
        ("wait", ("setup",)),
        ("choose", ()),
    ]  # dead() after the return is no part of the run


def test_graph_order_follows_the_graph_not_the_text() -> None:
    analysis = _analysis(
        "def setup():\n    init()\n"
        "def worker(flag):\n"
        "    setup()\n"
        "    if flag:\n        exchange()\n        return\n"
        "    choose()\n"
        "    for i in range(3):\n        if i:\n            again()\n        bind()\n"
    )
    worker = next(f for f in analysis.nodes.functions() if f.name == "worker")
    order = GraphOrder(analysis)
    calls = {ast.unparse(t.call.func): t for t in order.trace(worker)}
    assert order.may_run_after(calls["init"], calls["exchange"])  # through setup()'s call
    assert not order.may_run_after(calls["exchange"], calls["choose"])  # the other way
    assert order.may_run_after(calls["choose"], calls["bind"])
    assert order.may_run_after(calls["bind"], calls["again"])  # the next iteration
    assert not order.may_run_after(calls["setup"], calls["init"])  # inside its callee


_WAITING = (
    "import os\nimport torch.distributed as dist\n"
    "def prepare(build):\n    rank = int(os.environ['RANK'])\n"
    "    if rank == 0:\n        print('building')\n        build()\n    dist.barrier()\n"
)


@pytest.mark.parametrize(
    ("code", "work"),
    [
        (_WAITING, "build"),
        (_WAITING.replace("    dist.barrier()\n", ""), None),  # nobody waits
        (_WAITING.replace("int(os.environ['RANK'])", "cfg.node"), None),  # not the rank
        (_WAITING.replace("build()", "log.info('x')"), None),  # no real work
        (
            "import torch.distributed as dist\nfrom contextlib import contextmanager\n"
            "@contextmanager\ndef lead(first):\n    if not first:\n        dist.barrier()\n"
            "    yield\n    if first:\n        dist.barrier()\n"
            "def prepare(build, first):\n    with lead(first):\n        build()\n",
            "build",
        ),
        (
            "from contextlib import contextmanager\n@contextmanager\ndef lead(first):\n"
            "    yield\ndef prepare(build, first):\n    with lead(first):\n        build()\n",
            None,  # a context manager that makes nobody wait
        ),
        (
            "def f(accelerator, ds):\n"
            "    with accelerator.main_process_first():\n        ds.map(g)\n",
            "ds.map",
        ),
    ],
)
def test_rank_zero_work(code: str, work: str | None) -> None:
    found = [ast.unparse(w.work.func) for w in rank_zero_work(_analysis(code))]
    assert found == ([work] if work is not None else [])
