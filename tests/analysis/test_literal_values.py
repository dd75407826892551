"""Values decided where they are set (``ddplint.analysis.literal_values``): what counts
as a literal wherever it is read, and what leaves it unknown."""

from __future__ import annotations

import ast
import textwrap

import pytest

from ddplint.analysis.literal_values import UNKNOWN, LiteralValues


def _values(source: str) -> tuple[LiteralValues, ast.Module]:
    tree = ast.parse(textwrap.dedent(source))
    return LiteralValues(tree), tree


def _read(source: str, spelled: str) -> object:
    """The value of the last expression of the module spelled ``spelled``."""
    values, tree = _values(source)
    found = [n for n in ast.walk(tree) if isinstance(n, ast.expr) and ast.unparse(n) == spelled]
    assert found, spelled
    return values.value(max(found, key=lambda n: (n.lineno, n.col_offset)))


def test_module_constant_read_in_a_function() -> None:
    source = """
        WORKERS = 4
        def build():
            return WORKERS
    """
    assert _read(source, "WORKERS") == 4


@pytest.mark.parametrize(
    "rebinding",
    [
        "WORKERS = 8",
        "def tune():\n    global WORKERS\n    WORKERS = 8",
        "for WORKERS in range(3):\n    pass",
        "from settings import *",
        "import WORKERS",
    ],
)
def test_module_constant_bound_again_is_unknown(rebinding: str) -> None:
    source = f"WORKERS = 4\n{rebinding}\ndef build():\n    return WORKERS\n"
    assert _read(source, "WORKERS") is UNKNOWN


def test_a_local_of_the_same_name_hides_the_constant() -> None:
    source = """
        WORKERS = 4
        def build(WORKERS):
            return WORKERS
    """
    assert _read(source, "WORKERS") is UNKNOWN


def test_fixed_key_of_a_dict_literal() -> None:
    source = """
        config = {"num_workers": 8, "lr": 0.1}
        config["lr"] = 0.2
        config.update({"batch": 4})
        print(config)
        def build():
            return config["num_workers"], config.get("num_workers"), config["lr"]
    """
    assert _read(source, "config['num_workers']") == 8
    assert _read(source, "config.get('num_workers')") == 8
    assert _read(source, "config['lr']") is UNKNOWN


@pytest.mark.parametrize(
    "use",
    [
        "config.update(json.load(open('extra.json')))",
        "customise(config)",
        "other = config",
        "config.clear()",
        "config[key] = 0",
        "config |= {'num_workers': 0}",
    ],
)
def test_a_dict_merged_or_handed_on_is_open(use: str) -> None:
    source = f"import json\nconfig = {{'num_workers': 8}}\n{use}\nvalue = config['num_workers']\n"
    assert _read(source, "config['num_workers']") is UNKNOWN


def test_dict_bound_in_a_function_is_read_there() -> None:
    source = """
        def build(extra):
            options = dict(num_workers=2)
            options["shuffle"] = extra
            return options["num_workers"]
    """
    assert _read(source, "options['num_workers']") == 2


@pytest.mark.parametrize(
    ("test", "decision"),
    [
        ("USE and is_main", False),
        ("not USE", True),
        ("USE or is_main", None),
        ("MODE == 'fast'", True),
        ("MODE == 'slow' and is_main", False),
        ("is_main", None),
        ("args.flag", None),
    ],
)
def test_tests_decided_by_constants(test: str, decision: bool | None) -> None:
    values, tree = _values(f"USE = False\nMODE = 'fast'\nif {test}:\n    pass\n")
    (branch,) = [n for n in tree.body if isinstance(n, ast.If)]
    assert values.decided(branch.test) is decision


def test_arms_never_taken() -> None:
    values, _ = _values(
        """
        USE = True
        def step(is_main, x):
            if USE and is_main:
                x.log()
            elif USE:
                pass
            else:
                x.item()
            if not USE:
                x.cpu()
        """
    )
    closed = sorted(arm[0].lineno for arm in values.never_taken())
    assert closed == [9, 11]
