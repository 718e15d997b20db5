"""An MCP server for the tests, written with the official SDK (``MCPServer``).

    python mcp_server.py                 # stdio
    python mcp_server.py --http PORT     # streamable HTTP on 127.0.0.1:PORT/mcp

Tools: ``echo`` (read-only), ``add_note`` (not annotated), ``wipe`` (destructive), ``env``
(one of its environment variables), ``pid``, ``crash`` (the process exits mid-call) and
``slow``. ``add_note`` appends to the file named by ``$NOTES`` so a test can see it ran.
With ``$LINGER`` set, the process stays alive after its input ends (a badly behaved server).
"""

from __future__ import annotations

import asyncio
import os
import sys
import time

from mcp.server import MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("think-test-server")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def echo(text: str) -> str:
    """Say the text back."""
    return f"echo: {text}"


@server.tool()
def add_note(text: str) -> str:
    """Append a note to the notes file."""
    with open(os.environ["NOTES"], "a", encoding="utf-8") as f:
        f.write(text + "\n")
    return f"noted: {text}"


@server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))
def wipe(what: str) -> str:
    """Pretend to wipe something."""
    return f"wiped {what}"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def env(name: str) -> str:
    """One environment variable of this server process ('<unset>' if it has none)."""
    return os.environ.get(name, "<unset>")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def pid() -> str:
    """This server's process id."""
    return str(os.getpid())


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def crash() -> str:
    """Exit the process in the middle of the call."""
    print("crashing on purpose", file=sys.stderr, flush=True)
    os._exit(3)


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    await asyncio.sleep(seconds)
    return "slept"


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        print("test server starting", file=sys.stderr, flush=True)
        server.run()
        if os.environ.get("LINGER"):
            time.sleep(3600)
