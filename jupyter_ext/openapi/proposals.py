"""The route of a session's proposal (review mode)."""

from __future__ import annotations

from typing import Any

from .parts import ok_json, op, path_param

_STRS = {"type": "array", "items": {"type": "string"}}
_IDS = {
    "oneOf": [_STRS, {"type": "string", "enum": ["all"]}],
    "description": 'paths, "<path>::cell:<cell id>", "<path>::hunk:<n>", or "all"',
}
_HUNK = {
    "type": "object",
    "properties": {"id": {"type": "string"}, "header": {"type": "string"}, "lines": _STRS},
}
_CELL = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "cell_id": {"type": "string"},
        "status": {"type": "string", "enum": ["added", "modified", "removed"]},
        "cell_type": {"type": "string"},
        "base_source": {"type": "string", "nullable": True},
        "source": {"type": "string", "nullable": True},
        "source_diff": {"type": "string"},
        "outputs_changed": {"type": "boolean"},
        "index": {"type": "integer"},
    },
}
_FILE = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "kind": {"type": "string", "enum": ["file", "notebook"]},
        "status": {"type": "string", "enum": ["modified", "created", "deleted"]},
        "missing": {
            "type": "boolean",
            "description": "the live file was deleted or renamed since the agent read it",
        },
        "diff": {"type": "string", "description": "unified diff (files; empty for notebooks)"},
        "hunks": {"type": "array", "items": _HUNK},
        "cells": {"type": "array", "items": _CELL, "description": "notebooks, from nbdime"},
    },
}
_PROPOSAL = {
    "type": "object",
    "properties": {
        "session_id": {"type": "string"},
        "review": {"type": "boolean"},
        "mode_detail": {"type": "string"},
        "files": {"type": "array", "items": _FILE},
    },
}
_PROBLEM = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "path": {"type": "string"},
        "detail": {"type": "string"},
    },
}

PROPOSAL_PATHS: dict[str, Any] = {
    "/sessions/{session_id}/proposal": {
        "get": op(
            "The session's proposal: per file a diff and hunks; notebooks per cell",
            ok_json(_PROPOSAL),
            params=[path_param("session_id")],
        ),
        "post": op(
            "Accept (merged three-way through the rooms) and reject parts of the proposal;"
            " 400 when nothing named was proposed",
            ok_json(
                {
                    "type": "object",
                    "properties": {
                        "accepted": _STRS,
                        "rejected": _STRS,
                        "conflicts": {"type": "array", "items": _PROBLEM},
                        "errors": {"type": "array", "items": _PROBLEM},
                        "action_id": {"type": "string"},
                        "proposal": _PROPOSAL,
                    },
                }
            ),
            params=[path_param("session_id")],
            body={
                "type": "object",
                "properties": {"accept": _IDS, "reject": _IDS, "reason": {"type": "string"}},
            },
        ),
    },
}
