"""Ordered, named schema migrations, recorded in the ``_migrations`` table.

Model: simonw/llm's ``migrations.py``. Append new migrations at the end; never edit one that
has shipped. The kernel's standalone store and the server extension share this schema.
"""

from __future__ import annotations

import sqlite3
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .loopdb import LoopConnection

MIGRATIONS: list[tuple[str, str]] = []


def migration(name: str, sql: str) -> None:
    """Register one migration (a SQL script) under a unique name."""
    if any(n == name for n, _ in MIGRATIONS):
        raise ValueError(f"duplicate migration {name}")
    MIGRATIONS.append((name, sql))


migration(
    "m001_initial",
    """
    CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        title TEXT NOT NULL DEFAULT '',
        path TEXT NOT NULL DEFAULT '',
        status TEXT NOT NULL DEFAULT 'idle',
        options TEXT NOT NULL DEFAULT '{}',
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL
    );
    CREATE TABLE messages (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        role TEXT NOT NULL,
        content TEXT NOT NULL DEFAULT '',
        content_blob TEXT,
        content_size INTEGER NOT NULL DEFAULT 0,
        tool_calls TEXT,
        tool_call_id TEXT,
        name TEXT,
        result_summary TEXT,
        result_preview TEXT,
        reasoning TEXT,
        reasoning_size INTEGER NOT NULL DEFAULT 0,
        status TEXT NOT NULL DEFAULT 'complete',
        checkpoint TEXT,
        heartbeat_at REAL,
        tokens_in INTEGER,
        tokens_out INTEGER,
        model TEXT,
        attempt INTEGER NOT NULL DEFAULT 0,
        parent_id TEXT,
        facet TEXT,
        error TEXT,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL
    );
    CREATE UNIQUE INDEX messages_session_seq ON messages(session_id, seq);
    CREATE INDEX messages_status ON messages(status);
    CREATE TABLE action_log (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        ts REAL NOT NULL,
        tool TEXT NOT NULL,
        action TEXT NOT NULL DEFAULT '',
        input_summary TEXT NOT NULL DEFAULT '',
        output_summary TEXT NOT NULL DEFAULT '',
        duration_ms REAL NOT NULL DEFAULT 0,
        success INTEGER NOT NULL,
        error TEXT,
        message_id TEXT
    );
    CREATE INDEX action_log_session_ts ON action_log(session_id, ts);
    CREATE TABLE events (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL,
        type TEXT NOT NULL,
        data TEXT NOT NULL,
        ts REAL NOT NULL
    );
    CREATE INDEX events_session_seq ON events(session_id, seq);
    CREATE TABLE tasks (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        parent_id TEXT,
        title TEXT NOT NULL DEFAULT '',
        type TEXT NOT NULL DEFAULT 'code',
        status TEXT NOT NULL DEFAULT 'pending',
        dependencies TEXT NOT NULL DEFAULT '[]',
        result TEXT,
        message_id TEXT,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL
    );
    CREATE INDEX tasks_session ON tasks(session_id);
    CREATE TABLE schedules (
        id TEXT PRIMARY KEY,
        session_id TEXT,
        kind TEXT NOT NULL,
        due_at REAL NOT NULL,
        payload TEXT NOT NULL DEFAULT '{}',
        status TEXT NOT NULL DEFAULT 'pending',
        attempts INTEGER NOT NULL DEFAULT 0,
        last_error TEXT,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL
    );
    CREATE INDEX schedules_due ON schedules(status, due_at);
    CREATE TABLE approvals (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        message_id TEXT,
        call_id TEXT,
        tool TEXT NOT NULL,
        input TEXT NOT NULL DEFAULT '{}',
        status TEXT NOT NULL DEFAULT 'pending',
        decision TEXT,
        created_at REAL NOT NULL,
        resolved_at REAL
    );
    CREATE INDEX approvals_session ON approvals(session_id, status);
    """,
)


migration(
    "m002_server",
    """
    ALTER TABLE events ADD COLUMN event_id TEXT;
    CREATE UNIQUE INDEX events_event_id ON events(event_id) WHERE event_id IS NOT NULL;
    CREATE INDEX events_ts ON events(ts);
    CREATE INDEX action_log_session_tool ON action_log(session_id, tool, ts);
    CREATE INDEX action_log_message ON action_log(message_id);
    CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        message_id TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'queued',
        attempt INTEGER NOT NULL DEFAULT 0,
        kernel_id TEXT,
        owner TEXT,
        heartbeat_at REAL,
        checkpoint TEXT,
        error TEXT,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL
    );
    CREATE INDEX runs_session ON runs(session_id, created_at);
    CREATE INDEX runs_status ON runs(status);
    """,
)


