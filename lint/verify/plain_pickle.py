"""Read a pickle that may come from anywhere, without running it.

Flight-recorder dumps written by torch's watchdog are pickles, and a dump copied off a
production job is untrusted input: ``pickle.load`` would call whatever the stream names.
This reader walks the opcodes (``pickletools.genops`` only decodes them) and builds plain
data itself: dicts, lists, tuples, strings, bytes, ints, floats, booleans and None. Any
opcode that would look up a global, call something, build an object or fetch an external
reference is refused with :class:`UnsafePickle` before anything is built; nothing is
ever imported or called. Standard library only.
"""

from __future__ import annotations

import pickletools
from typing import Any

#: Opcodes whose only effect is on the reader's stack or memo.
_IGNORED = frozenset({"PROTO", "FRAME"})
_ATOMS = frozenset(
    {
        "INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4",
        "FLOAT", "BINFLOAT",
        "STRING", "BINSTRING", "SHORT_BINSTRING",
        "UNICODE", "BINUNICODE", "SHORT_BINUNICODE", "BINUNICODE8",
        "BINBYTES", "SHORT_BINBYTES", "BINBYTES8",
    }
)  # fmt: skip
_CONSTANTS = {"NONE": None, "NEWTRUE": True, "NEWFALSE": False}
_PUTS = frozenset({"PUT", "BINPUT", "LONG_BINPUT"})
_GETS = frozenset({"GET", "BINGET", "LONG_BINGET"})
_SMALL_TUPLES = {"TUPLE1": 1, "TUPLE2": 2, "TUPLE3": 3}


class PickleError(ValueError):
    """The stream is not a readable pickle (truncated, malformed)."""


class UnsafePickle(PickleError):
    """The stream asks for more than plain data (a global, a call, an object)."""


class _Mark:
    """Where a MARK opcode was pushed."""


_MARK = _Mark()


def load_plain(data: bytes) -> Any:
    """The plain value the pickle ``data`` spells; :class:`UnsafePickle` when it asks
    for anything else, :class:`PickleError` when it is cut short or malformed."""
    reader = _Reader()
    try:
        for opcode, argument, position in pickletools.genops(data):
            if opcode.name == "STOP":
                return reader.result()
            reader.step(opcode.name, argument, position)
    except PickleError:
        raise
    except (ValueError, TypeError, IndexError, KeyError, EOFError) as exc:
        raise PickleError(f"malformed pickle: {exc}") from None
    raise PickleError("pickle ends before its STOP opcode (truncated)")


class _Reader:
    """The pickle machine's stack and memo, for plain data only."""

    def __init__(self) -> None:
        self.stack: list[Any] = []
        self.memo: dict[int, Any] = {}

    def result(self) -> Any:
        if len(self.stack) != 1 or self.stack[0] is _MARK:
            raise PickleError("malformed pickle: the stack does not end with one value")
        return self.stack[0]

    def step(self, name: str, argument: Any, position: int | None) -> None:
        if name in _IGNORED:
            return
        if name in _ATOMS:
            self.stack.append(argument)
        elif name in _CONSTANTS:
            self.stack.append(_CONSTANTS[name])
        elif name in _PUTS:
            self.memo[int(argument)] = self._top()
        elif name == "MEMOIZE":
            self.memo[len(self.memo)] = self._top()
        elif name in _GETS:
            self.stack.append(self.memo[int(argument)])
        elif name == "MARK":
            self.stack.append(_MARK)
        else:
            self._container(name, position)

    def _container(self, name: str, position: int | None) -> None:
        if name == "EMPTY_DICT":
            self.stack.append({})
        elif name == "EMPTY_LIST":
            self.stack.append([])
        elif name == "EMPTY_TUPLE":
            self.stack.append(())
        elif name == "TUPLE":
            self.stack.append(tuple(self._pop_mark()))
        elif name in _SMALL_TUPLES:
            self.stack.append(tuple(self._pop(_SMALL_TUPLES[name])))
        elif name == "LIST":
            self.stack.append(self._pop_mark())
        elif name == "DICT":
            items = self._pop_mark()
            self.stack.append(dict(zip(items[::2], items[1::2], strict=True)))
        elif name == "APPEND":
            (value,) = self._pop(1)
            self._list().append(value)
        elif name == "APPENDS":
            values = self._pop_mark()
            self._list().extend(values)
        elif name == "SETITEM":
            key, value = self._pop(2)
            self._dict()[key] = value
        elif name == "SETITEMS":
            items = self._pop_mark()
            self._dict().update(zip(items[::2], items[1::2], strict=True))
        elif name == "POP":
            self._pop(1)
        elif name == "POP_MARK":
            self._pop_mark()
        elif name == "DUP":
            self.stack.append(self._top())
        else:
            raise UnsafePickle(
                f"refused: the pickle uses opcode {name} at byte {position}, which builds "
                "objects or calls code; a flight-recorder dump holds plain data only, so "
                "nothing of it was run"
            )

    def _top(self) -> Any:
        if not self.stack or self.stack[-1] is _MARK:
            raise PickleError("malformed pickle: no value where one is needed")
        return self.stack[-1]

    def _pop(self, count: int) -> list[Any]:
        if len(self.stack) < count or any(v is _MARK for v in self.stack[-count:]):
            raise PickleError("malformed pickle: stack underflow")
        values = self.stack[-count:]
        del self.stack[-count:]
        return values

    def _pop_mark(self) -> list[Any]:
        for index in range(len(self.stack) - 1, -1, -1):
            if self.stack[index] is _MARK:
                values = self.stack[index + 1 :]
                del self.stack[index:]
                return values
        raise PickleError("malformed pickle: no MARK")

    def _list(self) -> list[Any]:
        target = self._top()
        if not isinstance(target, list):
            raise PickleError("malformed pickle: APPEND to something that is not a list")
        return target

    def _dict(self) -> dict[Any, Any]:
        target = self._top()
        if not isinstance(target, dict):
            raise PickleError("malformed pickle: SETITEM on something that is not a dict")
        return target
