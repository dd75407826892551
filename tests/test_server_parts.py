"""The language server's parts without a client: positions, ``# noqa`` edits, the
scheduler's superseding, and the engine's in-memory entry ``lint_buffers``."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest
from test_project_model import generated_project

from ddplint.cache import ResultCache
from ddplint.code.project.index import ProjectIndex
from ddplint.code.project.module_summary import summarize
from ddplint.engine import ProjectMemo, lint_buffers
from ddplint.finding import Edit, Finding, Related, Severity
from ddplint.invocation import build_options, build_settings
from ddplint.server.diagnostics import finding_diagnostic
from ddplint.server.documents import EDIT_ENTRIES, ProjectLinter, SessionCache, Snapshot
from ddplint.server.positions import UTF8, UTF16, UTF32, to_lsp
from ddplint.server.scheduling import LintScheduler
from ddplint.suppress import Suppressions, noqa_edit

LINES = ['x = "🚀é"; y = 1\n', "z = 2\n"]


@pytest.mark.parametrize(
    ("encoding", "units"),
    [(UTF16, 11), (UTF32, 10), (UTF8, 14)],  # 🚀: 2 / 1 / 4 units, é: 1 / 1 / 2
)
def test_columns_after_non_ascii_count_in_the_encodings_units(encoding: str, units: int) -> None:
    column = LINES[0].index("y") + 1  # ddplint: 1-based code points
    assert to_lsp(LINES, 1, column, encoding) == (0, units)
    assert to_lsp(LINES, 2, 1, encoding) == (1, 0)


def test_a_position_past_the_end_is_the_end_of_the_text() -> None:
    assert to_lsp(LINES, 3, 1, UTF16) == (2, 0)
    assert to_lsp(["a = 1"], 2, 1, UTF16) == (0, 5)
    assert to_lsp([], 1, 1, UTF16) == (0, 0)


def _applied(text: str, edit: Edit) -> str:
    lines = text.splitlines(keepends=True)
    line = lines[edit.line - 1]
    lines[edit.line - 1] = line[: edit.column - 1] + edit.content + line[edit.end_column - 1 :]
    return "".join(lines)


def _silenced(text: str, kind: str, first: int, last: int, code: str) -> str:
    edit = noqa_edit(text, kind, first, last, code)
    assert edit is not None
    fixed = _applied(text, edit)
    assert Suppressions.for_text(fixed, kind).directives  # the comment is read back
    return fixed


def test_noqa_goes_on_the_flagged_line_after_its_trailing_spaces() -> None:
    text = "dist.barrier()   \nx = 1\n"
    assert _silenced(text, "code", 1, 1, "DDP201") == "dist.barrier()  # noqa: DDP201\nx = 1\n"


def test_noqa_joins_a_noqa_comment_already_there() -> None:
    text = "dist.barrier()  # noqa: E501\n"
    assert _silenced(text, "code", 1, 1, "DDP201") == "dist.barrier()  # noqa: E501, DDP201\n"
    text = "dist.barrier()  # why it is fine\n"
    assert (
        _silenced(text, "code", 1, 1, "DDP201")
        == "dist.barrier()  # why it is fine  # noqa: DDP201\n"
    )


def test_noqa_skips_lines_that_end_inside_a_string_or_after_a_continuation() -> None:
    text = 'call(\n    """doc\n    more""", x) + \\\n    y\n'
    fixed = _silenced(text, "code", 2, 4, "DDP201")
    assert fixed.splitlines()[3] == "    y  # noqa: DDP201"
    assert noqa_edit('s = """a\nb"""\n', "code", 1, 1, "DDP201") is None


def test_noqa_in_yaml_ignores_a_hash_inside_a_value() -> None:
    text = "name: run#3\ntrainer:\n  devices: 8 # all\n"
    assert _silenced(text, "config", 1, 1, "DDP601").splitlines()[0] == (
        "name: run#3  # noqa: DDP601"
    )
    assert _silenced(text, "config", 3, 3, "DDP601").splitlines()[2] == (
        "  devices: 8 # all  # noqa: DDP601"
    )


def test_a_newer_request_supersedes_a_run_in_progress_and_its_result_is_dropped() -> None:
    started, release = threading.Event(), threading.Event()
    snapshots = iter([1, 2])
    published: list[int] = []
    failures: list[Exception] = []

    def work(snapshot: int) -> int:
        if snapshot == 1:
            started.set()
            release.wait(60)
        return snapshot

    async def main() -> None:
        done = asyncio.Event()

        def publish(result: int) -> None:
            published.append(result)
            done.set()

        scheduler = LintScheduler(lambda: next(snapshots), work, publish, failures.append, delay=0)
        scheduler.request()
        await asyncio.get_running_loop().run_in_executor(None, started.wait, 60)
        scheduler.request()  # the first run is in its worker thread: superseded
        release.set()
        await asyncio.wait_for(done.wait(), 60)
        scheduler.close()

    asyncio.run(main())
    assert published == [2]
    assert failures == []


def test_a_run_that_raises_is_reported_and_publishes_nothing() -> None:
    published: list[int] = []
    failures: list[Exception] = []

    def work(snapshot: int) -> int:
        raise RuntimeError(f"bug on {snapshot}")

    async def main() -> None:
        scheduler = LintScheduler(lambda: 7, work, published.append, failures.append, delay=0)
        scheduler.request()
        while not failures:
            await asyncio.sleep(0.01)
        scheduler.close()

    asyncio.run(asyncio.wait_for(main(), 60))
    assert [str(f) for f in failures] == ["bug on 7"]
    assert published == []


def _project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty project root (a ``.git`` folder) with a cache key of its own."""
    monkeypatch.setenv("DDPLINT_CACHE_KEY_FILE", str(tmp_path / "key"))
    root = tmp_path / "project"
    root.mkdir()
    (root / ".git").mkdir()
    return root


