"""An SQLite connection used on the event loop's own thread.

    db = await LoopConnection.connect("think.db")
    row = (await db.execute("SELECT * FROM sessions WHERE id = ?", (sid,))).fetchone()
    await db.execute("UPDATE sessions SET title = ? WHERE id = ?", ("t", sid))
    await db.executemany("INSERT INTO t VALUES (?)", [(1,), (2,)])
    await db.close()

Why not a thread (aiosqlite): the store's statements are small (an indexed row, an append;
cheap in WAL mode, where readers never wait and a commit does not sync), but a
hop to a worker thread and back costs more than such a statement, and much more
when the GIL is contended (a kernel has four threads), and a run makes twenty or more of them
before its first model request, and one per batch of streamed events.

What a thread was for, waiting on another process's write lock, is done without blocking the
loop: the connection has no busy timeout (``PRAGMA busy_timeout=N`` sets how long we wait
instead), and a statement SQLite refuses as busy or locked
(which then had no effect) is tried again after an ``asyncio.sleep``, with backoff, for up to
``busy_timeout`` seconds, as SQLite's own busy handler would. The WAL is checkpointed by a
worker thread on a connection of its own once it passes 4 MiB (a checkpoint syncs the file,
which may take a while), never on the loop: automatic checkpoints are off on this connection.
Writers wait only for the end of a checkpoint, not for its copy (see ``_checkpoint``).
"""

from __future__ import annotations

import asyncio
import os
import re
import sqlite3
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
_BUSY = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
_BUSY_PRAGMA = re.compile(r"\s*PRAGMA\s+busy_timeout\s*=\s*(\d+)\s*$", re.IGNORECASE)
#: WAL size (bytes) past which it is checkpointed (SQLite's automatic one: 1000 pages).
CHECKPOINT_BYTES = 4 * 2**20
_CHECK_EVERY = 16  # writes between looks at the WAL's size
_FEW_FRAMES = 64  # WAL frames a checkpoint's last step (writers held back) may copy


class Cursor:
    """The result of one statement (rows are fetched already; nothing here blocks)."""

    def __init__(self, cur: sqlite3.Cursor, rows: list[Any] | None) -> None:
        self._cur = cur
        self._rows = rows or []
        self._next = 0
        self.description = cur.description
        self.rowcount = cur.rowcount
        self.lastrowid = cur.lastrowid

    def fetchone(self) -> Any:
        """The next row, or None."""
        if self._next >= len(self._rows):
            return None
        self._next += 1
        return self._rows[self._next - 1]

    def fetchall(self) -> list[Any]:
        """The remaining rows."""
        rows, self._next = self._rows[self._next :], len(self._rows)
        return rows


