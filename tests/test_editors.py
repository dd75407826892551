"""The editor set-up of docs/editors.md, in a real editor where one is installed: the
Neovim 0.7+ snippet, verbatim, starts `ddplint server` and shows its diagnostics."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import HAZARD

ROOT = Path(__file__).resolve().parent.parent
NVIM = shutil.which("nvim")
#: Seconds: only a run that never ends fails on it.
HANG_GUARD = 600

pytestmark = [pytest.mark.slow, pytest.mark.skipif(NVIM is None, reason="needs Neovim")]

#: Appended to the snippet: wait for diagnostics (or give up after the hang guard),
#: write them (line:column:code), quit.
REPORTER = """
local out = os.getenv("DDPLINT_NVIM_OUT")
local give_up = vim.loop.now() + 1000 * tonumber(os.getenv("DDPLINT_NVIM_GUARD"))
local function report()
  local found = vim.diagnostic.get(0)
  if #found == 0 and vim.loop.now() < give_up then
    vim.defer_fn(report, 200)
    return
  end
  local lines = {}
  for _, d in ipairs(found) do
    local code = d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code)
    table.insert(lines, string.format("%d:%d:%s", d.lnum + 1, d.col + 1, tostring(code)))
  end
  vim.fn.writefile(lines, out)
  vim.cmd("qa!")
end
vim.defer_fn(report, 200)
"""


def neovim_07_snippet() -> str:
    """The `init.lua` of docs/editors.md for Neovim 0.7 or later."""
    text = (ROOT / "docs" / "editors.md").read_text(encoding="utf-8")
    section = text.split("Neovim 0.7 or later", 1)[1]
    match = re.search(r"```lua\n(.*?)```", section, re.DOTALL)
    assert match, "no Lua block after 'Neovim 0.7 or later'"
    return match.group(1)


def test_neovim_07_snippet_shows_diagnostics(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    # DDP101, the sample hazard, is opt-in since issue 23: the project selects it.
    (project / "pyproject.toml").write_text(
        "[project]\nname = 'x'\n\n[tool.ddplint]\nextend-select = [\"DDP101\"]\n"
    )
    (project / "net.py").write_text(HAZARD)
    init = tmp_path / "init.lua"
    init.write_text(neovim_07_snippet() + REPORTER)
    out = tmp_path / "diagnostics.txt"
    environment = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "DDPLINT_NVIM_OUT": str(out),
        "DDPLINT_NVIM_GUARD": str(HANG_GUARD // 2),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
    }
    assert NVIM is not None
    done = subprocess.run(
        [NVIM, "--headless", "-u", str(init), "net.py"],
        cwd=project,
        env=environment,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
        check=False,
    )
    assert out.exists(), done.stdout + done.stderr
    assert out.read_text().splitlines() == ["7:9:DDP101"]
