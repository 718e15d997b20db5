"""Server-sent events, decoded incrementally from the bytes of each network read.

    decoder = SSEDecoder()
    async for data in response.aiter_bytes():
        for event in decoder.feed(data):
            print(event.event, event.data)   # "message", '{"choices": ...}'

The event-stream format of the HTML standard: lines end in ``\\r\\n``, ``\\n`` or ``\\r``
(a ``\\r\\n`` may be split across reads); a blank line dispatches the event; ``data`` lines
join with ``\\n``; a line starting with ``:`` is a comment (keep-alives); ``event`` names the
event; ``id`` and ``retry`` serve reconnection, which a completion stream does not do, and are
skipped. ``data: [DONE]`` is an ordinary event here: what it means is the caller's business.

Why not ``httpx-sse``: it reads line by line (``aiter_lines``) and hands over one event at a
time, while the model stream hands on everything one read brought at once (a burst of
tokens costs the layers above one pass, see :mod:`.stream`).
"""

from __future__ import annotations

from typing import NamedTuple


class ServerSentEvent(NamedTuple):
    """One dispatched event: its name (``message`` unless the stream named it) and data."""

    event: str
    data: str


class SSEDecoder:
    """Turns the bytes of an event stream, in pieces of any size, into events."""

    def __init__(self) -> None:
        self._rest = b""  # an incomplete line
        self._skip_lf = False  # the last piece ended in \r: a \n first in the next is its end
        self._started = False
        self._data: list[str] = []
        self._event = ""

    def feed(self, piece: bytes) -> list[ServerSentEvent]:
        """The events that ``piece`` completes, in order."""
        if self._skip_lf and piece.startswith(b"\n"):
            piece = piece[1:]
        self._skip_lf = False
        if not self._started and (self._rest or piece):
            if len(self._rest + piece) < 3 and b"\xef\xbb\xbf".startswith(self._rest + piece):
                self._rest += piece  # maybe the start of a byte-order mark: wait for more
                return []
            self._started = True
            piece, self._rest = (self._rest + piece).removeprefix(b"\xef\xbb\xbf"), b""
        lines = (self._rest + piece).splitlines(keepends=True)  # \r\n, \n and \r
        self._rest = b""
        if lines and not lines[-1].endswith((b"\n", b"\r")):
            self._rest = lines.pop()
        elif lines and lines[-1].endswith(b"\r"):
            self._skip_lf = True
        out: list[ServerSentEvent] = []
        for raw in lines:
            line = raw.rstrip(b"\r\n")
            if not line:
                if self._data:
                    out.append(ServerSentEvent(self._event or "message", "\n".join(self._data)))
                self._data, self._event = [], ""
                continue
            if line.startswith(b":"):
                continue
            field, _, value = line.partition(b":")
            if value.startswith(b" "):
                value = value[1:]
            if field == b"data":
                self._data.append(value.decode("utf-8", "replace"))
            elif field == b"event":
                self._event = value.decode("utf-8", "replace")
        return out
