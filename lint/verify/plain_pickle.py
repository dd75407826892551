"""Read a pickle that may come from anywhere, without running it.

Flight-recorder dumps written by torch's watchdog are pickles, and a dump copied off a
production job is untrusted input: ``pickle.load`` would call whatever the stream names.
This reader decodes the opcodes itself and builds plain data only: dicts, lists, tuples,
strings, bytes, ints, floats, booleans and None (the binary opcodes of protocols 2-5,
which is what torch writes). An opcode that would look up a global, call something,
build an object or fetch an external reference is refused with :class:`UnsafePickle`
when it is met; nothing is ever imported or called. Standard library only.
"""

from __future__ import annotations

import pickletools
import struct
from typing import Any

#: Opcodes that reach code: globals, calls, object construction, external references.
UNSAFE = frozenset(
    {
        "GLOBAL", "STACK_GLOBAL", "REDUCE", "BUILD", "INST", "OBJ", "NEWOBJ", "NEWOBJ_EX",
        "EXT1", "EXT2", "EXT4", "PERSID", "BINPERSID", "NEXT_BUFFER", "READONLY_BUFFER",
    }
)  # fmt: skip
_NAMES = {info.code.encode("latin-1")[0]: info.name for info in pickletools.opcodes}
_CODES = {name: code for code, name in _NAMES.items()}
_CONSTANTS = {_CODES["NONE"]: None, _CODES["NEWTRUE"]: True, _CODES["NEWFALSE"]: False}
_MARK_CODE, _STOP_CODE = _CODES["MARK"], _CODES["STOP"]
_EMPTY_DICT_CODE, _SETITEMS_CODE = _CODES["EMPTY_DICT"], _CODES["SETITEMS"]
_SMALL_TUPLES = {_CODES["TUPLE1"]: 1, _CODES["TUPLE2"]: 2, _CODES["TUPLE3"]: 3}
#: Opcodes with a length-prefixed payload: code -> (length format, decode as text).
_U8, _U16, _U32, _U64, _I32 = (struct.Struct(f) for f in ("<B", "<H", "<I", "<Q", "<i"))
_SIZED = {
    _CODES["BINUNICODE"]: (_U32, True),
    _CODES["SHORT_BINUNICODE"]: (_U8, True),
    _CODES["BINUNICODE8"]: (_U64, True),
    _CODES["BINBYTES"]: (_U32, False),
    _CODES["SHORT_BINBYTES"]: (_U8, False),
    _CODES["BINBYTES8"]: (_U64, False),
}
#: Integers, and memo indexes: code -> their layout.
_FIXED_INTS = {_CODES["BININT1"]: _U8, _CODES["BININT2"]: _U16, _CODES["BININT"]: _I32}
_PUTS = {_CODES["BINPUT"]: _U8, _CODES["LONG_BINPUT"]: _U32}
_GETS = {_CODES["BINGET"]: _U8, _CODES["LONG_BINGET"]: _U32}
_LONGS = {_CODES["LONG1"]: _U8, _CODES["LONG4"]: _I32}


class PickleError(ValueError):
    """The stream is not a readable pickle (truncated, malformed, or text opcodes)."""


class UnsafePickle(PickleError):
    """The stream asks for more than plain data (a global, a call, an object)."""


def load_plain(data: bytes) -> Any:
    """The plain value the pickle ``data`` spells; :class:`UnsafePickle` when it asks
    for anything else, :class:`PickleError` when it is cut short or malformed."""
    try:
        return _Reader(data).run()
    except PickleError:
        raise
    except struct.error:
        raise PickleError("pickle ends in the middle of an opcode (truncated)") from None
    except (UnicodeDecodeError, TypeError, KeyError, ValueError) as exc:
        raise PickleError(f"malformed pickle: {exc}") from None


def _refuse_any_unsafe(rest: bytes, offset: int) -> None:
    """A pickle this reader does not decode (protocol 0 or 1) is refused either way;
    :class:`UnsafePickle` when it also asks for code (``genops`` only decodes)."""
    try:
        for info, _argument, position in pickletools.genops(rest):
            if info.name in UNSAFE:
                raise UnsafePickle(
                    f"refused: the pickle uses opcode {info.name} at byte "
                    f"{offset + (position or 0)}, which builds objects or calls code; a "
                    "flight-recorder dump holds plain data only, so nothing of it was run"
                )
    except ValueError as exc:
        if isinstance(exc, UnsafePickle):
            raise


