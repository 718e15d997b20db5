"""The base of every REST handler: auth resource ``think``, JSON bodies, clear 4xx errors."""

from __future__ import annotations

import json
import math
from typing import Any

from jupyter_server.base.handlers import APIHandler
from jupyter_server.extension.handler import ExtensionHandlerMixin
from tornado import web

from .services import Services, StartFailed, Startup

AUTH_RESOURCE = "think"
#: JSON from clients may nest this deep, no deeper (a 5,000-deep body once answered 500).
MAX_JSON_DEPTH = 64


def parse_json(raw: str | bytes, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads`` for untrusted input: ValueError for bad JSON, NaN/Infinity, lone
    surrogates SQLite cannot store, and nesting deeper than ``max_depth`` (never a
    RecursionError)."""
    try:
        data = json.loads(raw, parse_constant=_reject_constant)
    except RecursionError:
        raise ValueError(f"JSON nests deeper than {max_depth} levels") from None
    except UnicodeDecodeError as e:
        raise ValueError(f"not UTF-8: {e}") from None
    todo: list[tuple[Any, int]] = [(data, 1)]
    while todo:  # iterative, so the check itself cannot recurse too deep
        value, depth = todo.pop()
        if isinstance(value, dict):
            items: Any = value.values()
        elif isinstance(value, list):
            items = value
        else:
            if isinstance(value, str):
                _check_unicode(value)
            continue
        if depth > max_depth:
            raise ValueError(f"JSON nests deeper than {max_depth} levels")
        for key in value if isinstance(value, dict) else ():
            _check_unicode(key)
        todo.extend((v, depth + 1) for v in items)
    return data


def _check_unicode(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # "\ud800" parses, but SQLite (UTF-8) cannot store it
        raise ValueError("invalid unicode (a lone surrogate)") from None


async def services_or_503(startup: Startup) -> Services:
    """The extension's services, or a 503 if the store is not open yet or failed to open."""
    try:
        return await startup.wait()
    except TimeoutError:
        raise web.HTTPError(503, "the think store is not ready") from None
    except StartFailed:
        raise web.HTTPError(503, f"the think store failed to open: {startup.error}") from None


class ThinkHandler(ExtensionHandlerMixin, APIHandler):
    """Authenticated by jupyter_server (403 without a valid token), authorised on ``think``."""

    auth_resource = AUTH_RESOURCE

    svc: Services

    def initialize(self, name: str, startup: Startup) -> None:  # type: ignore[override]
        """Receive the extension's start handle (the services come in ``prepare``)."""
        super().initialize(name)
        self.startup = startup

    async def prepare(self) -> None:  # type: ignore[override]
        """Wait (briefly) for the store to open on server start, then take the services."""
        await super().prepare()
        self.svc = await services_or_503(self.startup)

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """JSON ``{"message", "reason"}`` for every error (APIHandler's shape)."""
        super().write_error(status_code, **kwargs)

    def body(self) -> dict[str, Any]:
        """The request body as a JSON object (400 if it is not one, 413 if too big)."""
        raw = self.request.body or b""
        if len(raw) > self.svc.limits.max_body_size:
            raise web.HTTPError(
                413, f"body is {len(raw)} bytes; the limit is {self.svc.limits.max_body_size}"
            )
        if not raw.strip():
            return {}
        try:
            data = parse_json(raw)
        except ValueError as e:
            raise web.HTTPError(400, f"body is not valid JSON: {e}") from None
        if not isinstance(data, dict):
            raise web.HTTPError(400, "body must be a JSON object")
        return data

    def send(self, data: Any, status: int = 200) -> None:
        """Write a JSON response."""
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(data, default=str))

    def int_arg(self, name: str, default: int | None, lo: int = 0, hi: int = 2**62) -> int | None:
        """An integer query argument within [lo, hi] (400 otherwise)."""
        raw = self.get_query_argument(name, None)
        if raw is None or raw == "":
            return default
        try:
            value = int(raw)
        except ValueError:
            raise web.HTTPError(400, f"{name} must be an integer") from None
        if not lo <= value <= hi:
            raise web.HTTPError(400, f"{name} must be between {lo} and {hi}")
        return value

    def float_arg(self, name: str) -> float | None:
        """A finite number query argument (400 otherwise)."""
        raw = self.get_query_argument(name, None)
        if raw is None or raw == "":
            return None
        try:
            value = float(raw)
        except ValueError:
            raise web.HTTPError(400, f"{name} must be a number") from None
        if not math.isfinite(value):
            raise web.HTTPError(400, f"{name} must be finite")
        return value

    def bool_arg(self, name: str) -> bool | None:
        """``true``/``false``/``1``/``0`` (400 otherwise)."""
        raw = self.get_query_argument(name, None)
        if raw is None or raw == "":
            return None
        if raw.lower() in ("true", "1"):
            return True
        if raw.lower() in ("false", "0"):
            return False
        raise web.HTTPError(400, f"{name} must be true or false")

    async def session_or_404(self, session_id: str) -> dict[str, Any]:
        """The session row, or a 404 naming it."""
        session = await self.svc.store.get_session(session_id)
        if session is None:
            raise web.HTTPError(404, f"no session {session_id!r}")
        return session


def field(
    body: dict[str, Any], name: str, kind: type | tuple[type, ...], required: bool = False
) -> Any:
    """A typed field of a JSON body (400 if missing when required, or of the wrong type)."""
    if name not in body or body[name] is None:
        if required:
            raise web.HTTPError(400, f"{name!r} is required")
        return None
    value = body[name]
    if isinstance(value, bool) and kind is not bool:
        raise web.HTTPError(400, f"{name!r} must be {_kind_name(kind)}")
    if not isinstance(value, kind):
        raise web.HTTPError(400, f"{name!r} must be {_kind_name(kind)}")
    return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {str: "a string", dict: "an object", int: "an integer", bool: "a boolean"}
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")
