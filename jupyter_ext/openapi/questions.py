"""Routes of the agent's questions (``ask_user``): list them, read one, answer one."""

from __future__ import annotations

from typing import Any

from .parts import SID, ok_json, op, path_param, query

_QUESTION = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "session_id": {"type": "string"},
        "question": {"type": "string"},
        "options": {"type": "array", "items": {"type": "string"}},
        "allow_text": {"type": "boolean"},
        "status": {"type": "string", "enum": ["pending", "answered", "closed"]},
        "answer": {"type": "string", "nullable": True},
        "source": {"type": "string", "nullable": True},
        "user": {"type": "string", "nullable": True},
        "task_id": {"type": "string", "nullable": True},
        "call_id": {"type": "string", "nullable": True},
        "created_at": {"type": "number"},
        "answered_at": {"type": "number", "nullable": True},
        "expires_at": {"type": "number", "nullable": True},
    },
}
_QID = path_param("question_id")

QUESTION_PATHS: dict[str, Any] = {
    "/sessions/{session_id}/questions": {
        "get": op(
            "The agent's questions (pending, answered, and closed: timed out or cancelled), "
            "oldest first",
            ok_json(
                {
                    "type": "object",
                    "properties": {"questions": {"type": "array", "items": _QUESTION}},
                }
            ),
            params=[
                SID,
                query("status", {"type": "string", "enum": ["pending", "answered", "closed"]}),
            ],
        ),
    },
    "/sessions/{session_id}/questions/{question_id}": {
        "get": op("One question", ok_json(_QUESTION), params=[SID, _QID]),
        "post": op(
            "Answer a question: the waiting run goes on with the answer. 400 when the "
            "question takes only its options and this is not one; 409 when it is already "
            "answered or closed",
            ok_json(_QUESTION),
            params=[SID, _QID],
            body={
                "type": "object",
                "required": ["answer"],
                "properties": {
                    "answer": {"type": "string", "minLength": 1, "maxLength": 4000},
                    "source": {"type": "string", "enum": ["sidebar", "notebook", "api"]},
                },
            },
        ),
    },
}
