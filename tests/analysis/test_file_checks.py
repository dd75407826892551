"""The file-system checks DDP218 asks of the core (``analysis/file_checks``)."""

from __future__ import annotations

import ast

from ddplint.analysis.file_checks import checked_path
from ddplint.analysis.functions import ModuleAnalysis


def test_a_path_check_looks_through_pathlib_by_its_import_not_its_name() -> None:
    """``Path(p).exists()`` looks at ``p`` when ``Path`` is pathlib's; another module's
    ``Path`` is left as it is written."""
    for module, expected in (("pathlib", "p"), ("mylib", "Path(p)")):
        tree = ast.parse(f"from {module} import Path\nPath(p).exists()\n")
        call = tree.body[1].value
        assert isinstance(call, ast.Call)
        found = checked_path(ModuleAnalysis(tree).names, call)
        assert found is not None and ast.unparse(found) == expected