class _Reader:
    """The pickle machine's stack and memo, for plain data only."""

    def __init__(self, data: bytes) -> None:
        self.data = bytes(data)
        self.position = 0
        self.stack: list[Any] = []
        #: Stack heights at each open MARK (CPython's unpickler keeps them apart too).
        self.marks: list[int] = []
        self.memo: dict[int, Any] = {}

    def take(self, size: int) -> bytes:
        end = self.position + size
        if end > len(self.data):
            raise PickleError("pickle ends in the middle of an opcode (truncated)")
        chunk = self.data[self.position : end]
        self.position = end
        return chunk

    def number(self, layout: struct.Struct) -> int:
        return int(layout.unpack(self.take(layout.size))[0])

    def run(self) -> Any:
        """The loop over opcodes; the frequent ones of a dump (strings, memo, small ints,
        marks) are decoded inline, with the position in a local."""
        data, stack, memo, marks = self.data, self.stack, self.memo, self.marks
        size = len(data)
        pos = 0
        while pos < size:
            code = data[pos]
            pos += 1
            if code in _SIZED:
                layout, text = _SIZED[code]
                (length,) = layout.unpack_from(data, pos)
                pos += layout.size
                if pos + length > size:
                    raise PickleError("pickle ends in the middle of a string (truncated)")
                payload = data[pos : pos + length]
                pos += length
                stack.append(payload.decode("utf-8", "surrogatepass") if text else payload)
            elif code in _PUTS:
                layout = _PUTS[code]
                if len(stack) <= (marks[-1] if marks else 0):
                    raise PickleError("malformed pickle: nothing to memoize")
                memo[layout.unpack_from(data, pos)[0]] = stack[-1]
                pos += layout.size
            elif code in _GETS:
                layout = _GETS[code]
                stack.append(memo[layout.unpack_from(data, pos)[0]])
                pos += layout.size
            elif code in _FIXED_INTS:
                layout = _FIXED_INTS[code]
                stack.append(layout.unpack_from(data, pos)[0])
                pos += layout.size
            elif code in _CONSTANTS:
                stack.append(_CONSTANTS[code])
            elif code == _MARK_CODE:
                marks.append(len(stack))
            elif code == _EMPTY_DICT_CODE:
                stack.append({})
            elif code == _SETITEMS_CODE:
                items = self._pop_mark()
                target = self._target(dict)
                for index in range(0, len(items) - 1, 2):
                    target[items[index]] = items[index + 1]
                if len(items) % 2:
                    raise PickleError("malformed pickle: SETITEMS with a key and no value")
            elif code == _STOP_CODE:
                return self._result()
            else:
                self.position = pos
                self._structure(code, pos - 1)
                pos = self.position
        raise PickleError("pickle ends before its STOP opcode (truncated)")

    def _structure(self, code: int, at: int) -> None:
        name = _NAMES.get(code, f"0x{code:02x}")
        stack = self.stack
        if name == "EMPTY_LIST":
            stack.append([])
        elif name == "EMPTY_TUPLE":
            stack.append(())
        elif name == "APPENDS":
            values = self._pop_mark()
            self._target(list).extend(values)
        elif name == "SETITEM":
            key, value = self._pop(2)
            self._target(dict)[key] = value
        elif name == "APPEND":
            (value,) = self._pop(1)
            self._target(list).append(value)
        elif code in _SMALL_TUPLES:
            stack.append(tuple(self._pop(_SMALL_TUPLES[code])))
        elif name == "TUPLE":
            stack.append(tuple(self._pop_mark()))
        elif name == "LIST":
            stack.append(self._pop_mark())
        elif name == "DICT":
            items = self._pop_mark()
            stack.append(dict(zip(items[::2], items[1::2], strict=True)))
        elif code in _LONGS:
            size = self.number(_LONGS[code])
            if size < 0:
                raise PickleError("malformed pickle: negative LONG size")
            stack.append(int.from_bytes(self.take(size), "little", signed=True))
        elif name == "BINFLOAT":
            stack.append(float(struct.unpack(">d", self.take(8))[0]))
        elif name == "MEMOIZE":
            self.memo[len(self.memo)] = self._top()
        elif name == "PROTO":
            self.take(1)
        elif name == "FRAME":
            self.take(8)
        elif name == "POP":
            self._pop(1)
        elif name == "POP_MARK":
            self._pop_mark()
        elif name == "DUP":
            stack.append(self._top())
        elif name in UNSAFE:
            raise UnsafePickle(
                f"refused: the pickle uses opcode {name} at byte {at}, which builds "
                "objects or calls code; a flight-recorder dump holds plain data only, so "
                "nothing of it was run"
            )
        else:
            _refuse_any_unsafe(bytes(self.data[at:]), at)
            raise PickleError(
                f"unsupported pickle opcode {name} at byte {at} (torch writes the binary "
                "opcodes of protocol 2 and later)"
            )

    def _result(self) -> Any:
        if len(self.stack) != 1 or self.marks:
            raise PickleError("malformed pickle: the stack does not end with one value")
        return self.stack[0]

    def _floor(self) -> int:
        """The lowest stack index values may be taken from (above the open MARK)."""
        return self.marks[-1] if self.marks else 0

    def _top(self) -> Any:
        if len(self.stack) <= self._floor():
            raise PickleError("malformed pickle: no value where one is needed")
        return self.stack[-1]

    def _pop(self, count: int) -> list[Any]:
        if len(self.stack) - count < self._floor():
            raise PickleError("malformed pickle: stack underflow")
        values = self.stack[-count:]
        del self.stack[-count:]
        return values

    def _pop_mark(self) -> list[Any]:
        if not self.marks:
            raise PickleError("malformed pickle: no MARK")
        start = self.marks.pop()
        values = self.stack[start:]
        del self.stack[start:]
        return values

    def _target(self, kind: type) -> Any:
        target = self._top()
        if not isinstance(target, kind):
            raise PickleError(f"malformed pickle: an item added to a non-{kind.__name__}")
        return target
