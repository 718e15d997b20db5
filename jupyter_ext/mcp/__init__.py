"""Think's own tools served over MCP: ``/api/think/mcp``, streamable HTTP.

:mod:`.tools` (which tools, as MCP definitions; pure), :mod:`.calls` (a call runs in the think
kernel of the client's session), :mod:`.asgi` (a tornado request served by the SDK's ASGI
transport) and :mod:`.endpoint` (the SDK server, its session manager and the handler).
"""

from .calls import CallFailed, KernelCalls
from .endpoint import McpEndpoint, McpHandler
from .tools import DEFAULT_TOOLS, SERVABLE

__all__ = ["DEFAULT_TOOLS", "SERVABLE", "CallFailed", "KernelCalls", "McpEndpoint", "McpHandler"]
