"""The OpenAPI 3.0 document of the REST routes (served at ``/api/think/openapi.json``)."""

from __future__ import annotations

from typing import Any

from think_kernel.tasks.graph import STATUSES, TYPES

_ERR = {
    "description": "error",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
}  # noqa: E501


def _json(schema: dict[str, Any], description: str = "ok") -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def _path_param(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "path",
        "required": True,
        "schema": {"type": "string", "pattern": "^[A-Za-z0-9_.-]{1,128}$"},
    }


def _query(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "schema": schema}


def _op(
    summary: str,
    ok: dict[str, Any],
    *,
    params: list[dict[str, Any]] | None = None,
    body: dict[str, Any] | None = None,
    status: str = "200",
) -> dict[str, Any]:
    op: dict[str, Any] = {
        "summary": summary,
        "parameters": params or [],
        "responses": {
            status: ok,
            "400": _ERR,
            "403": _ERR,
            "404": _ERR,
        },
    }
    if body is not None:
        op["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": body}},
        }
        op["responses"]["413"] = _ERR
    return op


SID = _path_param("session_id")
_OBJ = {"type": "object", "additionalProperties": True}
_STATUS = {"type": "string", "enum": ["pending", "running", "done", "failed", "cancelled"]}
_SESSION_BODY = {
    "type": "object",
    "properties": {"title": {"type": "string"}, "path": {"type": "string"}},
}

_ENDPOINT_BODY = {
    "type": "object",
    "properties": {
        "base_url": {"type": "string"},
        "api_key": {"type": "string"},
        "model": {"type": "string"},
    },
}

