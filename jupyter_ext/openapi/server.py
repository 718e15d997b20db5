"""Routes of the server as a whole: this document, the model endpoint, completion, kernels,
schedules, MCP."""

from __future__ import annotations

from typing import Any

from .parts import OBJ, RUN_STATUS, ok_json, op, query, ref

_ENDPOINT_BODY = {
    "type": "object",
    "properties": {
        "base_url": {"type": "string"},
        "api_key": {"type": "string"},
        "model": {"type": "string"},
    },
}
#: A workspace skill no person approved in this content (``GET /skills``).
SKILL_REVIEW = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "source": {"type": "string"},
        "path": {"type": "string"},
        "reason": {"type": "string"},
        "sha256": {"type": "string"},
        "text": {"type": "string", "description": "the SKILL.md a person reviews"},
        "approval": {
            "type": "object",
            "nullable": True,
            "description": "the session's pending approval of this content: {id, status, "
            "summary}; POST /sessions/{id}/approvals/{aid} decides it",
        },
    },
}
_RPCERR = {
    "description": "a JSON-RPC error object (id null when the request could not be read)",
    "content": {"application/json": {"schema": OBJ}},
}
_RPC = {
    "description": "a JSON-RPC response, or a stream of them (Server-Sent Events)",
    "content": {"application/json": {"schema": OBJ}, "text/event-stream": {}},
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
            **{code: _RPCERR for code in ("400", "403", "404", "405", "406", "413", "415")},
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
                            "params": OBJ,
                        },
                    }
                }
            },
        }
    return op


# Think's tools for other agents, the MCP streamable-HTTP transport (the server's
# token as "Authorization: token|Bearer ..."; tools/list, tools/call).

SERVER_PATHS: dict[str, Any] = {
    "/openapi.json": {"get": op("This document", ok_json(OBJ))},
    "/model": {
        "get": op("The model endpoint in force (never its key)", ok_json(ref("Endpoint"))),
        "put": op(
            "Save the model endpoint for this server (the setup card)",
            ok_json(ref("Endpoint")),
            body=_ENDPOINT_BODY,
        ),
        "delete": op(
            "Forget the saved endpoint (the environment applies)", ok_json(ref("Endpoint"))
        ),
    },
    "/model/test": {
        "post": op(
            "List the models of an endpoint (server-side)",
            ok_json(
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
    "/complete": {
        "post": op(
            "Inline completion at the cursor by the fast model (empty without a model, when "
            "superseded by the same tab's newer request, or past the deadline)",
            ok_json(
                {
                    "type": "object",
                    "properties": {
                        "completion": {"type": "string"},
                        "configured": {"type": "boolean"},
                        "model": {"type": "string"},
                        "model_ms": {"type": "number"},
                        "reason": {
                            "type": "string",
                            "enum": ["", "no_model", "timeout", "superseded", "error"],
                        },
                        "error": {"type": "string"},
                    },
                }
            ),
            body={
                "type": "object",
                "required": ["prefix"],
                "properties": {
                    "prefix": {"type": "string"},
                    "suffix": {"type": "string"},
                    "path": {"type": "string", "maxLength": 1000},
                    "language": {"type": "string", "maxLength": 100},
                    "cells": {"type": "array", "items": {"type": "string"}},
                    "variables": {"type": "array", "items": {"type": "string"}},
                    "client": {"type": "string", "maxLength": 100},
                },
            },
        )
    },
    "/kernels": {
        "get": op(
            "Chat kernels: each session's and the pool's spares",
            ok_json(
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
    "/schedules": {
        "get": op(
            "The schedules of every session, soonest first",
            ok_json({"type": "object", "properties": {"schedules": {"type": "array"}}}),
            params=[query("kind", {"type": "string"}), query("status", RUN_STATUS)],
        ),
    },
    "/skills": {
        "get": op(
            "The instructions and skills a session (or, without one, the workspace root) "
            "loads, the files refused with the reason, and the workspace skills waiting for "
            "a person's review (with a session: each with its pending approval there, "
            "decided through the approvals route)",
            ok_json(
                {
                    "type": "object",
                    "properties": {
                        "instructions": {
                            "type": "object",
                            "properties": {
                                "loaded": {"type": "array", "items": OBJ},
                                "invalid": {"type": "array", "items": OBJ},
                            },
                        },
                        "skills": {
                            "type": "object",
                            "properties": {
                                "loaded": {"type": "array", "items": OBJ},
                                "invalid": {"type": "array", "items": OBJ},
                                "review": {"type": "array", "items": SKILL_REVIEW},
                            },
                        },
                    },
                }
            ),
            params=[query("session", {"type": "string"})],
        ),
    },
    # Think's tools for other agents, the MCP streamable-HTTP transport (the server's token
    # as "Authorization: token|Bearer ..."; tools/list, tools/call).
    "/mcp": {
        "post": _mcp(
            "MCP: one JSON-RPC message of a client (initialize, tools/list, tools/call)", True
        ),
        "get": _mcp("MCP: the server's event stream of a session (Mcp-Session-Id)"),
        "delete": _mcp("MCP: end a session (Mcp-Session-Id)"),
    },
}
