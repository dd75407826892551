"""Incremental linking (``ddplint.code.project.incremental``): after an edit, a run
summarises only the edited file and links again only what the edit can change, and
every file's facts and findings equal those of a cold run on the edited tree."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_project_model import DEFAULT_RULES, FIXTURES, generated_project

from ddplint.cache import LayeredEntry, ResultCache, content_hash
from ddplint.code.project.incremental import REWRITE_AFTER
from ddplint.code.project.memo import DIGESTS_KEY, facts_key, file_facts_key, read_digests
from ddplint.engine import RunResult, lint_paths, open_cache
from ddplint.settings import LintOptions, Settings

#: The edits, each with the modules it must link again (by module name). The project:
#: ``pkg.mN`` imports ``pkg.m(N-1)`` and calls its functions (``generated_project``),
#: beside the ``save_checkpoint`` fixture (``train_bad`` calls ``utils``).
Edit = Callable[[Path], None]


def _replace(relative: str, old: str, new: str) -> Edit:
    def edit(root: Path) -> None:
        path = root / relative
        text = path.read_text()
        assert old in text
        path.write_text(text.replace(old, new, 1))

    return edit


def _delete(relative: str) -> Edit:
    def edit(root: Path) -> None:
        (root / relative).unlink()

    return edit


def _create(relative: str, text: str) -> Edit:
    def edit(root: Path) -> None:
        (root / relative).write_text(text)

    return edit


EDITS: dict[str, tuple[str, Edit, set[str] | None]] = {
    # Lines move, a call is added inside a body: the module's exports are the same.
    "body only": (
        "pkg/m3.py",
        _replace("pkg/m3.py", "def is_main():\n", "def is_main():\n    print(1)\n\n"),
        {"pkg.m3"},
    ),
    # The barrier ``train_bad`` reaches through ``utils`` goes: facts of other files change.
    "body only, what callers reach": (
        "train_bad.py",
        _replace("utils.py", "    dist.barrier()\n", "    pass\n"),
        {"utils"},
    ),
    # ``pkg.m4`` imports ``pkg.m3`` and names none of the names that came there: its
    # links are kept (``code.project.touched``).
    "exports": (
        "pkg/m4.py",
        _replace("pkg/m3.py", "def prepare(net):\n", "def extra():\n    pass\ndef prepare(net):\n"),
        {"pkg.m3"},
    ),
    # ``pkg.m4`` calls ``m3.prepare``, which goes: it is linked again.
    "an export named by an importer": (
        "pkg/m4.py",
        _replace("pkg/m3.py", "def prepare(net):\n", "def prepared(net):\n"),
        {"pkg.m3", "pkg.m4"},
    ),
    # A new import in ``pkg.m5``: its importer ``pkg.m6`` names none of ``m5``'s new
    # names; only ``pkg.m5`` is linked again.
    "new import": (
        "pkg/m5.py",
        _replace("pkg/m5.py", "import torch\n", "import torch\nfrom pkg import m1\n"),
        {"pkg.m5"},
    ),
    # ``pkg.m6`` names ``m5.setup``, which now names ``pkg.m1``'s: it is linked again.
    "an import under a name an importer names": (
        "pkg/m5.py",
        _replace("pkg/m5.py", "def setup():\n", "from pkg.m1 import setup\ndef setup_own():\n"),
        {"pkg.m5", "pkg.m6"},
    ),
    # ``pkg.m3`` puts a folder on sys.path: any import of any module may now read
    # another module (``path_roots``), so everything is linked again.
    "folder on sys.path": (
        "pkg/m3.py",
        _replace(
            "pkg/m3.py",
            "import torch\n",
            "import os\nimport sys\nimport torch\n"
            "sys.path.insert(0, os.path.join(os.path.dirname(__file__), 'sub'))\n",
        ),
        None,
    ),
    # The package exports a name no module asked about.
    "package exports": (
        "pkg/m4.py",
        _create("pkg/__init__.py", "def extra():\n    pass\n"),
        {"pkg"},
    ),
    # The package binds the names its modules import from it (``from pkg import m3``
    # now names a function): every module that imports from it is linked again (more
    # than ``REWRITE_AFTER``: the links are kept again).
    "package exports names asked": (
        "pkg/m4.py",
        _create("pkg/__init__.py", "".join(f"def m{n}():\n    pass\n" for n in range(8))),
        {"pkg", *(f"pkg.m{n}" for n in range(8))},
    ),
    # ``utils`` goes: ``train_bad`` and ``train_good`` asked for it.
    "deleted module": ("train_bad.py", _delete("utils.py"), {"train_bad", "train_good"}),
    # A module that comes links everything again (what asked for its name is not kept).
    "new module": (
        "train_bad.py",
        _create("helpers.py", "import torch.distributed as dist\ndef f():\n    dist.barrier()\n"),
        None,
    ),
}


def _run(root: Path, paths: list[Path], cache: Path, monkeypatch: pytest.MonkeyPatch) -> RunResult:
    monkeypatch.setenv("DDPLINT_CACHE_DIR", str(cache))
    settings = Settings(project_root=root)
    options = LintOptions(selected=DEFAULT_RULES, project_root=str(root))
    return lint_paths([str(p) for p in paths], settings, options, jobs=1)


def _memoized_facts(root: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The encoded facts of every Python file, as the run over the tree memoized them."""
    monkeypatch.setenv("DDPLINT_CACHE_DIR", str(cache))
    settings = Settings(project_root=root)
    options = LintOptions(selected=DEFAULT_RULES, project_root=str(root))
    hashes = {
        path.relative_to(root).as_posix(): content_hash(path.read_bytes())
        for path in root.rglob("*.py")
    }
    results = open_cache(settings, options)
    digests = read_digests(LayeredEntry(results, DIGESTS_KEY).merged)
    memo_key = facts_key({path: digests[hash_] for path, hash_ in hashes.items()})
    entries = {path: results.get(file_facts_key(memo_key, path)) for path in hashes}
    assert all(entry is not None for entry in entries.values())
    return {path: entry["facts"] for path, entry in entries.items() if entry is not None}


