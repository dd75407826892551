"""The project-wide questions after an edit: an index that keeps the links of the modules
an edit cannot change (``incremental.LinkState.kept`` for a run, ``ProjectMemo`` for the
language server) answers every file as an index linked afresh does, for edits that add,
remove and change a collective, make a function a rank test, change an import (the
modules resolved through it), a function's parameters, what a factory returns (the
kinds its callers pass), or what a program's entry reaches that starts a group."""

from __future__ import annotations

import json

import pytest

from ddplint.cache import content_hash
from ddplint.code.project.incremental import LinkState, state_records
from ddplint.code.project.index import KeptLinks, ProjectIndex
from ddplint.code.project.module_summary import summarize
from ddplint.engine.run_setup import ProjectMemo

COMM = "import torch.distributed as dist\ndef sync(t):\n    pass\ndef is_main():\n    return True\n"
LAUNCH = (
    "import torch.distributed as dist\n"
    "def setup_ddp():\n    dist.init_process_group('nccl')\n"
    "class Meter:\n    pass\n"
)
PROJECT = {
    "pkg/__init__.py": "",
    "pkg/comm.py": COMM,
    "pkg/helpers.py": "from pkg.comm import sync\n",
    "pkg/extra.py": "def unused():\n    pass\n",
    "pkg/loops.py": (
        "def fit(model, booster, steps):\n    return booster\n"
        "def worker(rank, cfg):\n    return rank\n"
    ),
    "pkg/factory.py": "from accelerate import Accelerator\ndef make():\n    return Accelerator()\n",
    "train.py": (
        "import os\nimport torch.distributed as dist\nfrom pkg import helpers\n"
        "from pkg.comm import is_main\nfrom pkg.loops import fit, worker\n"
        "from pkg.factory import make\n"
        "def main(m, t):\n    rank = int(os.environ['RANK'])\n"
        "    worker(rank=rank, cfg=None)\n    fit(m, make(), 3)\n"
        "    if is_main():\n        print(rank)\n    helpers.sync(t)\n"
        "if __name__ == '__main__':\n    dist.init_process_group('nccl')\n    main(None, None)\n"
    ),
    "run.py": "from train import main\nif __name__ == '__main__':\n    main(None, None)\n",
    # A program is distributed only where its entry reaches code that starts a group:
    # ``meter.py`` imports ``setup_ddp`` and never runs it.
    "pkg/launch.py": LAUNCH,
    "pkg/meters.py": (
        "import torch.distributed as dist\nclass Meter:\n"
        "    def __init__(self):\n        dist.init_process_group('nccl')\n"
    ),
    "meter.py": (
        "from pkg.launch import setup_ddp, Meter\nif __name__ == '__main__':\n    Meter()\n"
    ),
}

#: Each edit: the file and the text it gets (``PROJECT`` before it).
EDITS = {
    "a collective added": ("pkg/comm.py", COMM.replace("    pass\n", "    dist.barrier()\n")),
    "a collective changed": (
        "pkg/comm.py",
        COMM.replace("    pass\n", "    dist.all_reduce(t)\n"),
    ),
    "a rank test": ("pkg/comm.py", COMM.replace("return True", "return dist.get_rank() == 0")),
    # ``train`` resolves ``helpers.sync`` through this module: it is linked again.
    "an import taken out": ("pkg/helpers.py", "import os\n"),
    # ``train`` names ``helpers.sync``, now ``comm.is_main``: it is linked again
    # (``comm.sync`` is no module's any more).
    "a re-exported name bound otherwise": (
        "pkg/helpers.py",
        "from pkg.comm import is_main as sync\n",
    ),
    # ``extra`` comes to be imported by a program.
    "an import added": ("pkg/helpers.py", "from pkg.comm import sync\nimport pkg.extra\n"),
    # ``train`` passes the rank by keyword: its position is read from ``worker``.
    "parameters reordered": (
        "pkg/loops.py",
        PROJECT["pkg/loops.py"].replace("worker(rank, cfg)", "worker(cfg, rank)"),
    ),
    # ``train`` passes what ``make`` returns: its kind is read from ``factory``.
    "what a factory returns": (
        "pkg/factory.py",
        "from accelerate import Accelerator\ndef make():\n    return object()\n",
    ),
    # ``meter`` keeps its links (``launch`` exports the same names): what its entry
    # reaches is read from ``launch``'s links.
    "a group started where the program reaches": (
        "pkg/launch.py",
        LAUNCH.replace(
            "class Meter:\n    pass\n",
            "class Meter:\n    def __init__(self):\n        dist.init_process_group('nccl')\n",
        ),
    ),
    "a program runs the helper": ("meter.py", PROJECT["meter.py"] + "    setup_ddp()\n"),
    # ``Meter`` now names ``meters``' class: ``meter`` is linked again.
    "a name re-exported from a module that starts a group": (
        "pkg/launch.py",
        LAUNCH.replace("class Meter:\n    pass\n", "from pkg.meters import Meter\n"),
    ),
}


def _summaries(files: dict[str, str]) -> dict[str, dict]:
    return {path: summarize(text) for path, text in files.items()}


def _answers(index: ProjectIndex) -> dict[str, object]:
    """Every file's facts, and the project-wide answers they are drawn from."""
    return {
        "facts": {path: index.facts_for(path) for path in index.module_of_path},
        "roles": index.program_roles,
        "reach": index.reach_of_code,
        "kinds": index.parameter_kinds,
    }


