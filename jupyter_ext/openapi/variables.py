"""The route of a notebook kernel's variables (the sidebar's ``@name`` chips)."""

from __future__ import annotations

from typing import Any

from .parts import OBJ, ok_json, op, query

_ANSWER = {
    "type": "object",
    "properties": {
        "status": {
            "type": "string",
            "enum": ["ok", "busy", "no_kernel", "not_supported", "timeout", "error"],
        },
        "path": {"type": "string"},
        "message": {"type": "string"},
        "text": {"type": "string", "description": "the summary as the model reads it"},
        "kernel": OBJ,
        "variables": {"type": "array", "items": OBJ},
        "missing": {"type": "array", "items": {"type": "string"}},
        "omitted": {"type": "integer"},
        "not_described": {"type": "array", "items": {"type": "string"}},
        "truncated": {"type": "boolean"},
        "elapsed_ms": {"type": "number"},
        "kernel_ms": {"type": "number"},
    },
}

VARIABLE_PATHS: dict[str, Any] = {
    "/variables": {
        "get": op(
            "The variables of an open notebook's kernel (python3), read without running the "
            "notebook's code: types, shapes, DataFrame columns, dtypes, null counts, a few rows, "
            "array statistics; bounded in size and time. A busy kernel answers status busy at "
            "once; a notebook with no kernel no_kernel; another language not_supported. Needs "
            "the right to use kernels (403 otherwise)",
            ok_json(_ANSWER),
            params=[
                query("path", {"type": "string", "description": "the notebook, server-relative"}),
                query(
                    "names",
                    {"type": "string", "description": "comma-separated names (default: all)"},
                ),
            ],
        ),
    },
}
