"""Fixes keep a file's own shape (L2, L3, L11): lone-CR line ends stay lone CRs, the
hoist of DDP207 works in tab-indented code, and an encoding that cannot store the same
text as the same bytes (``unicode_escape``) is refused rather than rewritten."""

from __future__ import annotations

import subprocess
from pathlib import Path

from .support import CHECK_COMMAND


def _fix(folder: Path, name: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            *CHECK_COMMAND,
            "--unsafe-fixes",
            "--fix",
            name,
        ],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_lone_cr_line_ends_are_kept(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_bytes(
        b'import torch.distributed as dist\r\rdist.init_process_group("gloo", timeout=1800)\r'
    )
    result = _fix(tmp_path, "train.py")
    assert result.returncode == 0, result.stdout + result.stderr
    data = (tmp_path / "train.py").read_bytes()
    assert b"timedelta(seconds=1800)" in data
    assert b"\n" not in data and data.count(b"\r") == 4


def test_group_hoist_in_tab_indented_code(tmp_path: Path) -> None:
    (tmp_path / "groups.py").write_text(
        "import torch.distributed as dist\n\n\ndef setup():\n"
        "\tif dist.get_rank() == 0:\n\t\tgroup = dist.new_group([0, 1])\n"
        "\telse:\n\t\tgroup = None\n\treturn group\n"
    )
    result = _fix(tmp_path, "groups.py")
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "groups.py").read_text().splitlines()[4:6] == [
        "\tgroup_on_all_ranks = dist.new_group([0, 1])",
        "\tif dist.get_rank() == 0:",
    ]


def test_unicode_escape_file_is_not_rewritten(tmp_path: Path) -> None:
    original = (
        b"# coding: unicode_escape\nimport torch\nfrom torch import nn\n\n\n"
        b"class Net(nn.Module):\n    def forward(self, x):\n"
        b"        torch.cuda.synchronize()\n        return x\n"
    )
    (tmp_path / "net.py").write_bytes(original)
    result = _fix(tmp_path, "net.py")
    assert (tmp_path / "net.py").read_bytes() == original
    assert result.returncode == 2
    assert "not fixed: its encoding (unicode_escape)" in result.stderr
