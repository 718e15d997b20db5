"""Component schemas of the REST answers (the frames' schemas come from ``think_kernel.wire``)."""

from __future__ import annotations

from typing import Any

from think_kernel.tasks.graph import STATUSES, TYPES

from .parts import OBJ, ref

REST_SCHEMAS: dict[str, Any] = {
    "Error": {"type": "object", "properties": {"message": {"type": "string"}}},
    "Session": {
        "type": "object",
        "required": ["id"],
        "properties": {
            "id": {"type": "string"},
            "title": {"type": "string"},
            "path": {"type": "string"},
            "status": {"type": "string"},
            "options": OBJ,
            "kind": {"type": "string", "enum": ["chat", "notebook", "magic", "mcp"]},
            "created_at": {"type": "number"},
            "updated_at": {"type": "number"},
            "hibernating": {
                "type": "boolean",
                "description": "Idle without a kernel; the next message wakes it on a spare.",
            },
            "review": {
                "type": "boolean",
                "description": "Review mode: the agent's edits become a proposal (GET only).",
            },
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
                "items": ref("Attachment"),
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
            "children": {"type": "array", "items": ref("Task")},
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
            "cells": {"type": "array", "items": OBJ},
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
    "Run": {
        "type": "object",
        "description": "A durable run of one request (a row of the run table)",
        "additionalProperties": True,
        "properties": {
            "id": {"type": "string"},
            "session_id": {"type": "string"},
            "message_id": {"type": "string"},
            "status": {"type": "string"},
            "attempt": {"type": "integer"},
            "kernel_id": {"type": "string", "nullable": True},
            "error": {"type": "string", "nullable": True},
        },
    },
    "StoredEvent": {
        "type": "object",
        "required": ["seq", "type", "data"],
        "properties": {
            "seq": {"type": "integer"},
            "session_id": {"type": "string"},
            "type": {"type": "string"},
            # What the session socket sent live: an agent event or a whole message.
            "data": {"oneOf": [ref("AgentEvent"), ref("MessageFrame")]},
            "ts": {"type": "number"},
        },
    },
}
