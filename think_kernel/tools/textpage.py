"""Text files read in pages, in bounded memory, without hiding what did not fit.

    with open("big.log", "rb") as f:
        page = read_page(f, offset=1, limit=2000)
    page.lines, page.next_offset      # None when the file ends on this page

A file is streamed in 1 MiB chunks: lines before ``offset`` are counted, not kept; a page holds
at most ``limit`` lines and ``max_bytes`` bytes; a line longer than ``max_line`` is cut (the page
says so). So a 500 MB file, or one line of 500 MB, costs a few MiB. Bytes that are not UTF-8 are
shown as U+FFFD and the page says so (``lossy``): such a file is never edited through the text
tools (see :func:`check_utf8`).
"""

from __future__ import annotations

import codecs
import io
import os
from dataclasses import dataclass
from typing import IO

CHUNK = 1 << 20
MAX_PAGE_BYTES = 256 * 1024
MAX_LINE = 4000
COUNT_ALL_BELOW = 8 * 1024 * 1024  # files this small get an exact total line count


class NotUtf8(ValueError):
    """The bytes are not valid UTF-8; ``offset`` is the first bad byte."""

    def __init__(self, offset: int, sample: bytes) -> None:
        super().__init__(f"not valid UTF-8 at byte {offset}")
        self.offset = offset
        self.sample = sample


@dataclass(frozen=True)
class TextPage:
    """Lines ``offset`` .. ``offset + len(lines) - 1`` of a file."""

    lines: list[str]
    offset: int
    next_offset: int | None  # first line not shown, None at the end of the file
    total_lines: int | None  # known when the file is small or was read to the end
    size: int  # bytes
    lossy: bool = False  # some bytes were not UTF-8 and are shown as U+FFFD
    cut_lines: int = 0  # lines longer than MAX_LINE characters, shown cut
    binary: bool = False  # NUL bytes in the first chunk


def _decode(data: bytes) -> tuple[str, bool]:
    try:
        return data.decode("utf-8"), False
    except UnicodeDecodeError:
        return data.decode("utf-8", "replace"), True


def _skip_line(f: IO[bytes]) -> bool:
    """Consume one line (any length); False at the end of the file."""
    data = f.readline(CHUNK)
    if not data:
        return False
    while not data.endswith(b"\n"):
        data = f.readline(CHUNK)
        if not data:
            break
    return True


def _take_line(f: IO[bytes], cap: int) -> tuple[bytes, bool] | None:
    """One line without its newline, at most ``cap`` bytes (and whether it was cut)."""
    data = f.readline(cap)
    if not data:
        return None
    if data.endswith(b"\n"):
        return data[:-1], False
    cut = False
    while True:  # the rest of an over-long line is skipped, in bounded reads
        rest = f.readline(CHUNK)
        if not rest:
            break
        cut = cut or rest != b"\n"
        if rest.endswith(b"\n"):
            break
    return data, cut


def _utf8_length(lead: int) -> int:
    """Bytes in the UTF-8 character that starts with byte ``lead``."""
    if lead >> 5 == 0b110:
        return 2
    if lead >> 4 == 0b1110:
        return 3
    if lead >> 3 == 0b11110:
        return 4
    return 1


def _split_tail(data: bytes) -> int:
    """How many bytes at the end start a UTF-8 character that the cut split."""
    for back in range(1, min(4, len(data)) + 1):
        b = data[-back]
        if b & 0xC0 != 0x80:  # a lead byte (or ASCII)
            return back if _utf8_length(b) > back else 0
    return 0


def _count_lines(f: IO[bytes]) -> int:
    n, last = 0, b"\n"
    while chunk := f.read(CHUNK):
        n += chunk.count(b"\n")
        last = chunk[-1:]
    return n + (last != b"\n")


def read_page(
    f: IO[bytes],
    offset: int = 1,
    limit: int = 2000,
    *,
    max_bytes: int = MAX_PAGE_BYTES,
    max_line: int = MAX_LINE,
    size: int | None = None,
) -> TextPage:
    """Read one page of lines from a seekable binary file positioned at its start."""
    if size is None:
        size = os.fstat(f.fileno()).st_size
    binary = b"\x00" in f.read(8192)
    f.seek(0)
    consumed = 0  # lines read through (skipped or shown)
    while consumed < offset - 1 and _skip_line(f):
        consumed += 1
    lines: list[str] = []
    lossy, cut, page_bytes = False, 0, 0
    while len(lines) < limit and page_bytes < max_bytes:
        got = _take_line(f, max_line * 4)
        if got is None:
            break
        data, was_cut = got
        if was_cut or len(data) == max_line * 4:
            data = data[: len(data) - _split_tail(data)]
        text, bad = _decode(data.removesuffix(b"\r"))
        if len(text) > max_line:
            text, was_cut = text[:max_line], True
        lossy |= bad
        cut += was_cut
        lines.append(text + (" [line cut]" if was_cut else ""))
        page_bytes += len(data) + 1
        consumed += 1
    more = f.tell() < size
    total: int | None = consumed
    if more:
        total = consumed + _count_lines(f) if size <= COUNT_ALL_BELOW else None
    return TextPage(lines, offset, offset + len(lines) if more else None, total, size, lossy,
                    cut, binary)  # fmt: skip


def page_of_text(text: str, offset: int = 1, limit: int = 2000, **kw: int) -> TextPage:
    """The same page of a text already in memory (a document of a room)."""
    data = text.encode("utf-8", "surrogatepass")
    return read_page(io.BytesIO(data), offset, limit, size=len(data), **kw)


def check_utf8(f: IO[bytes]) -> None:
    """Raise :class:`NotUtf8` unless the whole stream is valid UTF-8 (bounded memory)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    pos = 0
    while True:
        chunk = f.read(CHUNK)
        held = len(decoder.getstate()[0])  # bytes of a character split across chunks
        try:
            decoder.decode(chunk, final=not chunk)
        except UnicodeDecodeError as e:
            at = pos - held + e.start
            raise NotUtf8(at, e.object[max(e.start - 8, 0) : e.start + 8]) from None
        if not chunk:
            return
        pos += len(chunk)


def utf8_help(path: str, err: NotUtf8) -> str:
    """What to tell the model about a file that is not UTF-8."""
    return (
        f"{path} is not UTF-8 text (byte {err.offset} is not valid UTF-8, e.g. a Latin-1 or "
        "binary file). The text tools would change bytes you cannot see, so they do not edit "
        "it: change it with execute_code or bash (say which encoding), or delete_file it first "
        "if you mean to replace it entirely."
    )
