"""The route of full-text search over the workspace's sessions."""

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