migration(
    "m003_tool_results",
    """
    ALTER TABLE messages ADD COLUMN duration_ms REAL;
    ALTER TABLE messages ADD COLUMN ok INTEGER;
    """,
)


migration(
    "m004_run_attempts",
    """
    ALTER TABLE runs ADD COLUMN epoch TEXT;
    ALTER TABLE runs ADD COLUMN ended_at REAL;
    CREATE INDEX runs_session_status ON runs(session_id, status, created_at);
    """,
)


# Usage of every model call, the role of each call, whole tool outputs, attachments
# and compaction summaries. Self-contained (no dependency on m004).
migration(
    "m005_usage",
    """
    CREATE TABLE usage (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL,
        message_id TEXT,
        ts REAL NOT NULL,
        role TEXT NOT NULL,
        model TEXT NOT NULL,
        purpose TEXT NOT NULL DEFAULT 'step',
        tokens_in INTEGER NOT NULL DEFAULT 0,
        tokens_out INTEGER NOT NULL DEFAULT 0,
        tokens_cached INTEGER NOT NULL DEFAULT 0,
        tokens_reasoning INTEGER NOT NULL DEFAULT 0,
        cost REAL,
        estimated INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX usage_session ON usage(session_id, ts);
    ALTER TABLE messages ADD COLUMN model_role TEXT;
    ALTER TABLE messages ADD COLUMN tokens_cached INTEGER;
    ALTER TABLE messages ADD COLUMN tokens_reasoning INTEGER;
    ALTER TABLE messages ADD COLUMN cost REAL;
    ALTER TABLE messages ADD COLUMN output_blob TEXT;
    ALTER TABLE messages ADD COLUMN output_size INTEGER;
    ALTER TABLE messages ADD COLUMN attachments TEXT;
    ALTER TABLE messages ADD COLUMN compaction TEXT;
    """,
)


# What a person sees before deciding (summary, diff), when an unanswered approval
# counts as rejected, and which process ran the approved call (so it runs at most once).
migration(
    "m006_approvals",
    """
    ALTER TABLE approvals ADD COLUMN summary TEXT;
    ALTER TABLE approvals ADD COLUMN diff TEXT;
    ALTER TABLE approvals ADD COLUMN expires_at REAL;
    ALTER TABLE approvals ADD COLUMN executed_at REAL;
    CREATE UNIQUE INDEX approvals_call ON approvals(session_id, call_id);
    """,
)


# The model endpoint saved from the sidebar's setup card (server-side, outside the
# workspace: the key never reaches the browser or sandboxed code), and each session's kind
# (chat, notebook, magic) so the sidebar can group them. Sessions from before: those a
# kernel made carry the workspace's absolute path, the sidebar's do not.
migration(
    "m008_settings",
    """
    CREATE TABLE settings (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL,
        updated_at REAL NOT NULL
    );
    ALTER TABLE sessions ADD COLUMN kind TEXT NOT NULL DEFAULT 'chat';
    UPDATE sessions SET kind = 'notebook' WHERE path LIKE '/%';
    """,
)


# The task graph (each request's root and the model's subtasks), the subagent that
# works on a task (its own row fields: status, model, owning process, heartbeat, deadline),
# and the task a subagent's tool call and approval belong to.
migration(
    "m009_tasks",
    """
    ALTER TABLE tasks ADD COLUMN root_id TEXT;
    ALTER TABLE tasks ADD COLUMN description TEXT NOT NULL DEFAULT '';
    ALTER TABLE tasks ADD COLUMN error TEXT;
    ALTER TABLE tasks ADD COLUMN subagent_status TEXT;
    ALTER TABLE tasks ADD COLUMN subagent_model TEXT;
    ALTER TABLE tasks ADD COLUMN subagent_owner TEXT;
    ALTER TABLE tasks ADD COLUMN subagent_started_at REAL;
    ALTER TABLE tasks ADD COLUMN subagent_ended_at REAL;
    ALTER TABLE tasks ADD COLUMN subagent_heartbeat_at REAL;
    ALTER TABLE tasks ADD COLUMN subagent_deadline REAL;
    CREATE INDEX tasks_root ON tasks(root_id);
    CREATE INDEX tasks_message ON tasks(message_id);
    CREATE INDEX tasks_subagent ON tasks(subagent_status);
    ALTER TABLE action_log ADD COLUMN task_id TEXT;
    ALTER TABLE approvals ADD COLUMN task_id TEXT;
    CREATE INDEX messages_facet ON messages(session_id, facet, seq);
    """,
)