def _findings(result: RunResult) -> list[tuple[str, int, str, str]]:
    return sorted((Path(f.path).name, f.line, f.rule, f.message) for f in result.findings)


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return make_tree(tmp_path, monkeypatch)


def make_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The ``save_checkpoint`` fixture beside a generated project of 8 modules."""
    root = tmp_path / "project"
    shutil.copytree(FIXTURES / "save_checkpoint", root)
    for relative, text in generated_project(8).items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    monkeypatch.chdir(root)
    monkeypatch.setenv("DDPLINT_CACHE_KEY_FILE", str(tmp_path / "key"))
    return root


@pytest.mark.parametrize("name", sorted(EDITS))
def test_an_edit_links_again_only_what_it_changes_with_the_facts_of_a_cold_run(
    name: str, tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    linted, edit, relinked = EDITS[name]
    warm = tmp_path / "warm"
    first = _run(tree, [tree], warm, monkeypatch)
    assert first.stats.linked == first.stats.summarised > 0
    edit(tree)
    hook = _run(tree, [tree / linted], warm, monkeypatch)  # as pre-commit runs it
    assert hook.stats.summarised == (0 if name == "deleted module" else 1)
    modules = len(list(tree.rglob("*.py")))
    assert hook.stats.linked == (modules if relinked is None else len(relinked))
    whole = _run(tree, [tree], warm, monkeypatch)
    # Few modules linked: the kept links were left as they were, the same are linked
    # again; after more, the links were written and nothing is linked again.
    again = hook.stats.linked if hook.stats.linked <= REWRITE_AFTER else 0
    assert whole.stats.summarised == 0 and whole.stats.linked == again

    cold = tmp_path / "cold"
    cold_hook = _run(tree, [tree / linted], cold, monkeypatch)
    cold_whole = _run(tree, [tree], tmp_path / "cold-whole", monkeypatch)
    assert _findings(hook) == _findings(cold_hook)
    assert _findings(whole) == _findings(cold_whole)
    assert _memoized_facts(tree, warm, monkeypatch) == _memoized_facts(
        tree, tmp_path / "cold-whole", monkeypatch
    )


def _stored(root: Path, key: str) -> dict[str, Any] | None:
    """The cache entry ``key`` of the runs over ``root`` (``DDPLINT_CACHE_DIR``)."""
    settings = Settings(project_root=root)
    return open_cache(settings, LintOptions(selected=DEFAULT_RULES, project_root=str(root))).get(
        key
    )


def test_a_run_that_links_some_modules_again_writes_their_records_only(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kept links are a base and a layer (``cache.LayeredEntry``): a run that links
    some modules again writes the records that changed, not every module's links."""
    from ddplint.code.project.incremental import LINKS_KEY

    linted, edit, relinked = EDITS["package exports names asked"]
    assert relinked is not None
    _run(tree, [tree], tmp_path / "warm", monkeypatch)
    base = _stored(tree, LINKS_KEY)
    assert base is not None
    edit(tree)
    hook = _run(tree, [tree / linted], tmp_path / "warm", monkeypatch)
    assert hook.stats.linked == len(relinked) > REWRITE_AFTER
    assert _stored(tree, LINKS_KEY) == base
    layer = _stored(tree, LINKS_KEY + ":layer")
    assert layer is not None and layer["base"] == base["token"] and not layer["removed"]
    edited = "source:pkg/__init__.py"
    assert edited in layer["records"]
    assert set(layer["records"]) <= {edited, *(f"module:{name}" for name in relinked)}


