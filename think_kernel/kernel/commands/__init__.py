"""The ``%think_*`` commands, shared by the think kernel and the ``%think`` magics.

    reply = await run_command(runtime, "think_session", "new")
    reply.markdown        # what to show in the cell
    reply.session_changed # True when the kernel should remember the new session id

Each command is a small async function over a :class:`~think_kernel.runtime.Runtime`; they
return Markdown and never raise for user mistakes (a :class:`CommandError` carries the message).
One module per group: :mod:`.sessions`, :mod:`.settings`, :mod:`.status`, :mod:`.outputs`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from .agents import think_agent
from .apps import think_serve
from .memory import think_memory
from .outputs import think_output, think_tasks, whole_output_markdown
from .reply import CommandError, CommandReply
from .review import think_review
from .rewind import think_checkpoints, think_rewind
from .sessions import think_attach, think_session, think_sessions
from .settings import think_approve, think_config, think_instructions, think_model
from .status import think_doctor, think_mcp, think_status, usage_table

HELP = """\
**Think**: type a request in a cell and the agent answers, calling tools as it goes.

| command | does |
|---|---|
| `%%python` / `%%bash` | run the cell's code (sandboxed when a sandbox is available) |
| `%%think_job [NAME]` | the cell's bash as a background job, followed here (Stop: it runs on) |
| `%think_serve [NAME [--port N] -- CMD\\|stop NAME]` | a live app in the sandbox, via the server |
| `%think_session [ID\\|new]` | show, resume or start the agent session |
| `%think_sessions` | list sessions |
| `%think_model [NAME\\|ROLE=NAME]` | this session's models (`fast=`, `summarizer=`, `vision=`) |
| `%think_attach [PATH\\|-]` | attach a file or image to the next request (`-` clears) |
| `%think_output [CALL_ID]` | the whole output of a tool call (the last one by default) |
| `%think_tasks [all]` | the task tree of the last planned request (or all), with progress |
| `%think_instructions [TEXT\\|-]` | extra instructions for this session |
| `%think_config [key=value]` | show or change settings |
| `%think_approve [MODE\\|RULE\\|reset]` | which tool calls wait for your approval |
| `%think_agent [NAME\\|default]` | this session's agent type (its tools, model, instructions) |
| `%think_status` | models, context window, endpoint, sandbox limits, tokens and cost per role |
| `%think_doctor [all]` | try the sandbox's containment here (`jupyter think doctor`) |
| `%think_mcp [refresh]` | MCP servers, their state and tools (`refresh` restarts them) |
| `%think_checkpoints` | the checkpoints of this session (one per request) |
| `%think_rewind [N\\|ID] [--files\\|--conversation\\|--both]` | back to before a request |
| `%think_memory [undo [ID]\\|search WORDS]` | your memory file; undo a note the agent added |
| `%think_review [on\\|off\\|default]` | review mode: the agent's edits become a proposal |

Interrupt (the stop button) cancels a run; the kernel keeps its state."""


async def think_help(rt: Any, arg: str) -> CommandReply:
    """The list of commands."""
    return CommandReply(HELP)


COMMANDS: dict[str, Callable[[Any, str], Awaitable[CommandReply]]] = {
    "think_session": think_session,
    "think_sessions": think_sessions,
    "think_model": think_model,
    "think_instructions": think_instructions,
    "think_config": think_config,
    "think_status": think_status,
    "think_approve": think_approve,
    "think_agent": think_agent,
    "think_attach": think_attach,
    "think_output": think_output,
    "think_tasks": think_tasks,
    "think_doctor": think_doctor,
    "think_mcp": think_mcp,
    "think_help": think_help,
    "think_checkpoints": think_checkpoints,
    "think_rewind": think_rewind,
    "think_memory": think_memory,
    "think_review": think_review,
    "think_serve": think_serve,
}


async def run_command(rt: Any, name: str, arg: str) -> CommandReply:
    """Run ``%name arg``; raises CommandError (unknown command, bad argument)."""
    func = COMMANDS.get(name)
    if func is None:
        known = ", ".join(f"%{n}" for n in COMMANDS)
        raise CommandError(f"unknown magic `%{name}`; known: {known}, %%python, %%bash.")
    return await func(rt, arg)


__all__ = [
    "COMMANDS",
    "CommandError",
    "CommandReply",
    "run_command",
    "usage_table",
    "whole_output_markdown",
]
