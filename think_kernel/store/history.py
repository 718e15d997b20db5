"""A session's stored history kept in memory, read again only where it changed.

    history = HistoryCache(db)
    rows = await history.rows(session_id, facet=None)   # every status, oldest first, copies

Every request of a run starts from the whole conversation. Read from SQLite and decoded row by
row, a long conversation took long, so each ``%%think`` and each chat message got slower as the
session grew. Here each process (a kernel, the server) keeps the rows of its recent
conversations and asks SQLite only for those whose revision is newer than the newest it holds.

Revisions (migration ``m012_message_revs``) come from triggers: every insert or update of a
message takes the next value of one clock in the same transaction, so they follow commit order
and cover every writer (the kernel, the server, another kernel, a migration). Hence, in any
snapshot that holds a row of revision ``r``, every change with a smaller revision is present:
asking for ``rev > newest seen`` after a consistent read misses nothing. A delete (``/undo``,
a deleted session) or a switch of branch (rows leave or join the conversation: see
``store/branches.py``) records its revision in ``message_resets``; the value that
comes with each read is compared with the one of the last read, and any change means the
cache reads everything again. The rows and that value come from one statement, hence one
snapshot.
"""

from __future__ import annotations

import copy
import operator
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, NoReturn, TypeVar

T = TypeVar("T")

#: Conversations held per process: a kernel's session and its subagents' (which share the
#: parent's store), or the server's most recently read.
MAX_CONVERSATIONS = 16

_RESET = "(SELECT rev FROM message_resets WHERE session_id = ?)"
_FULL = (
    f"SELECT COALESCE(r.rev, 0) AS _rev, {_RESET} AS _reset, m.* FROM messages m"
    " LEFT JOIN message_revs r ON r.id = m.id"
    " WHERE m.session_id = ? AND m.facet IS ? AND m.off_branch = 0 ORDER BY m.seq"
)
_CHANGED = (
    f"SELECT r.rev AS _rev, {_RESET} AS _reset, m.* FROM message_revs r"
    " JOIN messages m ON m.id = r.id"
    " WHERE r.session_id = ? AND r.rev > ? AND m.facet IS ? AND m.off_branch = 0"
    " ORDER BY m.seq"
)


class Frozen(dict[str, Any]):
    """A dict shared by every reader, so it cannot be changed in place (``{**d, ...}`` or
    ``dict(d)`` make a copy that can). Copies, deep copies and pickles of it are plain
    dicts."""

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError(f"a {type(self).__name__} is shared and read-only: change a copy (dict(x))")

    __setitem__ = __delitem__ = __ior__ = _refuse  # type: ignore[assignment]
    update = pop = popitem = setdefault = clear = _refuse  # type: ignore[assignment]

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return copy.deepcopy(dict(self), memo)

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (dict(self),))


class Row(Frozen):
    """A stored message as the cache hands it out: the same object to every reader."""

    __slots__ = ()


def read_only_until(rows: Sequence[Any], start: int = 0) -> int:
    """The index of the first row from ``start`` on that is not a cache :class:`Row`."""
    return next((i for i in range(start, len(rows)) if type(rows[i]) is not Row), len(rows))


@dataclass
class Start(Generic[T]):
    """The start of a conversation's rows and what was worked out from it."""

    rows: list[dict[str, Any]]
    value: T


class StartMemo(Generic[T]):
    """Per conversation, what a request worked out from the start of its rows, for the next
    request, whose rows begin with the same read-only objects while nothing older changed.

        n, value = memo.get(rows)      # n rows are the remembered start (0, None: none)
        memo.put(rows, n, value)       # remember rows[:n] (cache Rows only) and value
    """

    def __init__(self, size: int = MAX_CONVERSATIONS) -> None:
        self.size = size
        self._held: OrderedDict[tuple[Any, Any], Start[T]] = OrderedDict()

    def get(self, rows: Sequence[dict[str, Any]]) -> tuple[int, T | None]:
        """How many of ``rows`` are the remembered start (checked by identity, at C
        speed), and its value."""
        key = _conversation_of(rows)
        held = self._held.get(key) if key is not None else None
        if held is None or len(rows) < len(held.rows):
            return 0, None
        if not all(map(operator.is_, rows, held.rows)):
            return 0, None
        return len(held.rows), held.value

    def put(self, rows: Sequence[dict[str, Any]], n: int, value: T) -> None:
        """Remember ``rows[:n]`` with ``value`` (nothing for rows not from the cache)."""
        key = _conversation_of(rows)
        if key is None:
            return
        self._held[key] = Start(list(rows[:n]), value)
        self._held.move_to_end(key)
        while len(self._held) > self.size:
            self._held.popitem(last=False)

    def drop(self, rows: Sequence[dict[str, Any]]) -> None:
        """Forget the conversation of ``rows``."""
        self._held.pop(_conversation_of(rows), None)  # type: ignore[arg-type]

    def items(self) -> list[tuple[tuple[Any, Any], Start[T]]]:
        """(conversation, start) pairs, least recently used first."""
        return list(self._held.items())


