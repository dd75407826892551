"""What nothing in the project can run (``ddplint.code.project.reach``): references
resolved through imports, modules run by programs, strings and loads, and what stays
unknown (dynamic lookups, libraries)."""

from __future__ import annotations

from ddplint.code.project.index import ProjectIndex
from ddplint.code.project.module_summary import summarize
from ddplint.code.project.reach import Reach

PROGRAM = "if __name__ == '__main__':\n    main()\n"
UTILS = "def f():\n    pass\n\n\ndef g():\n    pass\n\n\nclass C:\n    def m(self):\n        pass\n"


def reach_of(files: dict[str, str]) -> Reach:
    return ProjectIndex({path: summarize(text) for path, text in files.items()}).reach_of_code


def unreferenced(files: dict[str, str], module: str = "utils") -> set[str]:
    return set(reach_of(files).unreferenced.get(module, ()))


def test_a_name_is_referenced_through_imports_not_by_its_spelling() -> None:
    assert unreferenced({"train.py": "import utils\n" + PROGRAM, "utils.py": UTILS}) == {
        "f",
        "g",
        "C",
    }
    # `from m import f`, `import m; m.g()`, a subclass of `C`.
    spellings = {
        "from utils import f\n": {"g", "C"},
        "import utils\nutils.g()\n": {"f", "C"},
        "import utils as u\nclass D(u.C):\n    pass\n": {"f", "g"},
        "import pkg.utils\npkg.utils.f()\n": {"g", "C"},
        "from pkg import f\n": {"g", "C"},
    }
    for header, left in spellings.items():
        files = {
            "train.py": header + PROGRAM,
            "utils.py": UTILS,
            "pkg/__init__.py": "from .utils import f\n",
            "pkg/utils.py": UTILS,
        }
        module = "pkg.utils" if "pkg" in header else "utils"
        assert unreferenced(files, module) == left, header
    # `model.train()` or a local `f` of another module names nothing of `utils`.
    files = {
        "train.py": "import utils\ndef f():\n    pass\nmodel.f()\nmodel.C()\n" + PROGRAM,
        "utils.py": UTILS,
    }
    assert unreferenced(files) == {"f", "g", "C"}


def test_an_import_the_index_cannot_resolve_reaches_every_module_it_may_name() -> None:
    # `tools/train.py` puts `lib/` on sys.path: `core.function` is `lib/core/function.py`.
    files = {
        "tools/train.py": "import sys\nsys.path.insert(0, 'lib')\n"
        "from core.function import f\n" + PROGRAM,
        "lib/core/__init__.py": "",
        "lib/core/function.py": UTILS,
        "lib/core/unused.py": UTILS,
    }
    reach = reach_of(files)
    assert reach.unrun == {"lib.core.unused"}
    assert set(reach.unreferenced["lib.core.function"]) == {"g", "C"}
    # `from utils import g` in a subfolder of the script's folder (on sys.path).
    files = {
        "app/run.py": "from evaluation import score\n" + PROGRAM,
        "app/evaluation/__init__.py": "from evaluation.score import score\n",
        "app/evaluation/score.py": "from utils import g\ndef score():\n    g()\n",
        "app/utils.py": UTILS,
    }
    assert unreferenced(files, "app.utils") == {"f", "C"}
    # `src/` without `__init__`: the index names `src/data.py` `data`.
    files = {"train.py": "from src.data import C\n" + PROGRAM, "src/data.py": UTILS}
    assert unreferenced(files, "data") == {"f", "g"}


def test_a_value_a_string_or_a_decorator_references_a_name() -> None:
    forms = {
        "mp.spawn(utils.f, nprocs=2)\n": {"g", "C"},
        "LOOPS = {'a': utils.f, 'b': utils.C}\n": {"g"},
        "getattr(utils, 'g')()\n": {"f", "C"},
        "run('utils.g')\n": {"f", "C"},
        "run('utils:C')\n": {"f", "g"},
    }
    for line, left in forms.items():
        files = {"train.py": "import utils\n" + line + PROGRAM, "utils.py": UTILS}
        assert unreferenced(files) == left, line
    registered = (
        "@REGISTRY.register()\ndef f():\n    pass\n\n\n@torch.no_grad()\ndef g():\n    pass\n"
    )
    files = {"train.py": "import utils\n" + PROGRAM, "utils.py": "import torch\n" + registered}
    assert unreferenced(files) == {"g"}
    listed = UTILS + "__all__ = ['C']\n"
    assert unreferenced({"train.py": "import utils\n" + PROGRAM, "utils.py": listed}) == {"f", "g"}