def test_a_project_whose_run_fails_fails_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One project's run raising (a bug of ours) gives its documents that error; the
    documents of another project are linted all the same."""
    from ddplint.server import documents

    broken, sound = tmp_path / "broken", tmp_path / "sound"
    for root in (broken, sound):
        (root / ".git").mkdir(parents=True)
        # DDP101, the sample hazard, is opt-in since issue 23.
        (root / "pyproject.toml").write_text('[tool.ddplint]\nextend-select = ["DDP101"]\n')
    monkeypatch.setenv("DDPLINT_CACHE_KEY_FILE", str(tmp_path / "key"))
    lint_group = documents._lint_group

    def fail_in_broken(setup, snapshots):  # type: ignore[no-untyped-def]
        if setup.settings.project_root == broken.resolve():
            raise KeyError("bug")
        return lint_group(setup, snapshots)

    monkeypatch.setattr(documents, "_lint_group", fail_in_broken)
    text = (
        "import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n"
        "    def forward(self, x):\n        torch.cuda.synchronize()\n        return x\n"
    )
    snapshots = [
        Snapshot(f"file://{root}/net.py", (root / "net.py").resolve(), 1, text)
        for root in (broken, sound)
    ]
    run = ProjectLinter().lint(snapshots)
    [error] = run.results[snapshots[0].uri].errors
    assert error.message == "internal error while linting: KeyError: 'bug'"
    assert [f.rule for f in run.results[snapshots[1].uri].findings] == ["DDP101"]


def test_a_buffer_stands_in_for_its_file_in_the_project_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(tmp_path, monkeypatch)
    # DDP201 is opt-in since issue 23: the project selects it.
    (root / "pyproject.toml").write_text('[tool.ddplint]\nextend-select = ["DDP201"]\n')
    utils = "import torch.distributed as dist\n\n\ndef save(model):\n    pass\n"
    (root / "utils.py").write_text(utils)
    (root / "train.py").write_text(
        "import torch.distributed as dist\n\nimport utils\n\n\n"
        "def main(model):\n    if dist.get_rank() == 0:\n        utils.save(model)\n"
    )
    settings = build_settings((str(root),), None, (), (), (), False)
    options = build_options(settings)
    cache = ResultCache(tmp_path / "cache", options.fingerprint())
    memo = ProjectMemo()
    train = (root / "train.py").resolve()
    on_disk = lint_buffers({train: train.read_bytes()}, settings, options, cache, memo)
    assert on_disk.findings == []
    assert memo.listing is not None
    assert sorted(t.relative for t in memo.listing) == ["train.py", "utils.py"]
    with_barrier = utils.replace("pass", "dist.barrier()").encode()
    buffers = {train: train.read_bytes(), (root / "utils.py").resolve(): with_barrier}
    unsaved = lint_buffers(buffers, settings, options, cache, memo)
    assert [(f.rule, f.line, Path(f.path).name) for f in unsaved.findings] == [
        ("DDP201", 7, "train.py")
    ]
    assert (root / "utils.py").read_text() == utils  # nothing written
    again = lint_buffers({train: train.read_bytes()}, settings, options, cache, memo)
    assert again.findings == []  # the buffer closed: utils.py as on disk again


def test_a_session_writes_what_it_first_learned_and_keeps_what_others_wrote_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DDPLINT_CACHE_KEY_FILE", str(tmp_path / "key"))
    folder = tmp_path / "cache"
    session = SessionCache(folder, "f")
    session.put("summary:disk", {"summary": {"v": 1}})
    check = ResultCache(folder, "f")  # a `ddplint check` writing while the server runs
    check.put("code:other", {"findings": []})
    check.save()
    session.write_back()
    assert ResultCache(folder, "f").stored() == {
        "code:other": {"findings": []},
        "summary:disk": {"summary": {"v": 1}},
    }
    session.put("code:an-unsaved-edit", {"findings": []})
    session.write_back()  # once per session: later texts are not written
    assert "code:an-unsaved-edit" not in ResultCache(folder, "f").stored()
    assert "code:an-unsaved-edit" in session.entries


def test_a_session_keeps_only_the_last_edits_it_learned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server's memory over 1,000 edits: each edit's text adds a summary and a result
    (about 1.3 MB for a 900-line file); only the last ``EDIT_ENTRIES`` stay, and what
    the session learned from the files on disk stays too."""
    monkeypatch.setenv("DDPLINT_CACHE_KEY_FILE", str(tmp_path / "key"))
    session = SessionCache(tmp_path / "cache", "f")
    session.put("summary:disk", {"summary": {"v": 1}})
    session.write_back()
    for edit in range(1000):
        session.put(f"code:edit-{edit}", {"findings": []})
    assert len(session.entries) == EDIT_ENTRIES + 1
    assert "summary:disk" in session.entries
    assert f"code:edit-{999}" in session.entries
    assert f"code:edit-{999 - EDIT_ENTRIES}" not in session.entries