OPENAPI: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "Think for Jupyter", "version": "1"},
    "servers": [{"url": "/api/think"}],
    "components": {
        "schemas": {
            "Error": {"type": "object", "properties": {"message": {"type": "string"}}},
            "Session": {
                "type": "object",
                "required": ["id"],
                "properties": {
                    "id": {"type": "string"},
                    "title": {"type": "string"},
                    "path": {"type": "string"},
                    "status": {"type": "string"},
                    "options": _OBJ,
                    "kind": {"type": "string", "enum": ["chat", "notebook", "magic", "mcp"]},
                    "created_at": {"type": "number"},
                    "updated_at": {"type": "number"},
                },
            },
            "Message": {
                "type": "object",
                "required": ["id", "seq", "role", "status"],
                "properties": {
                    "id": {"type": "string"},
                    "seq": {"type": "integer"},
                    "role": {"type": "string"},
                    "content": {"type": "string"},
                    "content_blob": {"type": "string", "nullable": True},
                    "content_size": {"type": "integer"},
                    "status": {"type": "string"},
                    "model": {"type": "string", "nullable": True},
                    "model_role": {"type": "string", "nullable": True},
                    "tokens_in": {"type": "integer", "nullable": True},
                    "tokens_out": {"type": "integer", "nullable": True},
                    "tokens_cached": {"type": "integer", "nullable": True},
                    "tokens_reasoning": {"type": "integer", "nullable": True},
                    "cost": {"type": "number", "nullable": True},
                    "output_size": {"type": "integer", "nullable": True},
                    "attachments": {
                        "type": "array",
                        "nullable": True,
                        "items": _ref("Attachment"),
                    },
                    "compaction": {"type": "object", "nullable": True},
                    "facet": {"type": "string", "nullable": True},
                },
            },
            "Task": {
                "type": "object",
                "required": ["id", "title", "type", "status", "progress"],
                "properties": {
                    "id": {"type": "string"},
                    "session_id": {"type": "string"},
                    "parent_id": {"type": "string", "nullable": True},
                    "title": {"type": "string"},
                    "description": {"type": "string"},
                    "type": {"type": "string", "enum": list(TYPES)},
                    "status": {"type": "string", "enum": list(STATUSES)},
                    "dependencies": {"type": "array", "items": {"type": "string"}},
                    "result": {"type": "string", "nullable": True},
                    "error": {"type": "string", "nullable": True},
                    "depth": {"type": "integer", "minimum": 0},
                    "progress": {"type": "number", "minimum": 0, "maximum": 1},
                    "subagent": {
                        "type": "object",
                        "nullable": True,
                        "properties": {
                            "status": {
                                "type": "string",
                                "enum": [
                                    "running",
                                    "complete",
                                    "error",
                                    "interrupted",
                                    "cancelled",
                                    "timeout",
                                ],
                            },
                            "model": {"type": "string"},
                            "started_at": {"type": "number", "nullable": True},
                            "ended_at": {"type": "number", "nullable": True},
                        },
                    },
                    "message_id": {"type": "string", "nullable": True},
                    "created_at": {"type": "number"},
                    "updated_at": {"type": "number"},
                    "children": {"type": "array", "items": _ref("Task")},
                },
            },
            "Attachment": {
                "type": "object",
                "required": ["kind"],
                "properties": {
                    "kind": {"type": "string", "enum": ["image", "file", "cells"]},
                    "name": {"type": "string"},
                    "mime": {"type": "string"},
                    "blob": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                    "size": {"type": "integer"},
                    "path": {"type": "string"},
                    "cells": {"type": "array", "items": _OBJ},
                },
            },
            "Endpoint": {
                "type": "object",
                "properties": {
                    "configured": {"type": "boolean"},
                    "source": {"type": "string", "enum": ["saved", "environment", ""]},
                    "base_url": {"type": "string"},
                    "effective_url": {"type": "string"},
                    "model": {"type": "string"},
                    "api_key_set": {"type": "boolean"},
                    "api_key_hint": {"type": "string"},
                },
            },
            "UsageTotals": {
                "type": "object",
                "properties": {
                    "calls": {"type": "integer"},
                    "tokens_in": {"type": "integer"},
                    "tokens_out": {"type": "integer"},
                    "tokens_cached": {"type": "integer"},
                    "tokens_reasoning": {"type": "integer"},
                    "cost": {"type": "number", "nullable": True},
                    "cost_complete": {"type": "boolean"},
                    "estimated": {"type": "integer"},
                },
            },
        }
    },
    "paths": {
        "/openapi.json": {"get": _op("This document", _json(_OBJ))},
        "/model": {
            "get": _op("The model endpoint in force (never its key)", _json(_ref("Endpoint"))),
            "put": _op(
                "Save the model endpoint for this server (the setup card)",
                _json(_ref("Endpoint")),
                body=_ENDPOINT_BODY,
            ),
            "delete": _op(
                "Forget the saved endpoint (the environment applies)", _json(_ref("Endpoint"))
            ),
        },
        "/model/test": {
            "post": _op(
                "List the models of an endpoint (server-side)",
                _json(
                    {
                        "type": "object",
                        "properties": {
                            "ok": {"type": "boolean"},
                            "models": {"type": "array", "items": {"type": "string"}},
                            "error": {"type": "string"},
                        },
                    }
                ),
                body=_ENDPOINT_BODY,
            )
        },
        "/sessions": {
            "get": _op(
                "List sessions",
                _json(
                    {
                        "type": "object",
                        "properties": {"sessions": {"type": "array", "items": _ref("Session")}},
                    }
                ),  # noqa: E501
                params=[
                    _query("limit", {"type": "integer", "minimum": 1, "maximum": 500}),
                    _query("offset", {"type": "integer", "minimum": 0}),
                    _query(
                        "kind", {"type": "string", "enum": ["chat", "notebook", "magic", "mcp"]}
                    ),
                ],
            ),
            "post": _op(
                "Create a session", _json(_ref("Session")), body=_SESSION_BODY, status="201"
            ),
        },
        "/kernels": {
            "get": _op(
                "Chat kernels: each session's and the pool's spares",
                _json(
                    {
                        "type": "object",
                        "properties": {
                            "pool_size": {"type": "integer"},
                            "spares_ready": {"type": "integer"},
                            "idle_timeout": {"type": "number"},
                            "culled": {"type": "integer"},
                            "kernels": {
                                "type": "array",
                                "items": {
                                    "type": "object",
                                    "properties": {
                                        "id": {"type": "string"},
                                        "session_id": {"type": "string", "nullable": True},
                                        "pid": {"type": "integer", "nullable": True},
                                        "execution_state": {"type": "string", "nullable": True},
                                        "prepared": {"type": "boolean"},
                                    },
                                },
                            },
                        },
                    }
                ),
            ),
        },
        "/sessions/{session_id}": {
            "get": _op("Get a session (with its active run)", _json(_ref("Session")), params=[SID]),
            "patch": _op(
                "Rename a session", _json(_ref("Session")), params=[SID], body=_SESSION_BODY
            ),
            "delete": _op(
                "Delete a session, its kernel and its records",
                {"description": "deleted"},
                params=[SID],
                status="204",
            ),
        },
        "/sessions/{session_id}/messages": {
            "get": _op(
                "A page of history (oldest first) and the cursor for the page before it",
                _json(
                    {
                        "type": "object",
                        "properties": {
                            "messages": {"type": "array", "items": _ref("Message")},
                            "next_cursor": {"type": "integer", "nullable": True},
                        },
                    }
                ),
                params=[
                    SID,
                    _query("before", {"type": "integer", "minimum": 0}),
                    _query("limit", {"type": "integer", "minimum": 1, "maximum": 500}),
                    # A subagent's conversation (the default is the main one, without them).
                    _query("facet", {"type": "string", "pattern": "^subagent:[A-Za-z0-9_.-]+$"}),
                ],
            ),
            "post": _op(
                "Send a message (stored before the answer) and start a run, or queue it "
                "behind the active run (message status 'queued'); 'interrupt' cancels the "
                "active and queued runs first ('stop and send')",
                _json(
                    {
                        "type": "object",
                        "properties": {"message": _ref("Message"), "run_id": {"type": "string"}},
                    }
                ),
                params=[SID],
                body={
                    "type": "object",
                    "required": ["content"],
                    "properties": {
                        "content": {"type": "string"},
                        "context": _OBJ,
                        "attachments": {
                            "type": "array",
                            "maxItems": 10,
                            "items": _ref("Attachment"),
                        },
                        "interrupt": {"type": "boolean"},
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
            "get": _op(
                "The whole content of a message (blob included)",
                _json(
                    {
                        "type": "object",
                        "properties": {
                            "id": {"type": "string"},
                            "content": {"type": "string"},
                            "size": {"type": "integer"},
                        },
                    }
                ),
                params=[SID, _path_param("message_id")],
            ),
        },
        "/sessions/{session_id}/messages/{message_id}/attachments/{index}": {
            "get": {
                **_op(
                    "The bytes of a message's attachment (an upload or a tool's screenshot)",
                    _json(_OBJ),
                    params=[SID, _path_param("message_id"), _path_param("index")],
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
                    "403": _ERR,
                    "404": _ERR,
                    "410": _ERR,
                },
            },
        },
        "/sessions/{session_id}/usage": {
            "get": _op(
                "Tokens and estimated cost: total, by role, model and purpose",
                _json(
                    {
                        "type": "object",
                        "properties": {
                            "total": _ref("UsageTotals"),
                            "by_role": {
                                "type": "object",
                                "additionalProperties": _ref("UsageTotals"),
                            },
                            "by_model": {
                                "type": "object",
                                "additionalProperties": _ref("UsageTotals"),
                            },
                            "by_purpose": {
                                "type": "object",
                                "additionalProperties": _ref("UsageTotals"),
                            },
                            "role_models": _OBJ,
                            "calls": {"type": "array", "items": _OBJ},
                        },
                    }
                ),
                params=[SID, _query("calls", {"type": "integer", "minimum": 0, "maximum": 5000})],
            ),
        },
        "/sessions/{session_id}/attachments": {
            "post": {
                **_op(
                    "Upload a file or image (the raw bytes) to attach to a message",
                    _json(_ref("Attachment")),
                    params=[SID, _query("name", {"type": "string"})],
                    status="201",
                ),
                "responses": {
                    "201": _json(_ref("Attachment")),
                    "400": _ERR,
                    "403": _ERR,
                    "404": _ERR,
                    "413": _ERR,
                    "415": _ERR,
                },
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/octet-stream": {
                            "schema": {"type": "string", "format": "binary"}
                        }
                    },
                },
            },
        },
        "/sessions/{session_id}/cancel": {
            "post": _op("Cancel the running request", _json(_OBJ), params=[SID]),
        },
        "/sessions/{session_id}/truncate": {
            "post": _op(
                "Delete a message and everything after it",
                _json({"type": "object", "properties": {"deleted": {"type": "integer"}}}),
                params=[SID],
                body={
                    "type": "object",
                    "required": ["message_id"],
                    "properties": {"message_id": {"type": "string"}},
                },
            ),
        },
        "/sessions/{session_id}/actions": {
            "get": _op(
                "The action log, filtered",
                _json({"type": "object", "properties": {"actions": {"type": "array"}}}),
                params=[
                    SID,
                    _query("tool", {"type": "string"}),
                    _query("success", {"type": "boolean"}),
                    _query("since", {"type": "number"}),
                    _query("until", {"type": "number"}),
                    _query("message_id", {"type": "string"}),
                    _query("task_id", {"type": "string"}),
                    _query("limit", {"type": "integer", "minimum": 1, "maximum": 5000}),
                ],
            ),
        },
        "/sessions/{session_id}/tasks": {
            "get": _op(
                "The task graph: each request's root task with its children (recursively) and "
                "the overall progress; ?flat=1: every task in creation order",
                _json(
                    {
                        "type": "object",
                        "properties": {
                            "tasks": {"type": "array", "items": _ref("Task")},
                            "progress": {"type": "number", "minimum": 0, "maximum": 1},
                        },
                    }
                ),
                params=[SID, _query("flat", {"type": "boolean"})],
            ),
        },
        "/sessions/{session_id}/events": {
            "get": _op(
                "Stored events after a seq",
                _json(
                    {
                        "type": "object",
                        "properties": {
                            "events": {"type": "array"},
                            "last_seq": {"type": "integer"},
                        },
                    }
                ),
                params=[
                    SID,
                    _query("after", {"type": "integer", "minimum": 0}),
                    _query("limit", {"type": "integer", "minimum": 1, "maximum": 10000}),
                ],
            ),
        },
        "/sessions/{session_id}/approvals": {
            "get": _op(
                "Approvals",
                _json({"type": "object", "properties": {"approvals": {"type": "array"}}}),
                params=[SID, _query("status", {"type": "string"})],
            ),
        },
        "/sessions/{session_id}/approvals/{approval_id}": {
            "get": _op("One approval", _json(_OBJ), params=[SID, _path_param("approval_id")]),
            "post": _op(
                "Approve, reject (the reason is the model's tool result), approve with edited "
                "arguments, or approve and always allow the tool in this session; 409 when "
                "another surface decided first",
                _json(_OBJ),
                params=[SID, _path_param("approval_id")],
                body={
                    "type": "object",
                    "required": ["decision"],
                    "properties": {
                        "decision": {"type": "string", "enum": ["approve", "reject"]},
                        "input": _OBJ,
                        "reason": {"type": "string"},
                        "always": {"type": "boolean"},
                        "source": {"type": "string", "enum": ["sidebar", "api"]},
                    },
                },
            ),
        },
        "/sessions/{session_id}/schedules": {
            "get": _op(
                "The session's schedules (reminders, run retries, subagent checks), soonest "
                "first, and its recent firings (each with its idempotency key, late flag and "
                "outcome); a reminder row has a readable `reminder` view",
                _json(
                    {
                        "type": "object",
                        "properties": {
                            "schedules": {"type": "array", "items": _OBJ},
                            "firings": {"type": "array", "items": _OBJ},
                        },
                    }
                ),
                params=[SID, _query("kind", {"type": "string"}), _query("status", _STATUS)],
            ),
        },
        "/sessions/{session_id}/schedules/{schedule_id}": {
            "delete": _op(
                "Cancel one of the session's reminders (409 when it already fired or was "
                "cancelled)",
                _json(_OBJ),
                params=[SID, _path_param("schedule_id")],
            ),
        },
        "/schedules": {
            "get": _op(
                "The schedules of every session, soonest first",
                _json({"type": "object", "properties": {"schedules": {"type": "array"}}}),
                params=[_query("kind", {"type": "string"}), _query("status", _STATUS)],
            ),
        },
    },
}
_RPC_ERR = {
    "description": "a JSON-RPC error object (id null when the request could not be read)",
    "content": {"application/json": {"schema": _OBJ}},
}
_RPC = {
    "description": "a JSON-RPC response, or a stream of them (Server-Sent Events)",
    "content": {"application/json": {"schema": _OBJ}, "text/event-stream": {}},
}
_MCP_HEADERS = [
    {"name": "Mcp-Session-Id", "in": "header", "required": False, "schema": {"type": "string"}},
    {"name": "MCP-Protocol-Version", "in": "header", "required": False,
     "schema": {"type": "string"}},
]  # fmt: skip


