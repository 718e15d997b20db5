"""The route of agent types: what a chat or a subagent can run as."""

from __future__ import annotations

from typing import Any

from .parts import OBJ, ok_json, op, query

_NAMES = {"type": "array", "items": {"type": "string"}}
_AGENT = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "description": {"type": "string"},
        "source": {"type": "string", "description": "builtin, workspace, user or package:<dist>"},
        "path": {"type": "string"},
        "tools": {
            "type": "object",
            "properties": {
                "allow": {**_NAMES, "nullable": True, "description": "null: every tool"},
                "deny": _NAMES,
            },
        },
        "model": {
            "type": "string",
            "description": "a role or a model name; '' keeps the session's",
        },
        "approval_policy": {"type": "string", "description": "auto, default, strict or ''"},
        "skills": _NAMES,
        "instructions": {"type": "string"},
    },
}
_REVIEW = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "source": {"type": "string"},
        "path": {"type": "string"},
        "reason": {"type": "string"},
        "sha256": {"type": "string"},
        "text": {"type": "string", "description": "the file a person reviews"},
        "approval": {
            "type": "object",
            "nullable": True,
            "description": "the session's pending approval of this content: {id, status, "
            "summary}; POST /sessions/{id}/approvals/{aid} decides it",
        },
    },
}

AGENT_PATHS: dict[str, Any] = {
    "/agents": {
        "get": op(
            "The agent types a session can run as (built-in, workspace, user, packages), the "
            "files refused with the reason, and the workspace types waiting for a person's "
            "review (with a session: each with its pending approval there, and the session's "
            "current type)",
            ok_json(
                {
                    "type": "object",
                    "properties": {
                        "agents": {"type": "array", "items": _AGENT},
                        "default": {"type": "string"},
                        "current": {"type": "string"},
                        "invalid": {"type": "array", "items": OBJ},
                        "review": {"type": "array", "items": _REVIEW},
                    },
                }
            ),
            params=[query("session", {"type": "string"})],
        ),
    },
}