def test_the_project_index_is_used_again_while_every_summary_is_the_same() -> None:
    memo = ProjectMemo()
    summaries = {"a.py": summarize("def f():\n    print(1)\n")}
    first = memo.index(summaries)
    edited = {"a.py": summarize("def f():\n    print(2)\n")}  # the same summary
    assert memo.index(edited) is first
    changed = {
        "a.py": summarize("import torch.distributed as dist\ndef f():\n    dist.barrier()\n")
    }
    assert memo.index(changed) is not first
    assert memo.index({**changed, "b.py": summarize("x = 1\n")}) is not memo.index(changed)


UTILS = "import torch.distributed as dist\n\n\ndef sync():\n    dist.barrier()\n"
TRAIN = "from utils import sync\n\n\ndef step(rank):\n    if rank == 0:\n        sync()\n"


def _facts(index: ProjectIndex) -> tuple[object, ...]:
    return index.reach, index._calls, index.facts_for("train.py")


def test_an_index_after_a_body_edit_starts_from_the_old_resolutions_and_equals_a_fresh_one() -> (
    None
):
    memo = ProjectMemo()
    first = memo.index({"utils.py": summarize(UTILS), "train.py": summarize(TRAIN)})
    # Lines move and a call is added: what the functions do changed, not the names.
    moved = TRAIN.replace("def step(rank):\n", "def step(rank):\n    print(rank)\n\n")
    summaries = {"utils.py": summarize(UTILS), "train.py": summarize(moved)}
    second = memo.index(summaries)
    assert second is not first and second.resolved is first.resolved
    assert _facts(second) == _facts(ProjectIndex(summaries))
    assert second.reach[("utils", "sync")].where == "utils.py:5"
    # An import changes: names resolve anew.
    renamed = moved.replace("from utils import sync", "from other import sync")
    third = memo.index({"utils.py": summarize(UTILS), "train.py": summarize(renamed)})
    assert third.resolved is not first.resolved
    assert third.function_key("sync", "train", None) is None


