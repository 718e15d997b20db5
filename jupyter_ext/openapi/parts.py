"""Building blocks of the OpenAPI document: responses, parameters, operations."""

from __future__ import annotations

from typing import Any

#: An error answer: ``{"message": ...}``.
ERR = {
    "description": "error",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
}


def ok_json(schema: dict[str, Any], description: str = "ok") -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def path_param(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "path",
        "required": True,
        "schema": {"type": "string", "pattern": "^[A-Za-z0-9_.-]{1,128}$"},
    }


def query(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "schema": schema}


def op(
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
            "400": ERR,
            "403": ERR,
            "404": ERR,
        },
    }
    if body is not None:
        op["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": body}},
        }
        op["responses"]["413"] = ERR
    return op


SID = path_param("session_id")
OBJ = {"type": "object", "additionalProperties": True}
RUN_STATUS = {"type": "string", "enum": ["pending", "running", "done", "failed", "cancelled"]}