def _mcp(summary: str, body: bool = False) -> dict[str, Any]:
    op = {
        "summary": summary,
        "parameters": _MCP_HEADERS,
        "responses": {
            "200": _RPC,
            "202": {"description": "a notification or response was accepted"},
            **{code: _RPC_ERR for code in ("400", "403", "404", "405", "406", "413", "415")},
        },
    }
    if body:
        op["requestBody"] = {
            "required": True,
            "content": {
                "application/json": {
                    "schema": {
                        "type": "object",
                        "properties": {
                            "jsonrpc": {"type": "string", "enum": ["2.0"]},
                            "id": {"type": ["string", "integer"]},
                            "method": {"type": "string"},
                            "params": _OBJ,
                        },
                    }
                }
            },
        }
    return op


# Issue 15: Think's tools for other agents, the MCP streamable-HTTP transport (the server's
# token as "Authorization: token|Bearer ..."; tools/list, tools/call).
OPENAPI["paths"]["/mcp"] = {
    "post": _mcp(
        "MCP: one JSON-RPC message of a client (initialize, tools/list, tools/call)", True
    ),
    "get": _mcp("MCP: the server's event stream of a session (Mcp-Session-Id)"),
    "delete": _mcp("MCP: end a session (Mcp-Session-Id)"),
}
for _path in OPENAPI["paths"].values():
    for _method, _operation in _path.items():
        if _method in ("post", "patch", "delete"):
            _operation["responses"]["409"] = _ERR