def _all_facts(index: ProjectIndex) -> dict[str, object]:
    return {
        path: (index.facts_for(path), sorted(index.reach.items()))
        for path in sorted(index.module_of_path)
    }


@pytest.mark.parametrize("moved_path", ["utils.py", "train.py", "pkg/m0.py", "pkg/m3.py"])
def test_an_index_after_lines_moved_is_the_same_index_and_equals_a_fresh_one(
    moved_path: str,
) -> None:
    """Lines inserted above code (a blank line, a comment, an import line kept as it
    was) change no summary but its line numbers: the index is moved, not rebuilt, and
    tells every file what a fresh index of the new summaries tells it, down to where a
    reached collective stands."""
    sources = {"utils.py": UTILS, "train.py": TRAIN, **generated_project(5)}
    memo = ProjectMemo()
    first = memo.index({path: summarize(text) for path, text in sources.items()})
    moved = dict(sources)
    moved[moved_path] = "# a comment\n\n" + sources[moved_path].replace("\ndef ", "\n\ndef ", 1)
    summaries = {path: summarize(text) for path, text in moved.items()}
    assert summaries[moved_path] != summarize(sources[moved_path])
    second = memo.index(summaries)
    assert second is first  # moved, not rebuilt
    assert _all_facts(second) == _all_facts(ProjectIndex(summaries))
    if moved_path == "utils.py":
        assert second.reach[("utils", "sync")].where == "utils.py:8"


BODY_EDITS = {
    # A call added inside a body: what the function does, not its names.
    "call added": ("pkg/m2.py", "def is_main():\n", "def is_main():\n    print(1)\n"),
    # A parameter added: the callers' links read its positions.
    "parameter added": ("pkg/m2.py", "def prepare(net):", "def prepare(extra, net):"),
    # A barrier added to a function others reach.
    "collective added": (
        "pkg/m1.py",
        "def prepare(net):\n",
        "def prepare(net):\n    dist.barrier()\n",
    ),
}


@pytest.mark.parametrize("name", sorted(BODY_EDITS))
def test_an_index_after_a_body_edit_keeps_only_links_that_read_nothing_changed(name: str) -> None:
    """An edit of what functions do (the names modules import and define the same)
    links again only the edited module and the modules whose linking read it; every
    file is told what a fresh index of the new summaries tells it."""
    sources = generated_project(8)
    memo = ProjectMemo()
    first = memo.index({path: summarize(text) for path, text in sources.items()})
    path, old, new = BODY_EDITS[name]
    assert old in sources[path]
    edited = {**sources, path: sources[path].replace(old, new, 1)}
    summaries = {path: summarize(text) for path, text in edited.items()}
    second = memo.index(summaries)
    assert second is not first
    assert 0 < len(second.linked) < len(first.linked)
    assert _all_facts(second) == _all_facts(ProjectIndex(summaries))