def test_the_links_say_which_modules_an_edit_reaches(tree: Path) -> None:
    """The links of ``pkg.m4`` were made asking about ``pkg.m3`` (it imports it) and
    not about ``pkg.m6``."""
    from ddplint.code.project.index import ProjectIndex
    from ddplint.code.project.module_summary import summarize

    index = ProjectIndex(
        {p.relative_to(tree).as_posix(): summarize(p.read_text()) for p in tree.rglob("*.py")}
    )
    assert "pkg.m3" in index.asked["pkg.m4"] and "pkg.m6" not in index.asked["pkg.m4"]
    assert index.linked == list(index.paths)
    # ... and asked ``pkg.m3`` the names it calls, and ``pkg`` the module it imports
    # (``from pkg import m3``: does the package bind its own ``m3``?)
    asked = index.named["pkg.m4"]
    assert {"setup", "prepare", "evaluate", "is_main"} <= set(asked["pkg.m3"].split(" "))
    assert "main" not in asked["pkg.m3"].split(" ") and asked["pkg"] != "*"
    assert "m3" in asked["pkg"].split(" ")


@pytest.mark.parametrize(
    "damage", ["edited in the database", "of another shape", "a function's of another shape"]
)
def test_damaged_links_in_the_cache_are_linked_afresh(
    damage: str, tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kept links edited outside ddplint (their signature fails) or of a shape this
    version does not write are not used: the project is linked again, and the findings
    are a cold run's."""
    import json
    import sqlite3

    from ddplint.code.project.incremental import LINKS_KEY

    warm = tmp_path / "warm"
    _run(tree, [tree], warm, monkeypatch)
    settings = Settings(project_root=tree)
    options = LintOptions(selected=DEFAULT_RULES, project_root=str(tree))
    cache: ResultCache = open_cache(settings, options)
    entry = cache.get(LINKS_KEY)  # the base of a layered entry
    assert entry is not None
    records = entry["records"]
    records["module:utils"][3]["functions"].clear()  # nothing would reach the barrier
    if damage != "edited in the database":
        if damage == "of another shape":
            records["module:train_good"][3] = "damaged"
        else:
            records["module:utils"][3]["functions"]["_wait_for_all"] = []
        cache.put(LINKS_KEY, entry)
        cache.save()
    else:
        with sqlite3.connect(cache.file) as database:
            database.execute(
                "UPDATE entries SET value = ? WHERE key = ?", (json.dumps(entry), LINKS_KEY)
            )
    _replace("train_bad.py", "import", "import os\nimport")(tree)
    result = _run(tree, [tree / "train_bad.py"], warm, monkeypatch)
    cold = _run(tree, [tree / "train_bad.py"], tmp_path / "cold", monkeypatch)
    assert _findings(result) == _findings(cold) != []
    assert result.stats.linked == len(list(tree.rglob("*.py")))