class LoopConnection:
    """The SQLite connection of the store: statements run on the loop, busy waits sleep."""

    def __init__(self, conn: sqlite3.Connection, path: Path, busy_timeout: float = 5.0) -> None:
        self._conn = conn
        self.path = path
        self.busy_timeout = busy_timeout
        self._closed = False
        self._writes = 0
        self._checkpoint: asyncio.Future[None] | None = None

    @classmethod
    async def connect(cls, path: str | Path, busy_timeout: float = 5.0) -> LoopConnection:
        """Open the database (autocommit: every statement outside BEGIN commits at once)."""
        conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False, timeout=0)
        db = cls(conn, Path(path), busy_timeout)
        try:
            await db.execute("PRAGMA wal_autocheckpoint=0")
            # When a write starts the WAL over (after a checkpoint), the file is cut back to
            # this size: the size check below then sees it grow again only with new frames.
            await db.execute(f"PRAGMA journal_size_limit={CHECKPOINT_BYTES}")
        except BaseException:
            conn.close()
            raise
        return db

    @property
    def row_factory(self) -> Any:
        """The sqlite3 row factory: ``factory(cursor, row)``."""
        return self._conn.row_factory

    @row_factory.setter
    def row_factory(self, factory: Any) -> None:
        self._conn.row_factory = factory

    async def execute(self, sql: str, parameters: Sequence[Any] | dict[str, Any] = ()) -> Cursor:
        """Run one statement; its rows are fetched (a busy database is waited for)."""
        timeout = _BUSY_PRAGMA.match(sql)
        if timeout:  # SQLite's busy handler would sleep on the loop: we wait instead
            self.busy_timeout = int(timeout.group(1)) / 1000
            sql = "PRAGMA busy_timeout=0"
        return await self._retry(lambda: self._run(lambda c: c.execute(sql, parameters), True))

    async def executemany(self, sql: str, parameters: Iterable[Sequence[Any]]) -> Cursor:
        """Run one statement for each parameter set."""
        rows = list(parameters)
        return await self._retry(lambda: self._run(lambda c: c.executemany(sql, rows), False))

    @property
    def in_transaction(self) -> bool:
        """Whether an explicit transaction (BEGIN ...) is open."""
        return self._conn.in_transaction

    async def close(self) -> None:
        """Wait for a running checkpoint, then close (safe to call twice)."""
        if self._closed:
            return
        self._closed = True
        if self._checkpoint is not None:
            await asyncio.gather(self._checkpoint, return_exceptions=True)
        self._conn.close()

    # -- internals ---------------------------------------------------------------------------

    def _run(self, fn: Callable[[sqlite3.Cursor], Any], fetch: bool) -> Cursor:
        if self._closed:
            raise ValueError("Connection closed")
        before = self._conn.total_changes
        cur = self._conn.cursor()
        try:
            fn(cur)
            rows = cur.fetchall() if fetch and cur.description is not None else None
            result = Cursor(cur, rows)
        finally:
            cur.close()  # a statement left open would hold its read snapshot (and the WAL)
        if self._conn.total_changes != before:
            self._writes += 1
            if self._writes >= _CHECK_EVERY and not self._conn.in_transaction:
                self._writes = 0
                self._maybe_checkpoint()
        return result

    async def _retry(self, attempt: Callable[[], T]) -> T:
        loop = asyncio.get_running_loop()
        start = loop.time()
        deadline = start + self.busy_timeout
        delay = 0.001
        while True:
            try:
                return attempt()
            except sqlite3.OperationalError as e:
                code = getattr(e, "sqlite_errorcode", 0) & 0xFF
                if code not in _BUSY or loop.time() + delay > deadline:
                    raise
            # Another process holds the write lock: the statement did nothing; wait, again.
            # Every millisecond for the first ten (a write holds the lock for a fraction of a
            # millisecond, the end of a checkpoint longer, and doubling from the start would
            # overshoot it), then doubling, up to 50 ms.
            await asyncio.sleep(delay)
            if loop.time() - start >= 0.01:
                delay = min(delay * 2, 0.05)

    def _maybe_checkpoint(self) -> None:
        if self._checkpoint is not None:
            return
        try:
            size = os.stat(f"{self.path}-wal").st_size
        except OSError:
            return
        if size <= CHECKPOINT_BYTES:  # journal_size_limit leaves it at exactly that size
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._checkpoint = loop.run_in_executor(None, _checkpoint, self.path, self.busy_timeout)
        self._checkpoint.add_done_callback(self._checkpoint_done)

    def _checkpoint_done(self, fut: asyncio.Future[None]) -> None:
        self._checkpoint = None
        if not fut.cancelled():
            fut.exception()  # a failed checkpoint is retried after the next writes


_lock = threading.Lock()


def _checkpoint(path: Path, busy_timeout: float) -> None:
    """Copy the WAL into the database, on a connection of its own (runs in a thread)."""
    with _lock:
        conn = sqlite3.connect(str(path), timeout=busy_timeout, isolation_level=None)
        try:
            # PASSIVE copies the WAL (the slow part, with the sync)
            # while writers go on; again while they added much meanwhile. RESTART then copies
            # the rest, holding writers back (ours retry without blocking the loop) so that
            # it completes and the next write starts the WAL over: PASSIVE alone, under a
            # steady stream of writes, may never catch up. RESTART alone, or TRUNCATE
            # (RESTART, then the file cut to nothing), held every writer back
            # for all of it. The file is cut back to CHECKPOINT_BYTES by that next
            # write (journal_size_limit).
            frames = -1
            for _ in range(3):
                row = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                if row is None or row[1] - frames < _FEW_FRAMES:
                    break
                frames = row[1]
            conn.execute("PRAGMA wal_checkpoint(RESTART)")
        finally:
            conn.close()