def _by_the_kept_links(before: dict[str, str], after: dict[str, str]) -> ProjectIndex:
    """The index a run links after the edit, from the links a run kept before it (the
    cache entry written as JSON and read back)."""
    summaries, kept = _kept_links(before, after)
    return ProjectIndex(summaries, kept=kept)


def _kept_links(
    before: dict[str, str], after: dict[str, str], earlier_known: bool = True
) -> tuple[dict[str, dict], dict[str, KeptLinks]]:
    """The summaries after the edit and the links kept from a link before it (with
    ``earlier_known``, the summaries the earlier link read are to be had)."""
    old = ProjectIndex(_summaries(before))
    hashes = {path: content_hash(text.encode()) for path, text in before.items()}
    records = json.loads(json.dumps(state_records(old, hashes, set(before), None)))
    state = LinkState.read(records)
    assert state is not None
    now = {path: content_hash(text.encode()) for path, text in after.items()}
    built = {path: summarize(after[path]) for path in state.changed(now)}
    project = state.summarised(now, built)
    summaries = {path: built.get(path) or summarize(after[path]) for path in project}
    earlier = {hashes[path]: summary for path, summary in _summaries(before).items()}
    return summaries, state.kept(project, built, earlier.get if earlier_known else lambda _: None)


def test_an_edit_makes_stale_the_links_that_asked_about_the_names_it_changed() -> None:
    """``train`` imports from ``helpers``: a name added there that ``train`` never asked
    about keeps its links, unless the summary the kept links read cannot be had; a name
    it asked about bound otherwise makes them stale (``touched``)."""
    helpers = PROJECT["pkg/helpers.py"]
    added = {**PROJECT, "pkg/helpers.py": helpers + "import os as renamed\ndef more():\n    pass\n"}
    assert "train" in _kept_links(PROJECT, added)[1]
    assert "train" not in _kept_links(PROJECT, added, earlier_known=False)[1]
    path, text = EDITS["a re-exported name bound otherwise"]
    assert "train" not in _kept_links(PROJECT, {**PROJECT, path: text})[1]


def _by_the_servers_memo(before: dict[str, str], after: dict[str, str]) -> ProjectIndex:
    memo = ProjectMemo()
    memo.index(_summaries(before))
    return memo.index(_summaries(after))


@pytest.mark.parametrize("edit", sorted(EDITS))
@pytest.mark.parametrize("undo", [False, True], ids=["edit", "undo"])
@pytest.mark.parametrize("incremental", [_by_the_kept_links, _by_the_servers_memo])
def test_after_an_edit_the_kept_links_answer_as_a_fresh_link(
    edit: str, undo: bool, incremental
) -> None:
    path, text = EDITS[edit]
    edited = {**PROJECT, path: text}
    before, after = (edited, PROJECT) if undo else (PROJECT, edited)
    fresh = ProjectIndex(_summaries(after))
    index = incremental(before, after)
    assert len(index.linked) < len(index.paths)  # some links were kept
    assert _answers(index) == _answers(fresh)
    # the edit changes what some file is told
    assert _answers(fresh) != _answers(ProjectIndex(_summaries(before)))


def test_each_edit_is_told_where_it_matters() -> None:
    """What each edit changes, read in a fresh link: the edits above are not idle."""

    def told(files: dict[str, str]) -> ProjectIndex:
        return ProjectIndex(_summaries(files))

    def edited(name: str) -> ProjectIndex:
        path, text = EDITS[name]
        return told({**PROJECT, path: text})

    plain = told(PROJECT)
    assert plain.facts_for("train.py").names["helpers.sync"].reaches is None
    reached = edited("a collective added").facts_for("train.py").names["helpers.sync"].reaches
    assert reached is not None and reached.op == "barrier"
    changed = edited("a collective changed").facts_for("train.py").names["helpers.sync"]
    assert changed.reaches is not None and changed.reaches.op == "all_reduce"
    assert not plain.facts_for("train.py").names["is_main"].rank_test
    assert edited("a rank test").facts_for("train.py").names["is_main"].rank_test
    run = edited("a collective added").facts_for("run.py").names["main"].reaches
    assert run is not None  # through ``train.main``'s call of ``helpers.sync``
    assert "main" not in edited("an import taken out").facts_for("run.py").names or (
        edited("an import taken out").facts_for("run.py").names["main"].reaches is None
    )
    assert plain.facts_for("pkg/extra.py").unrun
    assert not edited("an import added").facts_for("pkg/extra.py").unrun
    assert plain.facts_for("pkg/loops.py").functions["worker"].rank_parameters == (0,)
    moved = edited("parameters reordered").facts_for("pkg/loops.py").functions["worker"]
    assert moved.rank_parameters == (1,)
    assert plain.facts_for("pkg/loops.py").functions["fit"].parameter_kinds == ((1, "accelerator"),)
    functions = edited("what a factory returns").facts_for("pkg/loops.py").functions
    assert "fit" not in functions or not functions["fit"].parameter_kinds
    assert plain.facts_for("meter.py").main_alone
    assert plain.facts_for("meter.py").runs_alone
    for name in (
        "a group started where the program reaches",
        "a program runs the helper",
        "a name re-exported from a module that starts a group",
    ):
        assert not edited(name).facts_for("meter.py").main_alone, name
        assert not edited(name).facts_for("meter.py").runs_alone, name