# One scheduler for every kind of deferred work, at least once. A claim holds a
# lease (renewed while the handler runs) and names its owner and pid, so a row left
# ``running`` by a dead process is claimed again; ``occurrence_at`` is the due time of the
# current firing (``due_at`` moves on for a backoff retry) and ``firing_key`` its
# idempotency key; ``cron``/``tz`` make a row recurring. ``firings`` records each firing by
# that key: what it did (``outcome``), whether it was late, and when a think notebook showed it.
migration(
    "m010_schedules",
    """
    ALTER TABLE schedules ADD COLUMN occurrence_at REAL;
    ALTER TABLE schedules ADD COLUMN firing_key TEXT;
    ALTER TABLE schedules ADD COLUMN owner TEXT;
    ALTER TABLE schedules ADD COLUMN owner_pid INTEGER;
    ALTER TABLE schedules ADD COLUMN lease_until REAL;
    ALTER TABLE schedules ADD COLUMN cron TEXT;
    ALTER TABLE schedules ADD COLUMN tz TEXT;
    ALTER TABLE schedules ADD COLUMN fired_count INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE schedules ADD COLUMN last_fired_at REAL;
    CREATE INDEX schedules_session ON schedules(session_id, kind, status);
    CREATE TABLE firings (
        key TEXT PRIMARY KEY,
        schedule_id TEXT NOT NULL,
        session_id TEXT,
        kind TEXT NOT NULL,
        occurrence_at REAL NOT NULL,
        started_at REAL NOT NULL,
        fired_at REAL,
        status TEXT NOT NULL DEFAULT 'running',
        attempts INTEGER NOT NULL DEFAULT 0,
        late INTEGER NOT NULL DEFAULT 0,
        error TEXT,
        outcome TEXT,
        shown_at REAL
    );
    CREATE INDEX firings_schedule ON firings(schedule_id, occurrence_at);
    CREATE INDEX firings_session ON firings(session_id, kind, fired_at);
    CREATE INDEX firings_fired ON firings(fired_at);
    """,
)


# Agents that call Think's tools over MCP (/api/think/mcp) each get a session named
# after them (their clientInfo.name); this maps the name to that session across connections.
migration(
    "m011_mcp",
    """
    CREATE TABLE mcp_clients (
        name TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        first_seen REAL NOT NULL,
        last_seen REAL NOT NULL
    );
    """,
)


# A revision per message, so a process that keeps a session's history in memory
# reads only the rows that changed since it last looked (store/history.py). Triggers keep it:
# every insert and update of a message, by any process and any code path, takes the next
# value of one clock, committed with the change itself, so revisions follow commit order.
# A delete leaves its revision in ``message_resets``: whoever sees it changed reads all again.
migration(
    "m012_message_revs",
    """
    CREATE TABLE message_clock (id INTEGER PRIMARY KEY CHECK (id = 1), rev INTEGER NOT NULL);
    INSERT INTO message_clock VALUES (1, 1);
    CREATE TABLE message_revs (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        rev INTEGER NOT NULL
    );
    INSERT INTO message_revs SELECT id, session_id, 1 FROM messages;
    CREATE INDEX message_revs_session ON message_revs(session_id, rev);
    CREATE TABLE message_resets (session_id TEXT PRIMARY KEY, rev INTEGER NOT NULL);
    CREATE TRIGGER message_rev_insert AFTER INSERT ON messages BEGIN
        UPDATE message_clock SET rev = rev + 1 WHERE id = 1;
        INSERT OR REPLACE INTO message_revs
            VALUES (NEW.id, NEW.session_id, (SELECT rev FROM message_clock WHERE id = 1));
    END;
    CREATE TRIGGER message_rev_update AFTER UPDATE ON messages BEGIN
        UPDATE message_clock SET rev = rev + 1 WHERE id = 1;
        INSERT OR REPLACE INTO message_revs
            VALUES (NEW.id, NEW.session_id, (SELECT rev FROM message_clock WHERE id = 1));
    END;
    CREATE TRIGGER message_rev_delete AFTER DELETE ON messages BEGIN
        UPDATE message_clock SET rev = rev + 1 WHERE id = 1;
        DELETE FROM message_revs WHERE id = OLD.id;
        INSERT OR REPLACE INTO message_resets
            VALUES (OLD.session_id, (SELECT rev FROM message_clock WHERE id = 1));
    END;
    """,
)


def _statements(script: str) -> list[str]:
    """Split a SQL script into complete statements."""
    out, buf = [], ""
    for line in script.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            out.append(buf.strip())
            buf = ""
    if buf.strip():
        out.append(buf.strip())
    return out


