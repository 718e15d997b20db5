"""The durable store: one SQLite file in WAL mode, used by the kernel and the server extension.

    store = await Store.open(".think/think.db")
    session = await store.create_session(title="analysis")
    msg = await store.add_message(session["id"], "user", "hello")
    history = await store.get_messages(session["id"])
    await store.close()

"Treat processes as ephemeral, SQLite as durable": every write is committed before the call
returns. Content over ``blob_threshold`` bytes goes to a content-addressed blob folder next to
the database; the row keeps a summary and a preview, and :meth:`Store.message_content` gives the
whole text back. Reasoning is kept truncated to ``reasoning_limit`` bytes with its full size.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import time
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .actions import ActionsMixin
from .branches import BranchesMixin
from .history import HistoryCache
from .ids import new_id
from .loopdb import Cursor, LoopConnection
from .mcpclients import McpClientsMixin
from .migrations import migrate
from .records import RecordsMixin
from .schedules import SchedulesMixin
from .search import SearchMixin
from .sessions import SessionsMixin
from .settings import SettingsMixin
from .tasks import TasksMixin
from .usage import UsageMixin

JSON_COLUMNS = {
    "tool_calls",
    "options",
    "data",
    "dependencies",
    "payload",
    "input",
    "decision",
    "attachments",
    "compaction",
    "outcome",
}
MESSAGE_FIELDS = {
    "content",
    "tool_calls",
    "tool_call_id",
    "name",
    "result_summary",
    "result_preview",
    "reasoning",
    "status",
    "checkpoint",
    "heartbeat_at",
    "tokens_in",
    "tokens_out",
    "model",
    "attempt",
    "parent_id",
    "facet",
    "error",
    "duration_ms",
    "ok",
    "model_role",
    "tokens_cached",
    "tokens_reasoning",
    "cost",
    "output_blob",
    "output_size",
    "attachments",
    "compaction",
}
PREVIEW_CHARS = 2000
BLOB_TEXT_CACHE = 8_000_000  # characters of offloaded message contents kept in memory
_MESSAGE_COLUMNS = (
    "id session_id seq role content content_blob content_size tool_calls tool_call_id name"
    " result_summary result_preview reasoning reasoning_size status checkpoint heartbeat_at"
    " tokens_in tokens_out model attempt parent_id facet error created_at updated_at"
    " duration_ms ok model_role tokens_cached tokens_reasoning cost output_blob output_size"
    " attachments compaction branch_id off_branch"
).split()


def _encode(key: str, value: Any) -> Any:
    if key in JSON_COLUMNS and value is not None and not isinstance(value, str):
        return json.dumps(value)
    return value


def _row(cur: Cursor, row: tuple) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for (name, *_), value in zip(cur.description, row, strict=True):
        if name in JSON_COLUMNS and isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                pass
        elif name == "ok" and value is not None:
            value = bool(value)
        out[name] = value
    return out


async def _switch_to_wal(db: LoopConnection, patience: float = 10.0) -> None:
    """``PRAGMA journal_mode=WAL``, again while another process holds the file: the switch
    needs the file to itself, and SQLite answers "locked" at once (its busy handler is not
    called: waiting could deadlock) when the other connection is migrating it."""
    delay, waited = 0.005, 0.0
    while True:
        try:
            await db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or waited >= patience:
                raise
            await asyncio.sleep(delay)
            waited += delay
            delay = min(delay * 2, 0.2)


class Store(
    SessionsMixin,
    BranchesMixin,
    ActionsMixin,
    RecordsMixin,
    SchedulesMixin,
    UsageMixin,
    SettingsMixin,
    TasksMixin,
    McpClientsMixin,
    SearchMixin,
):
    """Async access to the SQLite store. One connection; SQLite serialises writers."""

    def __init__(
        self,
        db: LoopConnection,
        path: Path,
        blob_threshold: int = 50_000,
        reasoning_limit: int = 3_000,
    ) -> None:
        self.db = db
        self.path = path
        self.blob_dir = path.parent / "blobs"
        self.blob_threshold = blob_threshold
        self.reasoning_limit = reasoning_limit
        self.history = HistoryCache(db)  # whole conversations, read again where they changed
        self._blob_texts: OrderedDict[str, str] = OrderedDict()  # see message_content
        self._blob_chars = 0

    @classmethod
    async def open(cls, path: str | Path, **kwargs: Any) -> Store:
        """Open (creating if needed) the database, switch to WAL and apply migrations."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        # On the loop's thread, not aiosqlite's worker: see loopdb for why.
        db = await LoopConnection.connect(path)
        try:
            # The wait first: a kernel and the server may open a new file at the same moment,
            # and switching it to WAL while the other migrates was refused at once ("locked").
            await db.execute("PRAGMA busy_timeout=5000")
            await _switch_to_wal(db)
            await db.execute("PRAGMA synchronous=NORMAL")
            await db.execute("PRAGMA foreign_keys=ON")
            await migrate(db)
        except BaseException:
            await db.close()
            raise
        db.row_factory = _row  # type: ignore[assignment]
        return cls(db, path, **kwargs)

    async def close(self) -> None:
        """Close the connection."""
        await self.db.close()

    # -- helpers -----------------------------------------------------------------------------

    async def _one(self, sql: str, params: Iterable[Any] = ()) -> dict[str, Any] | None:
        cur = await self.db.execute(sql, tuple(params))
        return cur.fetchone()  # type: ignore[return-value]

    async def _all(self, sql: str, params: Iterable[Any] = ()) -> list[dict[str, Any]]:
        cur = await self.db.execute(sql, tuple(params))
        return list(cur.fetchall())  # type: ignore[arg-type]

    async def _write(
        self, sql: str, params: Iterable[Any] = (), many: bool = False, rowid: bool = False
    ) -> int:
        """Run one write statement; return the rows it changed (or, with ``rowid``, the id of
        the row it inserted).

        The kernel and the server write the same file, and coroutines share a connection: a
        write that starts while another coroutine's SELECT is still open on it upgrades that
        read snapshot, and in WAL mode SQLite refuses the upgrade at once ("database is
        locked", no busy wait) when another process committed since. The statement had no
        effect: outside an explicit transaction it is safe to run it again.
        """
        delay = 0.001
        while True:
            try:
                if many:
                    cur = await self.db.executemany(sql, params)  # type: ignore[arg-type]
                    return int(cur.rowcount)
                cur = await self.db.execute(sql, tuple(params))
                return int(cur.lastrowid or 0) if rowid else int(cur.rowcount)
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) or delay > 2.0 or self.db.in_transaction:
                    raise
                await asyncio.sleep(delay)
                delay *= 2

    async def _update(self, table: str, key: str, allowed: set[str], **fields: Any) -> None:
        bad = set(fields) - allowed
        if bad:
            raise ValueError(f"unknown {table} fields: {sorted(bad)}")
        if not fields:
            return
        fields["updated_at"] = time.time()
        sets = ", ".join(f"{k} = ?" for k in fields)
        params = [_encode(k, v) for k, v in fields.items()]
        await self._write(f"UPDATE {table} SET {sets} WHERE id = ?", (*params, key))

    # -- blobs -------------------------------------------------------------------------------

    def put_blob(self, text: str) -> str:
        """Store text by content hash; return the key."""
        return self.put_blob_bytes(text.encode("utf-8"))

    def put_blob_bytes(self, data: bytes) -> str:
        """Store bytes (an image, a whole tool output) by content hash; return the key."""
        key = hashlib.sha256(data).hexdigest()
        target = self.blob_dir / key[:2] / key
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_suffix(".tmp")
            tmp.write_bytes(data)
            tmp.replace(target)
        return key

    def get_blob(self, key: str) -> str:
        """Return a blob's text; KeyError if unknown."""
        return self.get_blob_bytes(key).decode("utf-8")

    def get_blob_bytes(self, key: str) -> bytes:
        """Return a blob's bytes; KeyError if unknown (or not a blob key)."""
        if not key.isalnum() or not key.isascii():
            raise KeyError(key)
        target = self.blob_dir / key[:2] / key
        if not target.exists():
            raise KeyError(key)
        return target.read_bytes()

    async def save_blob(self, data: bytes) -> str:
        """:meth:`put_blob_bytes` off the event loop (images and outputs can be megabytes)."""
        return await asyncio.to_thread(self.put_blob_bytes, data)

    async def load_blob(self, key: str) -> bytes:
        """:meth:`get_blob_bytes` off the event loop; KeyError if unknown."""
        return await asyncio.to_thread(self.get_blob_bytes, key)

    # -- messages ----------------------------------------------------------------------------

    def _shape_content(self, fields: dict[str, Any]) -> None:
        """Offload big content to a blob and truncate reasoning, in place."""
        content = fields.get("content")
        if isinstance(content, str):
            size = len(content.encode("utf-8"))
            fields["content_size"] = size
            if size > self.blob_threshold:
                fields["content_blob"] = self.put_blob(content)
                fields["content"] = content[:PREVIEW_CHARS]
                fields.setdefault("result_preview", content[:PREVIEW_CHARS])
                fields.setdefault(
                    "result_summary", f"{size} bytes, {content.count(chr(10)) + 1} lines"
                )
            else:
                fields["content_blob"] = None
        reasoning = fields.get("reasoning")
        if isinstance(reasoning, str):
            fields["reasoning_size"] = len(reasoning)
            if len(reasoning) > self.reasoning_limit:
                fields["reasoning"] = reasoning[: self.reasoning_limit]

    async def add_message(
        self, session_id: str, role: str, content: str = "", **fields: Any
    ) -> dict[str, Any]:
        """Append a message at the end of the session (committed before returning)."""
        bad = set(fields) - MESSAGE_FIELDS - {"id"}
        if bad:
            raise ValueError(f"unknown message fields: {sorted(bad)}")
        now = time.time()
        row: dict[str, Any] = {"content": content, **fields}
        row.setdefault("id", new_id("m_"))
        self._shape_content(row)
        row.update(session_id=session_id, role=role, created_at=now, updated_at=now)
        cols = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        # One statement: the next seq is computed inside SQLite, so two processes (kernel and
        # server) appending to the same session cannot take the same number.
        # The message joins the session's current branch (see store/branches.py).
        sql = (
            f"INSERT INTO messages ({cols}, seq, branch_id) SELECT {marks},"
            " COALESCE(MAX(seq), 0) + 1, (SELECT branch_id FROM sessions WHERE id = ?)"
            " FROM messages WHERE session_id = ? RETURNING seq, branch_id"
        )
        params = (*(_encode(k, v) for k, v in row.items()), session_id, session_id)
        delay = 0.001
        while True:
            try:
                cur = await self.db.execute(sql, params)
                got = cur.fetchone()
                seq, branch_id = got["seq"], got["branch_id"]  # type: ignore[index]
                break
            except sqlite3.OperationalError as e:
                # WAL: this statement reads MAX(seq) before it writes; if another process
                # committed in between, SQLite refuses the upgrade at once (no busy wait).
                # The statement had no effect, so trying again is safe.
                if "locked" not in str(e) or delay > 1.0:
                    raise
                await asyncio.sleep(delay)
                delay *= 2
        if role == "user":  # sessions sort by the last request; one round trip less per step
            await self._write("UPDATE sessions SET updated_at = ? WHERE id = ?", (now, session_id))
        full: dict[str, Any] = {c: None for c in _MESSAGE_COLUMNS}
        full.update(content_size=0, reasoning_size=0, status="complete", attempt=0, off_branch=0)
        full.update(row, seq=seq, branch_id=branch_id)
        return full

    async def update_message(self, message_id: str, **fields: Any) -> None:
        """Update a message (content is re-shaped: blobs, reasoning truncation)."""
        self._shape_content(fields)
        allowed = MESSAGE_FIELDS | {"content_blob", "content_size", "reasoning_size"}
        await self._update("messages", message_id, allowed, **fields)

    async def reword_error(self, session_id: str, original: str, said: str) -> None:
        """Give the session's last failed reply (one of its last three messages) the wording
        the person was shown: its history outlives the event."""
        rows, _ = await self.page_messages(session_id, None, 3)
        for row in reversed(rows):
            if row["role"] == "assistant" and row.get("error") == original:
                await self.update_message(row["id"], error=said)
                return

    async def get_message(self, message_id: str) -> dict[str, Any] | None:
        """Return one message, or None."""
        return await self._one("SELECT * FROM messages WHERE id = ?", (message_id,))

    async def message_content(self, message: dict[str, Any]) -> str:
        """The whole content of a message, reading its blob if it was offloaded.

        Each request gives the model the whole history, so offloaded contents are kept in
        memory (up to ``BLOB_TEXT_CACHE`` characters, the most recently used): a blob's key is
        the hash of its bytes, so what is kept never goes stale."""
        key = message.get("content_blob")
        if not key:
            return str(message.get("content") or "")
        text = self._blob_texts.pop(key, None)
        if text is None:
            text = await asyncio.to_thread(self.get_blob, key)
            self._blob_chars += len(text)
        self._blob_texts[key] = text  # the most recently used last
        while self._blob_chars > BLOB_TEXT_CACHE and len(self._blob_texts) > 1:
            _, old = self._blob_texts.popitem(last=False)
            self._blob_chars -= len(old)
        return text

    async def full_output(self, message: dict[str, Any]) -> str:
        """The whole output of a tool message (the model may have seen only a summary)."""
        if message.get("output_blob"):
            return await asyncio.to_thread(self.get_blob, message["output_blob"])
        return await self.message_content(message)

    async def get_messages(
        self,
        session_id: str,
        before: int | None = None,
        limit: int | None = None,
        statuses: Iterable[str] | None = None,
        facet: str | None = None,
    ) -> list[dict[str, Any]]:
        """Messages in order; ``before`` is a seq cursor, ``limit`` takes the newest N.

        Only the main conversation by default; ``facet`` gives the messages of one side
        conversation instead (a subagent's: ``subagent:<task id>``). A whole conversation
        (no ``before``, no ``limit``) comes from the history cache: its rows are shared,
        read-only :class:`~think_kernel.store.history.Row` dicts (copy one to change it).
        """
        if before is None and limit is None:  # a whole conversation: see store/history.py
            kept = None if statuses is None else frozenset(statuses)
            return await self.history.rows(session_id, facet, kept)
        where = ["session_id = ?", "facet IS ?", "off_branch = 0"]
        params: list[Any] = [session_id, facet]
        if before is not None:
            where.append("seq < ?")
            params.append(before)
        if statuses is not None:
            st = list(statuses)
            where.append(f"status IN ({', '.join('?' for _ in st)})")
            params.extend(st)
        sql = f"SELECT * FROM messages WHERE {' AND '.join(where)} ORDER BY seq DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        rows = await self._all(sql, params)
        rows.reverse()
        return rows

    async def truncate(self, session_id: str, message_id: str) -> int:
        """Edit from a message: start a branch that leaves before it (the message and those
        after it stay stored, on the branch left); return how many messages left the
        conversation. KeyError for a message not on this session's current branch."""
        started = await self.start_branch(session_id, message_id)
        return int(started["hidden"])

    async def find_stale_messages(self, older_than: float) -> list[dict[str, Any]]:
        """Streaming or pending messages whose heartbeat is older than ``older_than``."""
        return await self._all(
            "SELECT * FROM messages WHERE status IN ('pending', 'streaming')"
            " AND COALESCE(heartbeat_at, updated_at) < ? ORDER BY session_id, seq",
            (older_than,),
        )
