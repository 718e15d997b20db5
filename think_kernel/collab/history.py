"""Versions of the documents the agent edits: one row per agent edit, attributable.

    log = VersionLog("/srv/root/.think/history.db")
    v = log.record("a.py", "print(1)\\n", origin="Think:act_1", action_id="act_1", summary="edit")
    [row.version for row in log.versions("a.py")]   # [1]
    log.content("a.py", v)                          # "print(1)\\n"

A version is the whole document right after an agent edit (text, or notebook JSON), stored
zlib-compressed. Before the first agent edit of a path its prior state is kept as version 0
(``origin="initial"``), so the agent's very first change can be reverted too. Used by the server
(rooms hold the live document; this only remembers states). The standalone store
(:mod:`think_kernel.collab.ystore`) keeps the Yjs update log itself instead.
"""

from __future__ import annotations

import sqlite3
import threading
import time
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

_SCHEMA = """
CREATE TABLE IF NOT EXISTS versions (
    path TEXT NOT NULL,
    version INTEGER NOT NULL,
    ts REAL NOT NULL,
    origin TEXT NOT NULL,
    action_id TEXT NOT NULL,
    summary TEXT NOT NULL,
    size INTEGER NOT NULL,
    content BLOB NOT NULL,
    PRIMARY KEY (path, version)
);
"""


@dataclass(frozen=True)
class Version:
    """One recorded state of a document."""

    path: str
    version: int
    ts: float
    origin: str
    action_id: str
    summary: str
    size: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (for RPC and tools)."""
        return asdict(self)


class VersionLog:
    """Append-only document versions in one SQLite file (WAL)."""

    def __init__(self, db_path: str | Path) -> None:
        self.db_path = Path(db_path)
        self.db_path.parent.mkdir(parents=True, exist_ok=True)
        # Writes are small and serialised by this lock; check_same_thread=False lets the
        # server's executor and the event loop thread share the connection.
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.db_path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        """Close the database."""
        self._db.close()

    def has(self, path: str) -> bool:
        """Whether any version of ``path`` is recorded."""
        with self._lock:
            row = self._db.execute("SELECT 1 FROM versions WHERE path=? LIMIT 1", (path,))
            return row.fetchone() is not None

    def record(
        self, path: str, content: str, *, origin: str, action_id: str = "", summary: str = ""
    ) -> int:
        """Append a version and return its number."""
        data = content.encode("utf-8")
        with self._lock:
            cur = self._db.execute("SELECT MAX(version) FROM versions WHERE path=?", (path,))
            last = cur.fetchone()[0]
            version = 0 if last is None else last + 1
            self._db.execute(
                "INSERT INTO versions VALUES (?,?,?,?,?,?,?,?)",
                (
                    path,
                    version,
                    time.time(),
                    origin,
                    action_id,
                    summary,
                    len(data),
                    zlib.compress(data, 1),
                ),
            )
        return version

    def versions(self, path: str) -> list[Version]:
        """All versions of a path, oldest first."""
        with self._lock:
            rows = self._db.execute(
                "SELECT path, version, ts, origin, action_id, summary, size FROM versions "
                "WHERE path=? ORDER BY version",
                (path,),
            ).fetchall()
        return [Version(*r) for r in rows]

    def content(self, path: str, version: int) -> str:
        """The document as it was at ``version``; KeyError if there is no such version."""
        with self._lock:
            row = self._db.execute(
                "SELECT content FROM versions WHERE path=? AND version=?", (path, version)
            ).fetchone()
        if row is None:
            raise KeyError(f"{path!r} has no version {version}")
        return zlib.decompress(row[0]).decode("utf-8")
