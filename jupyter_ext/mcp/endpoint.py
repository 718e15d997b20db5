"""``/api/think/mcp``: Think's notebook, file and sandboxed code tools for other agents.

Streamable HTTP through the official SDK: its low-level ``Server`` (``tools/list``,
``tools/call``) and its ``StreamableHTTPSessionManager`` (both protocol eras, sessions,
Server-Sent Events, JSON-RPC errors for bad messages) run for the extension's lifetime; a
tornado handler authenticates and authorises each request through jupyter_server like every
other Think route (a token in ``Authorization: token|Bearer``, or the cookie and XSRF rules),
bounds the body, and hands the request to the manager (:mod:`.asgi`). Calls run in the
client's session kernel (:mod:`.calls`).

    claude mcp add --transport http think http://localhost:8888/api/think/mcp \\
        --header "Authorization: Bearer $JUPYTER_TOKEN"
"""

from __future__ import annotations

import asyncio
import json
import logging
from http import HTTPStatus
from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from think_kernel.waits import wait_for

from ..base import ThinkHandler
from ..services import StartFailed, Startup
from .asgi import serve_asgi
from .calls import CallFailed, client_title
from .tools import served_tools

log = logging.getLogger(__name__)
PATH = "/mcp"
INSTRUCTIONS = (
    "Think for Jupyter: read and edit the files and live notebooks of this Jupyter server's "
    "workspace (edits merge with what people type in open tabs), and run code in Think's "
    "sandbox (bash, execute_code: no network, only the workspace is writable). Paths are "
    "relative to the workspace. Read a file before you edit it. Some calls wait for a "
    "person's approval in JupyterLab."
)


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("think-jupyter")
    except Exception:  # a checkout without metadata
        return "0"


def _import_sdk() -> None:
    """Import what the endpoint uses of the SDK (and Think's tool definitions)."""
    import mcp.server.lowlevel.server  # noqa: F401
    import mcp.server.streamable_http_manager  # noqa: F401
    import mcp.server.transport_security  # noqa: F401
    import mcp_types  # noqa: F401

    from .tools import servable_groups

    servable_groups()


def rpc_error(code: int, message: str) -> bytes:
    """A JSON-RPC error object without a request id (the request could not be read)."""
    error = {"code": code, "message": message}
    return json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode()


def client_name(ctx: Any) -> str:
    """The calling client's ``clientInfo.name`` (the handshake's, or the request envelope's)."""
    params = getattr(getattr(ctx, "session", None), "client_params", None)
    info = getattr(params, "client_info", None)
    name = getattr(info, "name", None)
    return client_title(name) if isinstance(name, str) else "MCP client"