RANK_TAKER = (
    "import torch.distributed as dist\n\n\n"
    "def run(model, rank):\n    if rank == 0:\n        dist.barrier()\n"
)
RANK_GIVER = (
    "import torch.distributed as dist\n\nfrom taker import run\n\n\n"
    "def main(model):\n    rank = dist.get_rank()\n    run(model, rank=rank)\n"
)


def test_a_caller_whose_link_read_the_edited_module_is_linked_again() -> None:
    """``giver`` hands the rank by keyword: its link reads ``taker``'s parameters. When
    they swap places (the names the same), ``giver``'s kept link would name the wrong
    position; it is linked again."""
    memo = ProjectMemo()
    first = memo.index({"taker.py": summarize(RANK_TAKER), "giver.py": summarize(RANK_GIVER)})
    assert "taker" in first.asked["giver"]
    swapped = RANK_TAKER.replace("def run(model, rank):", "def run(rank, model):")
    summaries = {"taker.py": summarize(swapped), "giver.py": summarize(RANK_GIVER)}
    second = memo.index(summaries)
    assert sorted(second.linked) == ["giver", "taker"]
    assert _all_facts(second) == _all_facts(ProjectIndex(summaries))
    assert second.rank_parameters[("taker", "run")] == {0}


def test_a_summary_change_beyond_lines_is_not_taken_for_a_move() -> None:
    memo = ProjectMemo()
    first = memo.index({"utils.py": summarize(UTILS), "train.py": summarize(TRAIN)})
    # The barrier moves and a second one comes: more than lines changed.
    twice = UTILS.replace("    dist.barrier()\n", "\n    dist.barrier()\n    dist.barrier()\n")
    summaries = {"utils.py": summarize(twice), "train.py": summarize(TRAIN)}
    assert memo.index(summaries) is not first
    assert _all_facts(memo.index(summaries)) == _all_facts(ProjectIndex(summaries))


def test_tidy_runs_once_the_server_is_quiet_and_a_request_cancels_it() -> None:
    published: list[int] = []
    tidied: list[int] = []
    snapshots = iter([1, 2])

    async def main() -> None:
        scheduler = LintScheduler(
            lambda: next(snapshots),
            lambda snapshot: snapshot,
            published.append,
            lambda exc: None,
            delay=0,
            tidy=lambda: tidied.append(len(published)),
            tidy_after=1.0,
        )
        scheduler.request()
        while not published:
            await asyncio.sleep(0.01)
        scheduler.request()  # before the quiet time is over: no tidy yet
        while len(published) < 2:
            await asyncio.sleep(0.01)
        assert tidied == []
        for _ in range(500):  # the quiet second, then the tidy in the worker thread
            if tidied:
                break
            await asyncio.sleep(0.01)
        scheduler.close()

    asyncio.run(asyncio.wait_for(main(), 60))
    assert published == [1, 2]
    assert tidied == [2]


def test_collect_and_freeze_leaves_survivors_out_of_later_collections() -> None:
    import gc

    from ddplint.server.memory import collect_and_freeze

    kept = [[index] for index in range(1000)]
    try:
        collect_and_freeze()
        assert gc.get_freeze_count() >= len(kept)
    finally:
        gc.unfreeze()


def test_runs_without_an_idle_pause_still_have_their_garbage_collected() -> None:
    """The server's memory over many edits without a pause: the garbage cycles each run
    leaves are collected every ``COLLECT_AFTER_RUNS`` runs, not frozen for ever."""
    import gc
    import weakref

    from ddplint.server.memory import COLLECT_AFTER_RUNS, collect_and_freeze, frozen_after

    class Node:
        partner: object = None

    left: list[weakref.ref[Node]] = []

    def work(_: int) -> None:
        a, b = Node(), Node()
        a.partner, b.partner = b, a  # a garbage cycle, as a lint run leaves
        left.append(weakref.ref(a))

    run = frozen_after(work)
    try:
        collect_and_freeze()
        for index in range(COLLECT_AFTER_RUNS):
            run(index)
        assert all(ref() is None for ref in left)
    finally:
        gc.unfreeze()


