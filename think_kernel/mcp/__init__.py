"""MCP servers as tool sources: configured servers' tools become ``server__tool``.

Pure core: :mod:`.config` (which servers, from traitlets and ``mcp.json``), :mod:`.names`
(model-facing tool names), :mod:`.results` (a tool result as a Think output); adapters:
:mod:`.connection` (one server over the official ``mcp`` SDK) and :mod:`.servers` (all of a
runtime's servers, their tools in its registry, the tool-list cache).
"""

from .config import ConfigError, Problem, ServerSpec, config_files, load_servers
from .servers import McpServers

__all__ = ["ConfigError", "McpServers", "Problem", "ServerSpec", "config_files", "load_servers"]
