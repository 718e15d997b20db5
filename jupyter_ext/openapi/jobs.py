"""The route of a session's background jobs."""

from __future__ import annotations

from typing import Any

from .parts import ok_json, op, path_param

_JOB = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "command": {"type": "string", "description": "its first 500 characters"},
        "state": {
            "type": "string",
            "enum": [
                "running",
                "done",
                "failed",
                "timeout",
                "memory",
                "disk",
                "stopped",
                "killed",
                "lost",
            ],
        },
        "started_at": {"type": "number", "description": "seconds since the epoch"},
        "ended_at": {"type": "number", "nullable": True},
        "elapsed": {"type": "number", "description": "seconds it ran (so far)"},
        "lines": {"type": "integer", "description": "lines of output so far"},
        "bytes": {"type": "integer"},
        "percent": {
            "type": "number",
            "nullable": True,
            "description": "the last percentage it printed",
        },
        "exit_code": {"type": "integer", "nullable": True},
        "error": {"type": "string", "description": "how it ended, when not with exit 0"},
        "wake": {"type": "boolean", "description": "its end starts a run in the chat"},
        "limits": {"type": "object", "additionalProperties": {"type": "number"}},
        "tail": {"type": "string", "description": "its last lines"},
    },
}

JOB_PATHS: dict[str, Any] = {
    "/sessions/{session_id}/jobs": {
        "get": op(
            "The session's background jobs (run_job), oldest first: running ones with their "
            "progress (refreshed every few seconds), ended ones with how they ended. A job "
            "whose kernel stopped while it ran is `lost`",
            ok_json({"type": "object", "properties": {"jobs": {"type": "array", "items": _JOB}}}),
            params=[path_param("session_id")],
        ),
    },
    "/sessions/{session_id}/jobs/stop": {
        "post": op(
            "Stop one of the session's background jobs (body {name}) or every one (no name): "
            "the session's kernel is told (202); how they ended shows in GET .../jobs and in "
            "the session's jobs frames. 409 when no kernel runs the session",
            {
                "description": "accepted",
                "content": {
                    "application/json": {
                        "schema": {
                            "type": "object",
                            "properties": {"sent": {"type": "boolean"}, "name": {"type": "string"}},
                        }
                    }
                },
            },
            params=[path_param("session_id")],
            body={"type": "object", "properties": {"name": {"type": "string", "maxLength": 64}}},
            status="202",
        ),
    },
}
