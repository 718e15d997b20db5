"""What a lifecycle hook is: a class with some of four async methods, and what they receive
and answer. Extensions publish hooks through the ``think_kernel.extensions`` entry points:

    class NoRm(Hook):
        name = "no-rm"

        async def before_tool(self, call: ToolUse) -> ToolVerdict | None:
            if call.tool == "bash" and "rm -rf" in str(call.arguments.get("command")):
                return ToolVerdict.block("rm -rf is not allowed in this project")
            return None                       # None: no opinion, the call goes on

    class MyExtension(AgentExtension):
        hooks = [NoRm()]

The four moments, each hook called in the order the extensions were loaded:

- ``before_model(ModelCall)``: before each model call; a :class:`ModelChange` adds context
  (appended to the system message of that call only) or changes the role of that call.
- ``before_tool(ToolUse)``: before a tool call (and before its approval); a
  :class:`ToolVerdict` allows it, blocks it with a reason the model sees, or rewrites its
  input (the rewritten input is what a person approves and what runs).
- ``after_tool(ToolUse, ToolOutput)``: after the call; a :class:`ResultChange` annotates the
  result (a note appended) or replaces its text.
- ``run_end(RunEnd)``: when a run of the session or of one of its subagents ends (answered,
  failed or stopped by a limit; ``task_id`` names the subagent).

A method a hook does not define costs nothing; one that raises or runs past its time
(``c.HooksConfig.hook_timeout``) is skipped, logged and written to the action log, and the run
goes on (:mod:`.runner`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..tools.base import ToolOutput


@dataclass(frozen=True)
class ModelCall:
    """A model call about to be made."""

    session_id: str
    #: 1 for the first step of the run.
    step: int
    #: ``primary``, ``fast`` (a subagent), ``vision``...
    role: str
    model: str
    #: The request that started the run (what the person asked).
    request: str
    #: The session's workspace folder (absolute).
    workspace: str = ""


@dataclass(frozen=True)
class ModelChange:
    """A hook's change to one model call: context to append, a role to use instead."""

    context: str = ""
    role: str = ""


@dataclass(frozen=True)
class ToolUse:
    """A tool call: its tool and arguments (parsed; the raw text if they are not JSON)."""

    session_id: str
    call_id: str
    tool: str
    arguments: Any = field(default_factory=dict)
    #: The session's workspace folder (absolute).
    workspace: str = ""


@dataclass(frozen=True)
class ToolVerdict:
    """A hook's word on a tool call: ``allow``, ``block`` (with a reason) or ``rewrite``."""

    action: str
    reason: str = ""
    arguments: dict[str, Any] | None = None

    @classmethod
    def allow(cls) -> ToolVerdict:
        """Let the call go on (the next hooks still have their say)."""
        return cls("allow")

    @classmethod
    def block(cls, reason: str) -> ToolVerdict:
        """Do not run the call; the model sees ``reason`` as its result."""
        return cls("block", reason=reason)

    @classmethod
    def rewrite(cls, arguments: dict[str, Any], reason: str = "") -> ToolVerdict:
        """Run the call with these arguments instead."""
        return cls("rewrite", reason=reason, arguments=dict(arguments))


@dataclass(frozen=True)
class ResultChange:
    """A hook's change to a tool result: a note appended, or a text replacing it."""

    note: str = ""
    replace: str | None = None


@dataclass(frozen=True)
class RunEnd:
    """A run that ended: ``complete`` (answered), ``failed`` or ``stopped``."""

    session_id: str
    status: str
    #: The final answer ("" when there is none).
    answer: str = ""
    error: str = ""
    #: The task id when a subagent's run ended ("" for the session's own run).
    task_id: str = ""


class Hook:
    """A lifecycle hook: subclass and define the methods you need (see the module doc)."""

    #: Shown in logs and the action log; the class name when empty.
    name: ClassVar[str] = ""
    #: Seconds one call of this hook may take (None: ``c.HooksConfig.hook_timeout``).
    timeout: ClassVar[float | None] = None

    async def before_model(self, call: ModelCall) -> ModelChange | None:
        """Before a model call: None, or context to add and a role to use."""
        return None

    async def before_tool(self, call: ToolUse) -> ToolVerdict | None:
        """Before a tool call: None (no opinion), or allow, block or rewrite."""
        return None

    async def after_tool(self, call: ToolUse, output: ToolOutput) -> ResultChange | None:
        """After a tool call: None, or a note to append or a text to replace the result."""
        return None

    async def run_end(self, run: RunEnd) -> None:
        """When a run ends."""
        return None


def hook_name(hook: object) -> str:
    """The name a hook is logged under."""
    return str(getattr(hook, "name", "") or type(hook).__name__)
