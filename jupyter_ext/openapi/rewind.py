"""Routes of time travel: checkpoints, rewinds, branches and forks of a session."""

from __future__ import annotations

from typing import Any

from .parts import OBJ, SID, ok_json, op, path_param, ref

_ARRAY = {"type": "array", "items": OBJ}
_FILE = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "existed": {"type": "boolean"},
        "known": {"type": "boolean"},
    },
}
_CHECKPOINT = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "message_id": {"type": "string"},
        "seq": {"type": "integer"},
        "content": {"type": "string"},
        "created_at": {"type": "number"},
        "ended_at": {"type": "number", "nullable": True},
        "files": {"type": "array", "items": _FILE},
    },
}
_BRANCH = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "parent_id": {"type": "string", "nullable": True},
        "fork_id": {"type": "string", "nullable": True},
        "first_id": {"type": "string", "nullable": True},
        "last_id": {"type": "string", "nullable": True},
        "count": {"type": "integer"},
        "current": {"type": "boolean"},
        "created_at": {"type": "number"},
    },
}
_CONFLICT = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "cell": {"type": "string"},
        "lines": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
        "reason": {"type": "string"},
    },
}
_MESSAGE_ID = {
    "type": "object",
    "required": ["message_id"],
    "properties": {"message_id": {"type": "string"}},
}

REWIND_PATHS: dict[str, Any] = {
    "/sessions/{session_id}/checkpoints": {
        "get": op(
            "The checkpoints of the current branch (one per user message), oldest first",
            ok_json(
                {
                    "type": "object",
                    "properties": {"checkpoints": {"type": "array", "items": _CHECKPOINT}},
                }
            ),
            params=[SID],
        ),
    },
    "/sessions/{session_id}/rewind": {
        "post": op(
            "Go back to before a user message: files, conversation or both (stops a run)",
            ok_json(
                {
                    "type": "object",
                    "properties": {
                        "rewind_id": {"type": "string"},
                        "restored": {"type": "array", "items": {"type": "string"}},
                        "deleted": {"type": "array", "items": {"type": "string"}},
                        "conflicts": {"type": "array", "items": _CONFLICT},
                        "branch_id": {"type": "string"},
                        "left_branch_id": {"type": "string"},
                        "content": {"type": "string"},
                    },
                }
            ),
            params=[SID],
            body={
                "type": "object",
                "description": "either message_id (and restore) or undo (a rewind_id)",
                "properties": {
                    "message_id": {"type": "string"},
                    "restore": {"type": "string", "enum": ["files", "conversation", "both"]},
                    "undo": {"type": "string"},
                },
            },
        ),
    },
    "/sessions/{session_id}/branches": {
        "get": op(
            "The branches of the conversation",
            ok_json({"type": "object", "properties": {"branches": _ARRAY | {"items": _BRANCH}}}),
            params=[SID],
        ),
        "post": op(
            "Make another branch current (with files: true, the files go to its state too)",
            ok_json(OBJ),
            params=[SID],
            body={
                "type": "object",
                "required": ["branch_id"],
                "properties": {"branch_id": {"type": "string"}, "files": {"type": "boolean"}},
            },
        ),
    },
    "/sessions/{session_id}/actions/{action_id}/undo": {
        "post": op(
            "Undo the file changes of one action (its tool call) alone, three-way through the"
            " rooms; 404 for an unknown action, 409 for one that changed no file or was undone",
            ok_json(
                {
                    "type": "object",
                    "properties": {
                        "undo_id": {"type": "string"},
                        "restored": {"type": "array", "items": {"type": "string"}},
                        "deleted": {"type": "array", "items": {"type": "string"}},
                        "conflicts": {"type": "array", "items": _CONFLICT},
                    },
                }
            ),
            params=[SID, path_param("action_id")],
        ),
    },
    "/sessions/{session_id}/fork": {
        "post": op(
            "A new session with the branch up to a message",
            ok_json(ref("Session")),
            params=[SID],
            body=_MESSAGE_ID,
            status="201",
        ),
    },
}
