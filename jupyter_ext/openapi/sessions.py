"""Routes of one session: messages, usage, attachments, actions, tasks, events, approvals."""

from __future__ import annotations

from typing import Any

from .parts import ERR, OBJ, RUN_STATUS, SID, ok_json, op, path_param, query, ref

_SESSION_BODY = {
    "type": "object",
    "properties": {
        "title": {"type": "string"},
        "path": {"type": "string"},
        "agent": {
            "type": "string",
            "nullable": True,
            "description": "the agent type (GET /agents); 400 when none usable has that name",
        },
        "review": {
            "type": "boolean",
            "nullable": True,
            "description": "review mode: the agent's edits become a proposal (null: the default)",
        },
    },
}

SESSION_PATHS: dict[str, Any] = {
    "/sessions": {
        "get": op(
            "List sessions",
            ok_json(
                {
                    "type": "object",
                    "properties": {"sessions": {"type": "array", "items": ref("Session")}},
                }
            ),  # noqa: E501
            params=[
                query("limit", {"type": "integer", "minimum": 1, "maximum": 500}),
                query("offset", {"type": "integer", "minimum": 0}),
                query("kind", {"type": "string", "enum": ["chat", "notebook", "magic", "mcp"]}),
            ],
        ),
        "post": op("Create a session", ok_json(ref("Session")), body=_SESSION_BODY, status="201"),
    },
    "/sessions/{session_id}": {
        "get": op("Get a session (with its active run)", ok_json(ref("Session")), params=[SID]),
        "patch": op("Rename a session", ok_json(ref("Session")), params=[SID], body=_SESSION_BODY),
        "delete": op(
            "Delete a session, its kernel and its records",
            {"description": "deleted"},
            params=[SID],
            status="204",
        ),
    },
    "/sessions/{session_id}/messages": {
        "get": op(
            "A page of history (oldest first) and the cursor for the page before it",
            ok_json(
                {
                    "type": "object",
                    "properties": {
                        "messages": {"type": "array", "items": ref("Message")},
                        "next_cursor": {"type": "integer", "nullable": True},
                    },
                }
            ),
            params=[
                SID,
                query("before", {"type": "integer", "minimum": 0}),
                query("limit", {"type": "integer", "minimum": 1, "maximum": 500}),
                # A subagent's conversation (the default is the main one, without them).
                query("facet", {"type": "string", "pattern": "^subagent:[A-Za-z0-9_.-]+$"}),
                query("branch", {"type": "string"}),
            ],
        ),
        "post": op(
            "Send a message (stored before the answer) and start a run, or queue it "
            "behind the active run (message status 'queued'); 'interrupt' cancels the "
            "active and queued runs first ('stop and send')",
            ok_json(
                {
                    "type": "object",
                    "properties": {"message": ref("Message"), "run_id": {"type": "string"}},
                }
            ),
            params=[SID],
            body={
                "type": "object",
                "required": ["content"],
                "properties": {
                    "content": {"type": "string"},
                    "context": OBJ,
                    "attachments": {
                        "type": "array",
                        "maxItems": 10,
                        "items": ref("Attachment"),
                    },
                    "interrupt": {"type": "boolean"},
                    "propose_only": {
                        "type": "boolean",
                        "description": "this run's edits go to the session's proposal",
                    },
                    "options": {
                        "type": "object",
                        "properties": {
                            "model": {"type": "string", "maxLength": 500},
                            "base_url": {"type": "string", "maxLength": 500},
                        },
                    },
                },
            },
            status="201",
        ),
    },
    "/sessions/{session_id}/messages/{message_id}/content": {
        "get": op(
            "The whole content of a message (blob included)",
            ok_json(
                {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string"},
                        "content": {"type": "string"},
                        "size": {"type": "integer"},
                    },
                }
            ),
            params=[SID, path_param("message_id")],
        ),
    },
    "/sessions/{session_id}/messages/{message_id}/attachments/{index}": {
        "get": {
            **op(
                "The bytes of a message's attachment (an upload or a tool's screenshot)",
                ok_json(OBJ),
                params=[SID, path_param("message_id"), path_param("index")],
            ),
            "responses": {
                "200": {
                    "description": "the image (its MIME type) or the file's bytes",
                    "content": {
                        "image/png": {"schema": {"type": "string", "format": "binary"}},
                        "application/octet-stream": {
                            "schema": {"type": "string", "format": "binary"}
                        },
                    },
                },
                "403": ERR,
                "404": ERR,
                "410": ERR,
            },
        },
    },
    "/sessions/{session_id}/usage": {
        "get": op(
            "Tokens and estimated cost: total, by role, model and purpose",
            ok_json(
                {
                    "type": "object",
                    "properties": {
                        "total": ref("UsageTotals"),
                        "by_role": {
                            "type": "object",
                            "additionalProperties": ref("UsageTotals"),
                        },
                        "by_model": {
                            "type": "object",
                            "additionalProperties": ref("UsageTotals"),
                        },
                        "by_purpose": {
                            "type": "object",
                            "additionalProperties": ref("UsageTotals"),
                        },
                        "role_models": OBJ,
                        "calls": {"type": "array", "items": OBJ},
                    },
                }
            ),
            params=[SID, query("calls", {"type": "integer", "minimum": 0, "maximum": 5000})],
        ),
    },
    "/sessions/{session_id}/attachments": {
        "post": {
            **op(
                "Upload a file or image (the raw bytes) to attach to a message",
                ok_json(ref("Attachment")),
                params=[SID, query("name", {"type": "string"})],
                status="201",
            ),
            "responses": {
                "201": ok_json(ref("Attachment")),
                "400": ERR,
                "403": ERR,
                "404": ERR,
                "413": ERR,
                "415": ERR,
            },
            "requestBody": {
                "required": True,
                "content": {
                    "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}
                },
            },
        },
    },
    "/sessions/{session_id}/cancel": {
        "post": op("Cancel the running request", ok_json(OBJ), params=[SID]),
    },
    "/sessions/{session_id}/truncate": {
        "post": op(
            "Edit from a message: a new branch leaves before it (nothing is deleted)",
            ok_json({"type": "object", "properties": {"deleted": {"type": "integer"}}}),
            params=[SID],
            body={
                "type": "object",
                "required": ["message_id"],
                "properties": {"message_id": {"type": "string"}},
            },
        ),
    },
    "/sessions/{session_id}/actions": {
        "get": op(
            "The action log, filtered",
            ok_json({"type": "object", "properties": {"actions": {"type": "array"}}}),
            params=[
                SID,
                query("tool", {"type": "string"}),
                query("success", {"type": "boolean"}),
                query("since", {"type": "number"}),
                query("until", {"type": "number"}),
                query("message_id", {"type": "string"}),
                query("task_id", {"type": "string"}),
                query("limit", {"type": "integer", "minimum": 1, "maximum": 5000}),
            ],
        ),
    },
    "/sessions/{session_id}/tasks": {
        "get": op(
            "The task graph: each request's root task with its children (recursively) and "
            "the overall progress; ?flat=1: every task in creation order",
            ok_json(
                {
                    "type": "object",
                    "properties": {
                        "tasks": {"type": "array", "items": ref("Task")},
                        "progress": {"type": "number", "minimum": 0, "maximum": 1},
                    },
                }
            ),
            params=[SID, query("flat", {"type": "boolean"})],
        ),
    },
    "/sessions/{session_id}/events": {
        "get": op(
            "Stored events after a seq",
            ok_json(
                {
                    "type": "object",
                    "properties": {
                        "events": {"type": "array", "items": ref("StoredEvent")},
                        "last_seq": {"type": "integer"},
                    },
                }
            ),
            params=[
                SID,
                query("after", {"type": "integer", "minimum": 0}),
                query("limit", {"type": "integer", "minimum": 1, "maximum": 10000}),
            ],
        ),
    },
    "/sessions/{session_id}/approvals": {
        "get": op(
            "Approvals",
            ok_json({"type": "object", "properties": {"approvals": {"type": "array"}}}),
            params=[SID, query("status", {"type": "string"})],
        ),
    },
    "/sessions/{session_id}/approvals/{approval_id}": {
        "get": op("One approval", ok_json(OBJ), params=[SID, path_param("approval_id")]),
        "post": op(
            "Approve, reject (the reason is the model's tool result), approve with edited "
            "arguments, or approve and always allow the tool in this session; 409 when "
            "another surface decided first",
            ok_json(OBJ),
            params=[SID, path_param("approval_id")],
            body={
                "type": "object",
                "required": ["decision"],
                "properties": {
                    "decision": {"type": "string", "enum": ["approve", "reject"]},
                    "input": OBJ,
                    "reason": {"type": "string"},
                    "always": {"type": "boolean"},
                    "source": {"type": "string", "enum": ["sidebar", "api"]},
                },
            },
        ),
    },
    "/sessions/{session_id}/schedules": {
        "get": op(
            "The session's schedules (reminders, run retries, subagent checks), soonest "
            "first, and its recent firings (each with its idempotency key, late flag and "
            "outcome); a reminder row has a readable `reminder` view",
            ok_json(
                {
                    "type": "object",
                    "properties": {
                        "schedules": {"type": "array", "items": OBJ},
                        "firings": {"type": "array", "items": OBJ},
                    },
                }
            ),
            params=[SID, query("kind", {"type": "string"}), query("status", RUN_STATUS)],
        ),
    },
    "/sessions/{session_id}/schedules/{schedule_id}": {
        "delete": op(
            "Cancel one of the session's reminders (409 when it already fired or was cancelled)",
            ok_json(OBJ),
            params=[SID, path_param("schedule_id")],
        ),
    },
}