# A question the agent asks a person waits exactly as an approval does (same row, same
# durable wait, same first-answer-wins update): ``kind`` tells the two apart.
migration(
    "m013_questions",
    """
    ALTER TABLE approvals ADD COLUMN kind TEXT NOT NULL DEFAULT 'approval';
    CREATE INDEX approvals_kind ON approvals(session_id, kind, status);
    """,
)


# Sessions are trees: "edit a previous message" starts a branch instead of deleting. Each
# message records the branch it was written on; a branch leaves its parent branch after one
# message (``fork_id``/``fork_seq``, none: from the start). The rows of the session's current
# branch (``sessions.branch_id``) have ``off_branch = 0``, so every reader of "the
# conversation" keeps reading one straight line; the others are kept, hidden. Hiding or
# showing a row is recorded as a reset (store/history.py), so a process holding the history
# in memory reads it again.
migration(
    "m014_branches",
    """
    CREATE TABLE branches (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        parent_id TEXT,
        fork_id TEXT,
        fork_seq INTEGER NOT NULL DEFAULT 0,
        created_at REAL NOT NULL
    );
    CREATE INDEX branches_session ON branches(session_id, created_at);
    ALTER TABLE sessions ADD COLUMN branch_id TEXT;
    ALTER TABLE messages ADD COLUMN branch_id TEXT;
    ALTER TABLE messages ADD COLUMN off_branch INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX messages_branch ON messages(session_id, branch_id, seq);
    CREATE TRIGGER message_branch_reset AFTER UPDATE OF off_branch ON messages
    WHEN NEW.off_branch != OLD.off_branch BEGIN
        UPDATE message_clock SET rev = rev + 1 WHERE id = 1;
        INSERT OR REPLACE INTO message_resets
            VALUES (NEW.session_id, (SELECT rev FROM message_clock WHERE id = 1));
    END;
    """,
)


# A checkpoint per user message: where the conversation was, and each change the turn
# then made to a file, as a step from one state to the next (``pre``/``post``: exists, and
# its content-addressed blob in the store's blob folder, never the workspace; ``known = 0``:
# sandboxed code changed a file whose prior content nobody had recorded). A rewind undoes
# the steps one by one, newest first, three-way (think_kernel/checkpoints/).
migration(
    "m015_checkpoints",
    """
    CREATE TABLE checkpoints (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        message_id TEXT NOT NULL,
        branch_id TEXT,
        created_at REAL NOT NULL,
        ended_at REAL
    );
    CREATE INDEX checkpoints_session ON checkpoints(session_id, created_at);
    CREATE UNIQUE INDEX checkpoints_message ON checkpoints(message_id);
    CREATE TABLE checkpoint_steps (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        checkpoint_id TEXT NOT NULL REFERENCES checkpoints(id) ON DELETE CASCADE,
        path TEXT NOT NULL,
        known INTEGER NOT NULL DEFAULT 1,
        pre_exists INTEGER NOT NULL,
        pre_blob TEXT,
        post_exists INTEGER NOT NULL,
        post_blob TEXT,
        size INTEGER NOT NULL DEFAULT 0,
        created_at REAL NOT NULL
    );
    CREATE INDEX checkpoint_steps_checkpoint ON checkpoint_steps(checkpoint_id, id);
    """,
)


# A rewind's plan, stored before it changes anything, so that a crash in the middle is
# finished by the next process (think_kernel/checkpoints/journal.py).
migration(
    "m016_rewinds",
    """
    CREATE TABLE rewinds (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        message_id TEXT NOT NULL,
        restore TEXT NOT NULL,
        plan TEXT NOT NULL DEFAULT '[]',
        status TEXT NOT NULL DEFAULT 'applying',
        created_at REAL NOT NULL,
        ended_at REAL
    );
    CREATE INDEX rewinds_status ON rewinds(status, created_at);
    """,
)


# Full-text search over every message of the workspace's sessions (store/search.py): an FTS5
# table kept by triggers, so every writer (kernel, server, a branch copy, a migration) indexes
# what it stores, in the same transaction. FTS rowids come from ``search_map`` (an INTEGER
# PRIMARY KEY), not from ``messages.rowid``, which VACUUM may renumber. A tool message is found
# by its tool's name, output and summary; an assistant message by its text and the names and
# arguments of its tool calls (stored JSON that is not valid is indexed as it is).
def _search_body(m: str) -> str:
    """The indexed text of message row ``m`` (``NEW`` in a trigger), as an SQL expression."""
    calls = (
        f"CASE WHEN json_valid({m}.tool_calls) THEN (SELECT group_concat("
        "COALESCE(json_extract(value, '$.function.name'), '') || ' ' ||"
        " COALESCE(json_extract(value, '$.function.arguments'), ''), ' ')"
        f" FROM json_each({m}.tool_calls)) ELSE {m}.tool_calls END"
    )
    return (
        f"COALESCE({m}.name, '') || ' ' || COALESCE({m}.content, '') || ' ' ||"
        f" COALESCE({m}.result_summary, '') || ' ' || COALESCE({calls}, '')"
    )


