"""The client's byte stream, read with bounded memory.

pygls reads a header line with ``readline()`` and a message body with ``read(n)``,
``n`` being the ``Content-Length`` the client declared: a header of 10^12 would be
allocated at once (``MemoryError``, the server dies). ``BoundedInput`` stands in for
standard input: a header line is read at most ``MAX_HEADER_BYTES`` at a time, and a
body above ``MAX_MESSAGE_BYTES`` is read in chunks and dropped (the frames after it
stay in step); in its place pygls gets a ``DROPPED`` notification, which the server
answers with one message to the user.
"""

from __future__ import annotations

import json
from typing import BinaryIO

#: The largest message kept: an open document of tens of MB (a 50 MB frame is served;
#: documents above ``max-file-size``, 2 MiB by default, are not linted anyway).
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
#: The longest header line kept in one piece (real ones are under 100 bytes).
MAX_HEADER_BYTES = 64 * 1024
#: The method of the notification that takes a dropped message's place.
DROPPED = "$/ddplint/droppedMessage"
_CHUNK_BYTES = 1024 * 1024


class BoundedInput:
    """A binary stream for pygls's reader that never holds more than one kept message."""

    def __init__(self, stream: BinaryIO, limit: int = MAX_MESSAGE_BYTES) -> None:
        self._stream = stream
        self._limit = limit

    def readline(self) -> bytes:
        return self._stream.readline(MAX_HEADER_BYTES)

    def read(self, size: int) -> bytes:
        """``size`` bytes; a body over the limit is skipped and reported as ``DROPPED``
        (empty, as at the end of the stream, when the client closes it first)."""
        if size <= self._limit:
            return self._stream.read(size)
        left = size
        while left:
            chunk = self._stream.read(min(left, _CHUNK_BYTES))
            if not chunk:
                return b""
            left -= len(chunk)
        notice = {"jsonrpc": "2.0", "method": DROPPED, "params": {"size": size}}
        return json.dumps(notice).encode("ascii")