def test_what_analysis_cannot_see_is_never_unreferenced() -> None:
    for header in (
        "from utils import *\n",
        "import utils\ngetattr(utils, name)()\n",
        "import importlib\nimportlib.import_module(f'plug.{name}')\n",
    ):
        files = {"train.py": header + PROGRAM, "utils.py": UTILS, "plug/utils.py": UTILS}
        assert not reach_of(files).unreferenced, header
    for lookup in ("globals()[name]", "fire.Fire()"):
        own = UTILS + f"def h(name):\n    return {lookup}\n"
        assert not unreferenced({"train.py": "import utils\n" + PROGRAM, "utils.py": own})
    cli = {"train.py": "from lightning.pytorch.cli import LightningCLI\nLightningCLI()\n"}
    assert not reach_of({**cli, "model.py": UTILS}).unrun
    # A module named by a string: what a load returns is read by attributes.
    files = {"train.py": "import importlib\nimportlib.import_module('utils')\n" + PROGRAM}
    assert not reach_of({**files, "utils.py": UTILS}).unreferenced


def test_modules_no_program_runs() -> None:
    files = {
        "train.py": "import used\n" + PROGRAM,
        "used.py": "",
        "copy_of_trainer.py": UTILS,
        "tests/test_utils.py": "import tested\n",
        "tested.py": "",
    }
    assert reach_of(files).unrun == {"copy_of_trainer"}
    # Named by a string, or loaded by a computed name with its head (and defining the
    # attribute read on what is loaded): run.
    named = {**files, "train.py": "import used\nrun('copy_of_trainer.C')\n" + PROGRAM}
    assert not reach_of(named).unrun
    loaded = {
        **files,
        "train.py": "import importlib\nimportlib.import_module(f'copy_of_{x}').Trainer\n" + PROGRAM,
    }
    assert reach_of(loaded).unrun == {"copy_of_trainer", "used"}
    loaded["copy_of_trainer.py"] = UTILS + "class Trainer(C):\n    pass\n"
    assert reach_of(loaded).unrun == {"used"}
    # What Python runs as a script though the summary's programs leave it out: a
    # package's `__main__`, a top level that calls a project function.
    scripts = {
        "pkg/__main__.py": "from pkg.cli import run\n",
        "pkg/__init__.py": "",
        "pkg/cli.py": "import copy_of_trainer\ndef run():\n    pass\n",
        "launch.py": "from pkg.cli import run\nrun()\n",
    }
    assert reach_of({**files, **scripts}).unrun == set()
    launch = {**files, "launch.py": "import logging\nlogging.basicConfig()\n"}
    assert reach_of(launch).unrun == {"copy_of_trainer", "launch"}
    # A load with no constant head, an installable package, a project without programs:
    # a module no program imports stays unknown.
    dynamic = {**files, "train.py": "from hydra.utils import instantiate\ninstantiate(c)\n"}
    assert not reach_of({**dynamic, "train.py": dynamic["train.py"] + PROGRAM}).unrun
    assert not reach_of({**files, "setup.py": "setup()\n"}).unrun
    assert not reach_of({"a.py": UTILS, "b.py": UTILS}).unrun


def test_an_installable_package_keeps_its_public_names() -> None:
    files = {
        "setup.py": "from setuptools import setup\nsetup()\n",
        "train.py": "import utils\n" + PROGRAM,
        "utils.py": UTILS + "def _helper():\n    pass\n",
    }
    assert unreferenced(files) == {"_helper"}
    # A `pyproject.toml` package: its top-level package binds `__version__`.
    for init in ("__version__ = '1.0'\n", "from .info import __version__\n"):
        files = {
            "pkg/__init__.py": init,
            "pkg/info.py": "__version__ = '1.0'\n",
            "train.py": "import pkg.utils\n" + PROGRAM,
            "pkg/utils.py": UTILS + "def _helper():\n    pass\n",
            "copy_of_trainer.py": UTILS,
        }
        assert unreferenced(files, "pkg.utils") == {"_helper"}, init
        assert not reach_of(files).unrun
    files["pkg/__init__.py"] = ""
    assert unreferenced(files, "pkg.utils") == {"f", "g", "C", "_helper"}


def test_every_spelling_of_a_computed_name_gives_its_constant_head() -> None:
    files = {
        "datasets/__init__.py": "",
        "datasets/city.py": "from datasets import uniform\n",
        "datasets/uniform.py": UTILS,
        "copy_of_trainer.py": UTILS,
    }
    for name in (
        "f'datasets.{x}'",
        "'datasets.' + x",
        "'datasets.{}'.format(x)",
        "'datasets.%s' % x",
    ):
        train = f"import importlib\nimportlib.import_module({name})\n" + PROGRAM
        reach = reach_of({**files, "train.py": train})
        # What the head may load runs (and what it imports); the rest is unrun.
        assert reach.unrun == {"copy_of_trainer"}, name
    # No constant head (the hole first, or a name handed in whole): nothing is unrun.
    for name in ("'{}.city'.format(x)", "'%s.city' % x", "name"):
        train = f"import importlib\nimportlib.import_module({name})\n" + PROGRAM
        assert not reach_of({**files, "train.py": train}).unrun, name
