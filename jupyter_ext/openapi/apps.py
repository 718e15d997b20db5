"""The routes of a session's live apps: their list with its Stop, Stop all and Restart, and
the proxy to each (every path below ``.../apps/{name}``)."""

from __future__ import annotations

from typing import Any

from .parts import ok_json, op, path_param

_APP = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "url": {"type": "string", "description": "its address on this server (the proxy)"},
        "state": {
            "type": "string",
            "enum": ["starting", "running", "exited", "crashed", "stopped"],
        },  # fmt: skip
        "command": {"type": "string", "description": "its first 500 characters"},
        "started_at": {"type": "number", "description": "seconds since the epoch"},
        "exit_code": {"type": "integer", "nullable": True},
        "error": {"type": "string", "description": "why it ended, when it did"},
        "restarts": {"type": "integer"},
        "restart_on_change": {"type": "boolean"},
        "port": {
            "type": "integer",
            "nullable": True,
            "description": "the port it binds itself inside the sandbox (tier 1), if any",
        },
        "log_tail": {"type": "string", "description": "its last lines of output"},
        "open_url": {
            "type": "string",
            "description": "the keyed path a browser opens it at (below the base URL)",
        },
    },
}
_PARAMS = [path_param("session_id"), path_param("name")]
_PROXIED = {
    "description": "the app's own answer, with Content-Security-Policy: sandbox",
    "content": {"*/*": {"schema": {}}},
}


def _proxy(summary: str, keyed: bool = False) -> dict[str, Any]:
    names = ["key", "path"] if keyed else ["path"]
    params = [*_PARAMS, *({"name": n, "in": "path", "required": True,
                           "schema": {"type": "string"}} for n in names)]  # fmt: skip
    return {m: op(summary, _PROXIED, params=params)
            for m in ("get", "post", "put", "patch", "delete")}  # fmt: skip


APP_PATHS: dict[str, Any] = {
    "/sessions/{session_id}/apps": {
        "get": op(
            "The session's live apps (serve_app), oldest first: how each stands, its address "
            "and its last lines of output. An app whose kernel stopped is `stopped`",
            ok_json({"type": "object", "properties": {"apps": {"type": "array", "items": _APP}}}),
            params=[path_param("session_id")],
        ),
        "post": op(
            "A person's control of the session's apps. `stop` with a name: stop that app; "
            "without one: every app that runs (Stop all). Answered once the kernel stopped "
            "them, with the names stopped and the session's apps. `restart` (a name): start "
            "it again (stopped first if it runs), answered with its row once it answers HTTP "
            "or has failed. 404 for an unknown app, 409 when no kernel runs the session. "
            "These controls are here, not below .../apps/{name}/, which is all the app's own",
            {
                "description": "stop: the apps stopped; restart: the app's row",
                "content": {
                    "application/json": {
                        "schema": {
                            "oneOf": [
                                {
                                    "type": "object",
                                    "properties": {
                                        "stopped": {"type": "array", "items": {"type": "string"}},
                                        "apps": {"type": "array", "items": _APP},
                                    },
                                },
                                _APP,
                            ]
                        }
                    }
                },
            },
            params=[path_param("session_id")],
            body={
                "type": "object",
                "required": ["action"],
                "properties": {
                    "action": {"type": "string", "enum": ["stop", "restart"]},
                    "name": {"type": "string", "description": "the app (stop: absent for all)"},
                },
            },
        ),
    },
    "/sessions/{session_id}/apps/{name}/{path}": _proxy(
        "The app itself, proxied to its private socket (HTTP, and a WebSocket on GET with "
        "Upgrade): authenticated and authorised as every route; the app gets the path below "
        "its prefix, never the person's token, XSRF token or the server's cookies"
    ),
    "/sessions/{session_id}/apps/{name}/@{key}/{path}": _proxy(
        "The app at its keyed path (`open_url`), for the requests its own page makes from its "
        "opaque origin (no login cookie): let through by the key (an HMAC of the session and "
        "app under the server's cookie secret) alone, from any origin, for this app only; "
        "403 for a wrong key. Answers allow CORS reads (`*`) and a preflight is answered here",
        keyed=True,
    ),
    "/sessions/{session_id}/apps/{name}/@{key}": {
        "get": op(
            "Redirects to the app's keyed address with its trailing slash",
            {"description": "a redirect to .../apps/{name}/@{key}/"},
            params=[*_PARAMS, path_param("key")],
            status="302",
        ),
    },
    "/sessions/{session_id}/apps/{name}": {
        "get": op(
            "Redirects to the app's address with its trailing slash",
            {"description": "a redirect to .../apps/{name}/"},
            params=_PARAMS,
            status="302",
        ),
    },
}
