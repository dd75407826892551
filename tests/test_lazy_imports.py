"""A run that only reads the cache must not import the analysis: no LibCST, ruamel,
OmegaConf or rule module. Checked by running
``ddplint check`` in a subprocess and reading its ``sys.modules``, not by timing it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ddplint.rule import ConfigRule
from ddplint.rules import all_rules
from ddplint.rules.catalogue import CATALOGUE

HAZARD = (
    "import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n"
    "    def forward(self, x):\n        torch.cuda.synchronize()\n        return x\n"
)
CONFIG = "trainer:\n  devices: 2\nmodel:\n  train_ds:\n    num_workers: 0\n"
#: Runs ``ddplint check`` and prints, after it, the heavy modules it imported.
PROBE = """
import json, sys
from ddplint.cli import cli
try:
    cli(["check", "--exit-zero", "-q", "."])
except SystemExit:
    pass
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("libcst", "ruamel", "omegaconf")
               or m.startswith(("ddplint.rules.code", "ddplint.rules.config")))
print(json.dumps(heavy))
"""


def _imported(tree: Path, tmp_path: Path) -> list[str]:
    environment = {
        **os.environ,
        "DDPLINT_CACHE_DIR": str(tmp_path / "cache"),
        "DDPLINT_CACHE_KEY_FILE": str(tmp_path / "key"),
    }
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=tree,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return list(json.loads(result.stdout.strip().splitlines()[-1]))


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    tree = tmp_path / "repo"
    tree.mkdir()
    (tree / "pyproject.toml").write_text("[tool.ddplint]\n")
    for name, text in files.items():
        (tree / name).write_text(text)
    return tree


def test_a_warm_run_imports_no_analysis(tmp_path: Path) -> None:
    tree = _tree(tmp_path, {"net.py": HAZARD, "train.yaml": CONFIG, "util.py": "x = 1\n"})
    cold = _imported(tree, tmp_path)
    assert any(m.startswith("libcst") for m in cold)  # the cold run did parse
    assert _imported(tree, tmp_path) == []


def test_the_catalogue_says_what_the_rule_classes_say() -> None:
    for code, rule in all_rules().items():
        entry = CATALOGUE[code]
        assert (entry.name, entry.kind, entry.default_enabled) == (
            rule.name,
            rule.kind,
            rule.default_enabled,
        ), code
        facts = rule.code_facts if issubclass(rule, ConfigRule) else ()
        assert entry.code_facts == facts, code
        if facts:
            assert entry.needles == rule.needles, code
    assert list(CATALOGUE) == list(all_rules())