def test_a_newer_request_cancels_the_run_in_progress_at_its_next_check() -> None:
    from ddplint import cancellation

    published: list[str] = []
    snapshots = iter(["first", "second"])
    checks = threading.Event()
    stopped: list[str] = []

    def work(snapshot: str) -> str:
        if snapshot == "first":
            try:
                for _ in range(6000):  # 60 s at most
                    checks.set()
                    cancellation.check()
                    time.sleep(0.01)
            except cancellation.Cancelled:
                stopped.append(snapshot)
                raise
        return snapshot

    async def main() -> None:
        scheduler = LintScheduler(
            lambda: next(snapshots), work, published.append, lambda exc: None, delay=0
        )
        scheduler.request()
        await asyncio.get_running_loop().run_in_executor(None, checks.wait, 60)
        scheduler.request()
        while not published:  # the first run, cancelled, publishes nothing
            await asyncio.sleep(0.01)
        scheduler.close()

    asyncio.run(asyncio.wait_for(main(), 60))
    assert stopped == ["first"]
    assert published == ["second"]


def test_a_cancelled_lint_stops_before_the_next_rule_and_caches_no_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ddplint.engine.per_file
    from ddplint import cancellation

    root = _project(tmp_path, monkeypatch)
    # Two rules that run on the file (opt-in since issue 23: the project selects them), so
    # that a cancellation can fall between them.
    (root / "pyproject.toml").write_text('[tool.ddplint]\nextend-select = ["DDP201", "DDP219"]\n')
    train = root / "train.py"
    train.write_text(
        "import torch.distributed as dist\n\n\ndef step(t):\n"
        "    if dist.get_rank() == 0:\n        dist.barrier()\n"
        "    for _ in range(dist.get_rank()):\n        dist.all_reduce(t)\n"
    )
    settings = build_settings((str(root),), None, (), (), (), False)
    options = build_options(settings)
    cache = ResultCache(tmp_path / "cache", options.fingerprint())
    stop = threading.Event()
    ran: list[str] = []
    real_check = ddplint.engine.per_file._check

    def check_then_cancel(rule: object, context: object) -> object:
        ran.append(rule.code)  # type: ignore[attr-defined]
        stop.set()  # a newer edit arrives while the first rule runs
        return real_check(rule, context)  # type: ignore[arg-type]

    monkeypatch.setattr(ddplint.engine.per_file, "_check", check_then_cancel)
    buffers = {train.resolve(): train.read_bytes()}
    with pytest.raises(cancellation.Cancelled):
        cancellation.cancellable(stop, lambda: lint_buffers(buffers, settings, options, cache))
    assert len(ran) == 1
    assert not any(key.startswith("code") for key in cache.entries)
    monkeypatch.setattr(ddplint.engine.per_file, "_check", real_check)
    found = lint_buffers(buffers, settings, options, cache).findings
    assert sorted(f.rule for f in found) == ["DDP201", "DDP219"]
    assert any(key.startswith("code") for key in cache.entries)  # a whole run is cached


def test_related_places_become_related_information_in_the_document() -> None:
    lines = ["if rank == 0:\n", "    break\n", "dist.barrier()\n"]
    finding = Finding(
        "DDP219",
        "ranks-part-before-collective",
        Severity.ERROR,
        "t.py",
        2,
        5,
        2,
        10,
        "parts",
        related=(Related(3, 1, "`barrier`, which some ranks skip"),),
    )
    diagnostic = finding_diagnostic(lines, finding, UTF16, "file:///t.py")
    (related,) = diagnostic.related_information or []
    assert related.location.uri == "file:///t.py"
    assert (related.location.range.start.line, related.location.range.start.character) == (2, 0)
    assert related.message == "`barrier`, which some ranks skip"
    assert finding_diagnostic(lines, finding, UTF16).related_information is None