def _conversation_of(rows: Sequence[dict[str, Any]]) -> tuple[Any, Any] | None:
    """The (session, facet) of a list of rows from the cache, when its first row says."""
    if not rows or type(rows[0]) is not Row:
        return None
    return (rows[0].get("session_id"), rows[0].get("facet"))


@dataclass
class _Conversation:
    rows: list[Row] = field(default_factory=list)  # by seq
    index: dict[str, int] = field(default_factory=dict)  # message id -> position in rows
    rev: int = 0  # newest revision held
    reset: int | None = None  # message_resets' value at the last read
    kept: dict[frozenset[str], list[Row]] = field(default_factory=dict)  # rows by statuses


class HistoryCache:
    """The rows of recent conversations, in step with the database (see the module doc)."""

    def __init__(self, db: Any, size: int = MAX_CONVERSATIONS) -> None:
        self.db = db
        self.size = size
        self._held: OrderedDict[tuple[str, str | None], _Conversation] = OrderedDict()
        self.full_reads = 0  # for tests and benchmarks: reads of a whole conversation

    async def rows(
        self,
        session_id: str,
        facet: str | None = None,
        statuses: frozenset[str] | None = None,
    ) -> list[dict[str, Any]]:
        """The messages of the conversation (those with one of ``statuses``, when given),
        oldest first. The list is the caller's; the rows are shared, read-only
        :class:`Row` objects."""
        key = (session_id, facet)
        conv = self._held.get(key)
        if conv is None or not await self._refresh(conv, session_id, facet):
            conv = self._held[key] = await self._read_all(session_id, facet)
            while len(self._held) > self.size:
                self._held.popitem(last=False)
        self._held.move_to_end(key)
        if statuses is None:
            return list(conv.rows)
        kept = conv.kept.get(statuses)
        if kept is None:  # once per change of the conversation, not once per request
            kept = conv.kept[statuses] = [r for r in conv.rows if r["status"] in statuses]
        return list(kept)

    def forget(self, session_id: str) -> None:
        """Drop what is held of a session (its rows were deleted by this process)."""
        for key in [k for k in self._held if k[0] == session_id]:
            del self._held[key]

    async def _read_all(self, session_id: str, facet: str | None) -> _Conversation:
        self.full_reads += 1
        got = await self._select(_FULL, (session_id, session_id, facet))
        conv = _Conversation()
        if got:
            self._merge(conv, got)
        else:
            # Nothing yet. The next read asks for every row of revision > 0, that is every
            # row there is then, so a delete between these two statements loses nothing.
            conv.reset = await self._reset(session_id)
        return conv

    async def _refresh(self, conv: _Conversation, session_id: str, facet: str | None) -> bool:
        """Bring ``conv`` up to date; False if it must be read whole (a delete happened)."""
        changed = await self._select(_CHANGED, (session_id, session_id, conv.rev, facet))
        if not changed:
            return await self._reset(session_id) == conv.reset
        if changed[0]["_reset"] != conv.reset:
            return False
        self._merge(conv, changed)
        return True

    async def _reset(self, session_id: str) -> int | None:
        cur = await self.db.execute(
            "SELECT rev FROM message_resets WHERE session_id = ?", (session_id,)
        )
        row = cur.fetchone()
        return row["rev"] if row else None

    async def _select(self, sql: str, params: tuple[Any, ...]) -> list[dict[str, Any]]:
        cur = await self.db.execute(sql, params)
        return list(cur.fetchall())

    @staticmethod
    def _merge(conv: _Conversation, changed: list[dict[str, Any]]) -> None:
        conv.reset = changed[0]["_reset"]
        start = len(conv.rows)
        in_order = True
        for got in changed:
            conv.rev = max(conv.rev, got.pop("_rev"))
            got.pop("_reset")
            row = Row(got)
            i = conv.index.get(row["id"])
            if i is not None:
                conv.rows[i] = row
                conv.kept.clear()  # an older row changed: filter again at the next read
                continue
            if conv.rows and row["seq"] < conv.rows[-1]["seq"]:
                in_order = False  # another process appended a row while we held later ones
            conv.index[row["id"]] = len(conv.rows)
            conv.rows.append(row)
        if not in_order:
            conv.rows.sort(key=lambda r: r["seq"])
            conv.index = {r["id"]: i for i, r in enumerate(conv.rows)}
            conv.kept.clear()
        # Rows appended after those held (a request's usual change): extend each filter.
        for statuses, kept in conv.kept.items():
            kept.extend(r for r in conv.rows[start:] if r["status"] in statuses)