migration(
    "m017_search",
    f"""
    CREATE TABLE search_map (rid INTEGER PRIMARY KEY, message_id TEXT NOT NULL UNIQUE);
    CREATE VIRTUAL TABLE search_fts USING fts5(body, tokenize = 'unicode61 remove_diacritics 2');
    INSERT INTO search_map (message_id) SELECT id FROM messages ORDER BY created_at, seq;
    INSERT INTO search_fts (rowid, body) SELECT s.rid, {_search_body("m")}
        FROM search_map s JOIN messages m ON m.id = s.message_id;
    CREATE TRIGGER search_insert AFTER INSERT ON messages BEGIN
        INSERT INTO search_map (message_id) VALUES (NEW.id);
        INSERT INTO search_fts (rowid, body) VALUES (
            (SELECT rid FROM search_map WHERE message_id = NEW.id), {_search_body("NEW")});
    END;
    CREATE TRIGGER search_update AFTER UPDATE OF name, content, result_summary, tool_calls
    ON messages BEGIN
        UPDATE search_fts SET body = {_search_body("NEW")}
        WHERE rowid = (SELECT rid FROM search_map WHERE message_id = NEW.id);
    END;
    CREATE TRIGGER search_delete AFTER DELETE ON messages BEGIN
        DELETE FROM search_fts WHERE rowid = (SELECT rid FROM search_map WHERE message_id = OLD.id);
        DELETE FROM search_map WHERE message_id = OLD.id;
    END;
    """,
)

# Undo of one action (think_kernel/checkpoints/undo.py): each step names the tool call that
# made it (the model's message and call id), as does the call's action-log row; an undone
# row names the undo that reverted it.
migration(
    "m018_action_undo",
    """
    ALTER TABLE checkpoint_steps ADD COLUMN call_message TEXT;
    ALTER TABLE checkpoint_steps ADD COLUMN call_id TEXT;
    CREATE INDEX checkpoint_steps_call ON checkpoint_steps(call_id);
    ALTER TABLE action_log ADD COLUMN call_id TEXT;
    ALTER TABLE action_log ADD COLUMN undone_by TEXT;
    """,
)


# Review mode (think_kernel/proposals/): a session's proposed changes, one row per file, with
# the version the agent based it on (NULL: the file was created) and the proposed content
# (NULL: deleted); and the decisions on them the model has not been told yet.
migration(
    "m019_proposals",
    """
    CREATE TABLE proposals (
        session_id TEXT NOT NULL,
        path TEXT NOT NULL,
        kind TEXT NOT NULL,
        base BLOB,
        proposed BLOB,
        updated_at REAL NOT NULL,
        PRIMARY KEY (session_id, path)
    );
    CREATE TABLE proposal_notes (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL,
        text TEXT NOT NULL,
        created_at REAL NOT NULL,
        told_at REAL
    );
    CREATE INDEX proposal_notes_session ON proposal_notes(session_id, told_at);
    """,
)


async def migrate(db: LoopConnection) -> list[str]:
    """Apply every migration not yet recorded; return the names applied.

    The kernel and the server may open the same file at the same moment, so each migration
    runs in a ``BEGIN IMMEDIATE`` transaction that re-checks ``_migrations`` first.
    """
    await db.execute(
        "CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at REAL)"
    )
    applied = []
    for name, sql in MIGRATIONS:
        cur = await db.execute("SELECT 1 FROM _migrations WHERE name = ?", (name,))
        if cur.fetchone():
            continue
        await db.execute("BEGIN IMMEDIATE")
        try:
            cur = await db.execute("SELECT 1 FROM _migrations WHERE name = ?", (name,))
            done = cur.fetchone()
            if not done:
                # Statement by statement: executescript would commit our transaction.
                for statement in _statements(sql):
                    await db.execute(statement)
                await db.execute("INSERT INTO _migrations VALUES (?, ?)", (name, time.time()))
                applied.append(name)
            await db.execute("COMMIT")
        except BaseException:
            await db.execute("ROLLBACK")
            raise
    return applied
