"""Which of Think's tools its MCP endpoint serves, as MCP tool definitions (pure).

The schemas and descriptions are those the model sees (built from the tool functions); the
annotations say which tools change nothing and which may destroy data. ``execute_cell`` is not
served by default: it runs code in the notebook's own kernel, outside the sandbox.

    served = served_tools(["read_file", "bash"])       # name -> mcp_types.Tool
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

#: Tools an MCP client may be given (``ThinkExtension.mcp_tools`` picks among them): the file,
#: notebook and code groups (names only here: the tools are built when the endpoint starts,
#: so the server's start does not pay for them; a test checks the names match the groups).
SERVABLE = (
    "read_file", "write_file", "edit_file", "delete_file", "list_files",
    "read_notebook", "insert_cell", "edit_cell", "delete_cell", "execute_cell",
    "list_versions", "revert", "bash", "execute_code",
)  # fmt: skip
DEFAULT_TOOLS = [name for name in SERVABLE if name != "execute_cell"]
READ_ONLY = {"read_file", "list_files", "read_notebook", "list_versions"}
ADDITIVE = {"insert_cell"}
SANDBOXED = {"bash", "execute_code"}
NOTE = {
    "bash": " Sandboxed: no network, only the workspace is writable.",
    "execute_code": " Sandboxed: no network, only the workspace is writable.",
    "edit_file": " Read the file with read_file first.",
    "write_file": " To replace an existing file, read it with read_file first.",
}


def served_tools(names: Iterable[str]) -> dict[str, Any]:
    """The MCP definitions of the named tools (unknown names are left out)."""
    from mcp_types import Tool as McpTool
    from mcp_types import ToolAnnotations

    groups = servable_groups()
    out: dict[str, Any] = {}
    for name in names:
        tool = groups.get(name)
        if tool is None or name not in SERVABLE:
            continue
        read_only = name in READ_ONLY
        out[name] = McpTool(
            name=name,
            description=tool.description + NOTE.get(name, ""),
            input_schema=tool.parameters,
            annotations=ToolAnnotations(
                read_only_hint=read_only,
                destructive_hint=None if read_only else name not in ADDITIVE,
                idempotent_hint=True if read_only else None,
                open_world_hint=False,
            ),
        )
    return out


@functools.cache
def servable_groups() -> dict[str, Any]:
    """The file, notebook and code tools by name (``think_kernel.tools.base.Tool``)."""
    from think_kernel.tools.base import Tool
    from think_kernel.tools.code import CODE_TOOLS
    from think_kernel.tools.files import FILE_TOOLS
    from think_kernel.tools.notebooks import NOTEBOOK_TOOLS

    return {t.name: t for t in (Tool(f) for f in (*FILE_TOOLS, *NOTEBOOK_TOOLS, *CODE_TOOLS))}
