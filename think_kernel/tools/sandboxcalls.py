"""Tool calls from sandboxed code (``import think; think.read_file(...)``): the session's own
tools, with the same checks and the same action log as the model's calls.

    sandbox.serve_loopback(functools.partial(call_from_sandbox, runtime))

The code is running while it calls: what it wrote to the file so far is merged into the room
first, and what the tool wrote is saved before the code reads the disk again.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, Protocol

from ..agent.toolcalls import record_action
from ..store.ids import new_id
from ..subagents.facet import WORKING_ON
from .base import ToolContext, ToolOutput, ToolRegistry

if TYPE_CHECKING:
    from ..collab.filesync import FileSync
    from ..store import Store


class Host(Protocol):
    """What a call from sandboxed code uses of the runtime."""

    tools: ToolRegistry
    #: The tools each running agent may call, by task id ("": the session's own run).
    running_tools: dict[str, ToolRegistry]
    files: FileSync
    store: Store | None
    session_id: str
    #: The model's message whose code is running (the action log names it).
    current_message_id: str

    def make_context(self, message_id: str, call_id: str) -> ToolContext:
        """The context of one tool call."""
        ...


async def call_from_sandbox(host: Host, tool: str, args: dict[str, Any]) -> ToolOutput:
    """Run ``tool`` for sandboxed code and log it as a ``loopback`` action."""
    ctx = host.make_context(host.current_message_id, new_id("lb_"))
    path = args.get("path") if isinstance(args, dict) else None
    rooms = host.files.rooms
    if rooms is not None and isinstance(path, str):
        with contextlib.suppress(Exception):  # best effort: the poll merges it soon
            await rooms.sync_rooms([path], None)
    # The agent whose code calls back is held to its agent type's tool limits here too.
    tools = host.running_tools.get(WORKING_ON.get() or "", host.tools)
    outcome = await tools.call(tool, args, ctx)
    if rooms is not None:
        with contextlib.suppress(Exception):
            await rooms.flush_rooms(0)
    assert host.store is not None
    # Code a subagent runs calls back on its behalf (its worker's context says which).
    await record_action(
        host.store,
        host.session_id,
        tool,
        outcome,
        args,
        host.current_message_id,
        "loopback",
        WORKING_ON.get() or None,
        call_id=ctx.call_id,
    )
    return outcome.output
