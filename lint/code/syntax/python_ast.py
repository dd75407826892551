"""CPython's ``ast`` of a module, parsed once for every reader of the same text.

Linting one file reads its ``ast`` up to four times: the nesting guard, the module
summary, the code-fact collectors and the statement positions. The last few texts
parsed are remembered (by value), so a file costs one parse; the trees are shared and
must be treated as read-only. A tree takes tens of times its text's size in memory, so
only ``KEPT_CHARACTERS`` of text in all are kept.
"""

from __future__ import annotations

import ast
import threading
import warnings
from collections import OrderedDict

#: Texts whose trees are kept: the file being linted, and a few an editor switches to.
KEPT_TREES = 4
#: Characters of text, in all, whose trees are kept (a larger text's tree is not).
KEPT_CHARACTERS = 1_000_000

_trees: OrderedDict[str, ast.Module] = OrderedDict()
_lock = threading.Lock()


def parse_python(text: str) -> ast.Module:
    """``ast.parse(text)`` without its warnings (``SyntaxWarning``,
    ``DeprecationWarning``); raises what ``ast.parse`` raises (``SyntaxError``,
    ``ValueError``, ``RecursionError``, ``MemoryError``), and caches no failure."""
    with _lock:
        tree = _trees.get(text)
        if tree is not None:
            _trees.move_to_end(text)
            return tree
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = ast.parse(text)
    if len(text) > KEPT_CHARACTERS:
        return tree
    with _lock:
        _trees[text] = tree
        while len(_trees) > KEPT_TREES or sum(map(len, _trees)) > KEPT_CHARACTERS:
            _trees.popitem(last=False)
    return tree
