"""The routes of memory across sessions: search over the workspace's sessions, and the
person's memory file."""

from __future__ import annotations

from typing import Any

from .parts import ok_json, op, query

_HIT = {
    "type": "object",
    "properties": {
        "session_id": {"type": "string"},
        "title": {"type": "string"},
        "kind": {"type": "string", "enum": ["chat", "notebook", "magic", "mcp"]},
        "message_id": {"type": "string"},
        "seq": {"type": "integer"},
        "role": {"type": "string"},
        "created_at": {"type": "number", "description": "seconds since the epoch"},
        "snippet": {"type": "string", "description": "plain text around the matches"},
        "spans": {
            "type": "array",
            "description": "[start, end) character offsets of the matches in snippet",
            "items": {"type": "array", "items": {"type": "integer"}, "minItems": 2},
        },
        "facet": {"type": "string", "nullable": True, "description": "subagent:<task id>"},
        "tool": {"type": "string", "nullable": True, "description": "a tool result's tool"},
        "off_branch": {"type": "boolean", "description": "on a branch left by a rewind"},
        "link": {"type": "string", "description": "the history page ending at the message"},
    },
}

SEARCH_PATHS: dict[str, Any] = {
    "/search": {
        "get": op(
            "Full-text search over every message and tool result of this workspace's "
            "sessions (subagents' and compacted ones too), best first. q is FTS5 syntax "
            '(words, "phrases", OR, NOT, prefix*); a q that is not valid syntax is searched '
            "as plain words and notice says so; 400 when q has no word",
            ok_json(
                {
                    "type": "object",
                    "properties": {
                        "query": {"type": "string"},
                        "notice": {"type": "string"},
                        "hits": {"type": "array", "items": _HIT},
                    },
                }
            ),
            params=[
                {"name": "q", "in": "query", "required": True, "schema": {"type": "string"}},
                query("limit", {"type": "integer", "minimum": 1, "maximum": 50, "default": 10}),
            ],
        ),
    },
}

_NOTE = {
    "type": "object",
    "properties": {
        "action_id": {"type": "string"},
        "session_id": {"type": "string"},
        "ts": {"type": "number"},
        "line": {"type": "string"},
        "present": {"type": "boolean", "description": "the memory file still has the line"},
    },
}

MEMORY_PATHS: dict[str, Any] = {
    "/memory": {
        "get": op(
            "The person's memory file (in every prompt) and the notes remember added to it, "
            "newest first",
            ok_json(
                {
                    "type": "object",
                    "properties": {
                        "path": {"type": "string"},
                        "text": {"type": "string"},
                        "notes": {"type": "array", "items": _NOTE},
                    },
                }
            ),
        ),
    },
    "/memory/undo": {
        "post": op(
            "Take out of the memory file the line one remember call added (by action_id or "
            "line; the action log records it). 404 for no such call, 409 when the file no "
            "longer has the line",
            ok_json({"type": "object", "properties": {"removed": {"type": "string"}}}),
            body={
                "type": "object",
                "properties": {
                    "action_id": {"type": "string"},
                    "line": {"type": "string"},
                    "session_id": {"type": "string"},
                },
            },
        ),
    },
}