class McpEndpoint:
    """The SDK server and its session manager, running while the extension runs."""

    def __init__(
        self, startup: Startup, tools: list[str], *, max_body: int, idle_timeout: float
    ) -> None:
        self.startup = startup
        self.tool_names = list(tools)
        self.max_body = max_body
        self.idle_timeout = idle_timeout
        self.tools: dict[str, Any] = {}
        self.server: Any = None
        self.manager: Any = None
        self.ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Build and run the SDK's server in a task this endpoint owns."""
        if self._task is None:
            self._task = asyncio.ensure_future(self._run())

    def _build(self) -> None:
        """Build the SDK's server and session manager (imported by :func:`_import_sdk`)."""
        from mcp.server import Server
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
        from mcp.server.transport_security import TransportSecuritySettings

        self.tools = served_tools(self.tool_names)
        self.server = Server(
            "think-jupyter",
            version=_version(),
            instructions=INSTRUCTIONS,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )
        self.manager = StreamableHTTPSessionManager(
            self.server,
            # jupyter_server checks Host (allow_remote_access) and Origin before we get here.
            security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
            max_request_body_size=self.max_body,
            session_idle_timeout=self.idle_timeout if self.idle_timeout > 0 else None,
        )

    async def _run(self) -> None:
        try:
            if self.manager is None:
                # The SDK's slow imports: neither the server's start nor its loop waits for them.
                await asyncio.to_thread(_import_sdk)
                self._build()
            async with self.manager.run():
                self.ready.set()
                await self._stop.wait()
        except Exception:
            log.exception("Think's MCP endpoint stopped")
        finally:
            self.ready.clear()

    async def close(self) -> None:
        """Stop the manager (open sessions end)."""
        self._stop.set()
        task, self._task = self._task, None
        if task is not None:
            done, _ = await asyncio.wait({task}, timeout=5)
            if not done:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

    async def handle(self, scope: Any, receive: Any, send: Any) -> None:
        """The ASGI entry (one HTTP request). Every error answer is a JSON-RPC error object
        (the SDK answers a few, such as a wrong Content-Type, in plain text)."""
        failed: dict[str, Any] = {}

        async def send_json_errors(message: Any) -> None:
            if message["type"] == "http.response.start" and int(message["status"]) >= 400:
                headers = dict(message.get("headers") or [])
                if not headers.get(b"content-type", b"").startswith(b"application/json"):
                    failed.update(status=int(message["status"]), body=b"")
                    return
            if message["type"] == "http.response.body" and failed:
                failed["body"] += message.get("body") or b""
                if message.get("more_body"):
                    return
                status = failed["status"]
                text = failed["body"].decode("utf-8", "replace").strip()
                await send(
                    {
                        "type": "http.response.start",
                        "status": status,
                        "headers": [(b"content-type", b"application/json")],
                    }
                )
                body = rpc_error(-32600, text or HTTPStatus(status).phrase)
                await send({"type": "http.response.body", "body": body})
                return
            await send(message)

        await self.manager.handle_request(scope, receive, send_json_errors)

    # -- MCP handlers ------------------------------------------------------------------------

    async def _list_tools(self, ctx: Any, params: Any) -> Any:
        from mcp_types import ListToolsResult

        return ListToolsResult(tools=list(self.tools.values()))

    async def _call_tool(self, ctx: Any, params: Any) -> Any:
        from mcp.shared.exceptions import MCPError
        from mcp_types import INVALID_PARAMS, CallToolResult, ImageContent, TextContent

        if params.name not in self.tools:
            known = ", ".join(self.tools)
            raise MCPError(INVALID_PARAMS, f"unknown tool {params.name!r}; tools: {known}")
        try:
            calls = (await self.startup.wait()).mcp_calls
        except (TimeoutError, StartFailed):
            return CallToolResult(
                content=[TextContent(text="Think is not ready yet; try again.")], is_error=True
            )
        try:
            output = await calls.call(client_name(ctx), params.name, dict(params.arguments or {}))
        except CallFailed as e:
            text = f"Think could not run {params.name}: {e}"
            return CallToolResult(content=[TextContent(text=text)], is_error=True)
        content: list[Any] = [TextContent(text=str(output.get("text") or "(no output)"))]
        for image in output.get("display") or []:
            if isinstance(image, dict) and isinstance(image.get("data"), str):
                content.append(ImageContent(data=image["data"], mime_type=str(image.get("mime"))))
        return CallToolResult(content=content, is_error=not output.get("ok", False))


class McpHandler(ThinkHandler):
    """``GET``/``POST``/``DELETE /api/think/mcp``: the MCP endpoint behind Jupyter's auth."""

    def initialize(self, name: str, startup: Startup, endpoint: McpEndpoint) -> None:  # type: ignore[override]
        """Receive the extension's start handle and the endpoint."""
        super().initialize(name, startup)
        self.endpoint = endpoint
        self._gone = asyncio.Event()

    def compute_etag(self) -> None:
        """No ETag: responses are per request (and may stream)."""
        return None

    def on_connection_close(self) -> None:
        """The client went away: end a stream it held open."""
        self._gone.set()

    @authorized
    async def get(self) -> None:
        """The server's event stream of an MCP session (Server-Sent Events)."""
        await self._serve()

    @authorized
    async def post(self) -> None:
        """One JSON-RPC message (or batch) of an MCP client."""
        await self._serve()

    @authorized
    async def delete(self) -> None:
        """End an MCP session."""
        await self._serve()

    async def _serve(self) -> None:
        limit = self.svc.limits.max_body_size
        size = len(self.request.body or b"")
        if size > limit:
            self._rpc_error(413, -32600, f"body is {size} bytes; the limit is {limit}")
            return
        if not self.endpoint.ready.is_set():
            self.endpoint.start()  # a host that never ran the start hook (tests)
            try:
                await wait_for(self.endpoint.ready.wait(), 10)
            except TimeoutError:
                raise web.HTTPError(503, "the MCP endpoint is not ready") from None
        if not await serve_asgi(self, self.endpoint.handle, self._gone, PATH):
            self._rpc_error(500, -32603, "the MCP endpoint gave no response")

    def _rpc_error(self, status: int, code: int, message: str) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(rpc_error(code, message))
