"""A local Yjs document store in SQLite: an update log per document, snapshots, replay.

The standalone counterpart of the collaboration rooms' ystore (and of Project Think's
YjsStorage). Every attributed change of a document is one row of the update log, and the row
number is the document's version:

    store = YStore("project/.think/ydocs.db")
    v = store.append("a.py", update, origin="Think:act_1", action_id="act_1", summary="edit")
    state = store.state("a.py")        # the latest state, as one Yjs update
    old = store.state("a.py", v - 1)   # the state just before that edit (replay)
    doc = Doc(); doc.apply_update(old)

Past ``snapshot_bytes`` of updates (or ``snapshot_every`` updates) since the last snapshot, the
log is compacted into a snapshot (``pycrdt.merge_updates``), so loading reads one snapshot and a
short tail, whatever the length of the history. The updates themselves are kept: replaying to
any version is exact (snapshot at or before it, then the updates up to it). Thread-safe: calls
are serialised by a lock, so the event loop may hand them to an executor.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from .history import Version

# Ordered, named migrations, recorded in the ``migrations`` table.
_MIGRATIONS: list[tuple[str, str]] = [
    (
        "001_update_log",
        """
        CREATE TABLE updates (
            path TEXT NOT NULL,
            version INTEGER NOT NULL,
            ts REAL NOT NULL,
            origin TEXT NOT NULL,
            action_id TEXT NOT NULL,
            summary TEXT NOT NULL,
            data BLOB NOT NULL,
            PRIMARY KEY (path, version)
        );
        CREATE TABLE snapshots (
            path TEXT NOT NULL,
            version INTEGER NOT NULL,
            data BLOB NOT NULL,
            PRIMARY KEY (path, version)
        );
        """,
    ),
]


class YStore:
    """Update log, snapshots and replay of many documents in one SQLite file (WAL)."""

    def __init__(
        self,
        db_path: str | Path,
        snapshot_bytes: int = 64 * 1024,
        snapshot_every: int = 256,
    ) -> None:
        self.db_path = Path(db_path)
        self.db_path.parent.mkdir(parents=True, exist_ok=True)
        self.snapshot_bytes = snapshot_bytes
        self.snapshot_every = snapshot_every
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.db_path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA busy_timeout=5000")
        self._migrate()

    def _migrate(self) -> None:
        with self._lock:
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied REAL)"
            )
            done = {r[0] for r in self._db.execute("SELECT name FROM migrations")}
            for name, sql in _MIGRATIONS:
                if name in done:
                    continue
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    for stmt in sql.split(";"):
                        if stmt.strip():
                            self._db.execute(stmt)
                    self._db.execute("INSERT INTO migrations VALUES (?, ?)", (name, time.time()))
                    self._db.execute("COMMIT")
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise

    def close(self) -> None:
        """Fold the WAL into the database file and close it."""
        with self._lock:
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._db.close()

    # ------------------------------------------------------------------ writing

    def append(
        self, path: str, update: bytes, *, origin: str, action_id: str = "", summary: str = ""
    ) -> int:
        """Append one update to the log of ``path`` and return its version (0 for the first)."""
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                last = db.execute(
                    "SELECT MAX(version) FROM updates WHERE path=?", (path,)
                ).fetchone()[0]
                version = 0 if last is None else last + 1
                db.execute(
                    "INSERT INTO updates VALUES (?,?,?,?,?,?,?)",
                    (path, version, time.time(), origin, action_id, summary, update),
                )
                self._maybe_snapshot(path, version)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        return version

    def _maybe_snapshot(self, path: str, version: int) -> None:
        snap = self._db.execute(
            "SELECT MAX(version) FROM snapshots WHERE path=?", (path,)
        ).fetchone()[0]
        since = -1 if snap is None else snap
        count, size = self._db.execute(
            "SELECT COUNT(*), COALESCE(SUM(LENGTH(data)), 0) FROM updates "
            "WHERE path=? AND version>? AND version<=?",
            (path, since, version),
        ).fetchone()
        if size >= self.snapshot_bytes or count >= self.snapshot_every:
            state = self._state_locked(path, version)
            self._db.execute("INSERT INTO snapshots VALUES (?,?,?)", (path, version, state))

    # ------------------------------------------------------------------ reading

    def _state_locked(self, path: str, version: int) -> bytes:
        from pycrdt import merge_updates  # here: a store opens long before it merges

        row = self._db.execute(
            "SELECT version, data FROM snapshots WHERE path=? AND version<=? "
            "ORDER BY version DESC LIMIT 1",
            (path, version),
        ).fetchone()
        since, parts = (-1, []) if row is None else (row[0], [row[1]])
        parts += [
            r[0]
            for r in self._db.execute(
                "SELECT data FROM updates WHERE path=? AND version>? AND version<=? "
                "ORDER BY version",
                (path, since, version),
            )
        ]
        if not parts:
            raise KeyError(f"{path!r} has no version {version}")
        return parts[0] if len(parts) == 1 else merge_updates(*parts)

    def state(self, path: str, version: int | None = None) -> bytes:
        """The document at ``version`` (default: the latest) as one Yjs update; KeyError if none."""
        with self._lock:
            last = self._last_locked(path)
            if last is None:
                raise KeyError(f"{path!r} has no versions")
            if version is None:
                version = last
            if not 0 <= version <= last:
                raise KeyError(f"{path!r} has no version {version} (versions 0 to {last})")
            return self._state_locked(path, version)

    def _last_locked(self, path: str) -> int | None:
        row = self._db.execute("SELECT MAX(version) FROM updates WHERE path=?", (path,))
        last = row.fetchone()[0]
        return None if last is None else int(last)

    def last_version(self, path: str) -> int | None:
        """The latest version of ``path``, or None if it has no log."""
        with self._lock:
            return self._last_locked(path)

    def updates_since(self, path: str, version: int) -> list[tuple[int, bytes]]:
        """Updates after ``version`` (written by another process sharing the file), in order."""
        with self._lock:
            rows = self._db.execute(
                "SELECT version, data FROM updates WHERE path=? AND version>? ORDER BY version",
                (path, version),
            ).fetchall()
        return [(int(v), bytes(d)) for v, d in rows]

    def versions(self, path: str) -> list[Version]:
        """All versions of a path, oldest first (``size`` is the update's size in bytes)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT path, version, ts, origin, action_id, summary, LENGTH(data) "
                "FROM updates WHERE path=? ORDER BY version",
                (path,),
            ).fetchall()
        return [Version(*r) for r in rows]

    def stats(self, path: str | None = None) -> dict[str, Any]:
        """Counts and byte sizes of the log and the snapshots (of one path, or all)."""
        where, args = ("WHERE path=?", (path,)) if path is not None else ("", ())
        with self._lock:
            n, size = self._db.execute(
                f"SELECT COUNT(*), COALESCE(SUM(LENGTH(data)), 0) FROM updates {where}", args
            ).fetchone()
            sn, ssize = self._db.execute(
                f"SELECT COUNT(*), COALESCE(SUM(LENGTH(data)), 0) FROM snapshots {where}", args
            ).fetchone()
        return {"updates": n, "update_bytes": size, "snapshots": sn, "snapshot_bytes": ssize}
