"""The folders a module puts on ``sys.path`` (``ddplint.code.project.path_roots``), and
imports resolved under them by the project index."""

from __future__ import annotations

import ast

import pytest

from ddplint.code.project.index import ProjectIndex
from ddplint.code.project.module_summary import summarize
from ddplint.code.project.path_roots import inserted_folders
from ddplint.engine.run_setup import ProjectMemo

#: Top-level code and the folders (relative to the module's) it puts on sys.path.
FORMS = {
    # CenterNet's `_init_paths`: a helper of the module inserts its parameter.
    "import os.path as osp\nimport sys\n\n"
    "def add_path(path):\n    if path not in sys.path:\n        sys.path.insert(0, path)\n\n"
    "this_dir = osp.dirname(__file__)\nlib_path = osp.join(this_dir, 'lib')\n"
    "add_path(lib_path)\n": ["lib"],
    "import os, sys\n"
    "sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), '..')))\n": [".."],
    "import os, sys\n"
    "sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))\n": [".."],
    "import os, sys\n"
    "sys.path.append(os.path.join(os.path.dirname(__file__), os.pardir, 'third_party'))\n": [
        "../third_party"
    ],
    "import os, sys\nsys.path.append(os.path.dirname(os.path.realpath(__file__)) + '/..')\n": [
        ".."
    ],
    "import sys\nfrom pathlib import Path\nROOT = Path(__file__).resolve().parents[1]\n"
    "if str(ROOT / 'lib') not in sys.path:\n    sys.path.insert(0, str(ROOT / 'lib'))\n": [
        "../lib"
    ],
    "import sys\nfrom pathlib import Path\nsys.path.append(str(Path(__file__).parent.parent))\n": [
        ".."
    ],
    "import os, sys\nHERE = os.path.dirname(__file__)\nsys.path.insert(0, f'{HERE}/src')\n": [
        "src"
    ],
    "import os, sys\nROOT = os.path.dirname(__file__)\n"
    "sys.path.append('{}/../vendor'.format(ROOT))\n": ["../vendor"],
    "import os, sys\nsys.path.insert(1, os.path.join(sys.path[0], '..'))\n": [".."],
    "import os, sys\nLIB = os.path.join(os.path.dirname(__file__), 'lib')\n"
    "sys.path.insert(0, LIB) if LIB not in sys.path else None\n": ["lib"],
    "import os.path\nimport sys as system\n"
    "try:\n    system.path.append(os.path.split(os.path.abspath(__file__))[0])\n"
    "except OSError:\n    pass\n": ["."],
    # Paths that depend on the working directory, or are not built from the module's
    # own file, name no folder of the project.
    "import sys\nsys.path.append('.')\nsys.path.insert(0, '../lib')\n": [],
    "import os, sys\nsys.path.append(os.getcwd())\nsys.path.append(os.path.abspath('..'))\n": [],
    "import sys\nsys.path.append('/home/someone/research/lib')\n": [],
    "import os, sys\nsys.path.append(os.path.join(os.path.dirname(__file__), name))\n": [],
    "import os, sys\nHERE = os.path.dirname(__file__)\nHERE = os.environ['ROOT']\n"
    "sys.path.insert(0, HERE)\n": [],
    "import os, sys\nsys.path.append(os.path.dirname(__file__) + 'lib')\n": [],
    # Inside a function nothing at the top level calls with a path: not read.
    "import os, sys\n\ndef main():\n"
    "    sys.path.insert(0, os.path.join(os.path.dirname(__file__), 'lib'))\n": [],
    # `sys` not imported: `sys.path` is some other object's attribute.
    "import os\nsys.path.append(os.path.dirname(__file__))\n": [],
}


@pytest.mark.parametrize("source", sorted(FORMS))
def test_the_folders_a_module_puts_on_sys_path(source: str) -> None:
    assert summarize(source).get("path_roots", []) == FORMS[source]


def test_the_reader_reads_only_the_module_own_sys() -> None:
    statements = ast.parse("sys.path.append(os.path.dirname(__file__))\n").body
    assert inserted_folders(statements, {"os": "os"}) == []
    assert inserted_folders(statements, {"os": "os", "sys": "sys"}) == ["."]


INIT_PATHS = (
    "import os.path as osp\nimport sys\n"
    "sys.path.insert(0, osp.join(osp.dirname(__file__), 'lib'))\n"
)
PROJECT = {
    "src/train.py": "import _init_paths\nfrom trains.trainer import fit\n",
    "src/_init_paths.py": INIT_PATHS,
    "src/lib/trains/__init__.py": "",
    "src/lib/trains/trainer.py": "def fit():\n    pass\n",
    "tools/run.py": "from trains.trainer import fit\n",
}


def _index(files: dict[str, str]) -> ProjectIndex:
    return ProjectIndex({path: summarize(text) for path, text in files.items()})


def test_an_import_resolves_under_a_folder_a_module_puts_on_sys_path() -> None:
    index = _index(PROJECT)
    assert index.resolve_module("trains.trainer", "train") == "lib.trains.trainer"
    # sys.path is the process's: another script's import reads it too (a loose reading,
    # taken only where the import resolves no other way).
    assert index.resolve_module("trains.trainer", "tools.run") == "lib.trains.trainer"
    assert index.lookup("trains.trainer.fit", "train") == ("function", "lib.trains.trainer", "fit")
    # Inserted relative to the working directory: not read, the import stays unknown.
    cwd = {**PROJECT, "src/_init_paths.py": "import sys\nsys.path.insert(0, 'lib')\n"}
    assert _index(cwd).resolve_module("trains.trainer", "train") is None


def test_a_folder_above_the_project_or_its_top_adds_nothing() -> None:
    files = {
        "train.py": "import os, sys\n"
        "sys.path.append(os.path.join(os.path.dirname(__file__), '..', 'other'))\n"
        "sys.path.append(os.path.dirname(__file__))\n",
        "a.py": "",
    }
    index = _index(files)
    assert index.inserted == {"train.py": ["../other", "."]}
    assert index.resolve_module("other.a", "train") is None


def test_the_server_links_everything_again_when_the_folders_change() -> None:
    setup = ProjectMemo()
    summaries = {path: summarize(text) for path, text in PROJECT.items()}
    first = setup.index(summaries)
    assert first.resolve_module("trains.trainer", "train") == "lib.trains.trainer"
    edited = dict(summaries)
    edited["src/_init_paths.py"] = summarize("import sys\n")
    again = setup.index(edited)
    assert again is not first and again.linked == list(again.paths)
    assert again.resolve_module("trains.trainer", "train") is None
