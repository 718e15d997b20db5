"""One subagent's run: a focused prompt, its own context, the parent's tools through the parent.

    outcome = await run_subagent(host, job)   # job: the task, the instructions, a stream

The subagent is the same agent loop as the parent (:class:`~think_kernel.agent.loop.Agent`)
with: the ``fast`` model role; a system prompt that is the parent's plus what a subagent is
for; the task and the instructions as its request; the parent's tools minus the task and
subagent tools (no recursion); the parent's store seen through a :class:`.FacetStore` (its
messages carry the facet ``subagent:<task id>``, its action-log rows the task id); the
parent's approval gate tagged with the task id; its own warm Python worker in the session's
sandbox (:class:`.SandboxWorker`). Its events go to the parent's clients through a
:class:`.SubagentStream`.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..agent.events import Chat, ErrorEvent, Event, ToolCall, Usage
from ..agents.limits import limited
from ..hooks import RunEnd
from ..hooks.runner import HookRunner
from ..tools.base import ToolContext, ToolRegistry
from .facet import WORKING_ON, FacetStore, SandboxWorker
from .stream import SubagentStream

if TYPE_CHECKING:
    from ..agent.loop import Agent
    from ..agents import SessionAgents
    from ..approvals import ApprovalGate
    from ..approvals.session import SessionApprovals
    from ..store import Store

#: Tools only the parent has: a subagent works on its task, it does not plan or delegate,
#: and it never runs code in the user's own kernel (its Python worker is its own).
PARENT_ONLY = {
    "run_in_kernel",
    "create_subtask",
    "list_tasks",
    "complete_task",
    "fail_task",
    "cancel_task",
    "delegate_to_subagent",
    "check_subagent_status",
    "wait_for_subagents",
}

SUBAGENT_PROMPT = """\
# You are a subagent
The agent working on the user's request gave you one task of it. Other subagents may work on
other tasks at the same time, in the same workspace: change only what your task needs. Your
Python worker (execute_code) is your own. Nobody can answer questions: decide sensibly and
say what you assumed. When you are done, reply with the result for the agent that delegated
the task (what you found or did, files you changed, anything left open) in a few sentences;
the user does not see your reply directly.
"""


class Host(Protocol):
    """What a subagent uses of the parent runtime."""

    store: Store | None
    tools: ToolRegistry
    gate: ApprovalGate | None
    agents: SessionAgents
    approvals: SessionApprovals
    #: The tools each running agent may call, by task id (its sandboxed code's calls back).
    running_tools: dict[str, ToolRegistry]
    #: The session's lifecycle hooks (a subagent's run end is told to them too).
    hooks: HookRunner

    @property
    def sandbox(self) -> Any:
        """The session's sandbox once it has started (None before)."""

    def make_agent(self, props: dict[str, Any], **overrides: Any) -> Agent:
        """The agent loop of this runtime, with some parts replaced."""

    def make_context(self, message_id: str, call_id: str) -> ToolContext:
        """The context of one tool call."""

    async def ensure_sandbox(self) -> Any:
        """The session's sandbox (started on first use)."""

    async def props(self) -> dict[str, Any]:
        """The session's options."""

    def model_name(self, props: dict[str, Any], role: str = "primary") -> str:
        """The model of a role."""

    def system_prompt(self, props: dict[str, Any]) -> str:
        """The parent's system prompt."""


@dataclass
class Job:
    """One subagent's work: its task, its request, where its events go."""

    session_id: str
    task: dict[str, Any]
    instructions: str
    stream: SubagentStream
    max_steps: int = 20
    inputs: list[dict[str, Any]] = field(default_factory=list)  # finished dependencies
    worker: SandboxWorker | None = None
    steps: int = 0
    tool_calls: int = 0
    #: Its agent type ("": the session's).
    agent: str = ""


@dataclass
class Outcome:
    """How a subagent's loop ended: its answer, or the error that stopped it."""

    result: str | None = None
    error: str | None = None
    code: str = "error"


def request_text(job: Job) -> str:
    """The subagent's request: its task, the instructions, what its dependencies found."""
    task = job.task
    parts = [f"# Task {task['id']}: {task['title']} ({task['type']})"]
    if task.get("description"):
        parts.append(str(task["description"]))
    parts.append(f"## Instructions\n{job.instructions.strip()}")
    if job.inputs:
        lines = [
            f"- {d['title']} ({d['id']}): {d.get('result') or '(no result)'}" for d in job.inputs
        ]
        parts.append("## Results of the tasks this one depends on\n" + "\n".join(lines))
    return "\n\n".join(parts)


def tools_for_subagent(tools: ToolRegistry) -> ToolRegistry:
    """The parent's tools without the planning and delegating ones."""
    out = ToolRegistry()
    for name, tool in tools.tools.items():
        if name not in PARENT_ONLY:
            out.add(tool, core=name in tools.core)
    return out


async def run_subagent(host: Host, job: Job) -> Outcome:
    """Run the subagent's loop to its end; every event goes to ``job.stream``."""
    assert host.store is not None
    task_id = str(job.task["id"])
    WORKING_ON.set(task_id)  # this task's context only: its children inherit it
    props = await host.props()
    # Never more tools than the parent's type allows; its own type limits them further.
    parent = limited(host.tools, host.agents.of(props))
    gate = host.gate.for_task(task_id) if host.gate is not None else None
    if job.agent:
        props = {**props, "agent": job.agent}
        mode = host.agents.find(job.agent).approval_policy
        if mode and host.gate is not None:  # its calls ask as its type says
            gate = host.gate.for_task(task_id, functools.partial(host.approvals.policy, mode))
    store = FacetStore(host.store, task_id)
    agent = host.make_agent(
        props,
        store=store,
        tools=tools_for_subagent(parent),
        gate=gate,
        system=host.system_prompt(props) + "\n" + SUBAGENT_PROMPT,
        step_role="fast",
        max_steps=job.max_steps,
    )

    async def ensure_worker() -> SandboxWorker:
        if job.worker is None:
            job.worker = SandboxWorker(await host.ensure_sandbox(), task_id)
        return job.worker

    def make_context(message_id: str, call_id: str) -> ToolContext:
        ctx = host.make_context(message_id, call_id)
        ctx.store = store
        if host.sandbox is not None:
            ctx.sandbox = job.worker = job.worker or SandboxWorker(host.sandbox, task_id)
        else:
            ctx.sandbox = None
        ctx.services = dataclasses.replace(ctx.services, sandbox=ensure_worker)
        return ctx

    outcome = Outcome()
    stopped = False
    event: Event
    host.running_tools[task_id] = agent.tools
    try:
        async for event in agent.run(job.session_id, request_text(job), make_context):
            await job.stream.feed(event)
            if isinstance(event, ToolCall):
                job.tool_calls += 1
            elif isinstance(event, Chat):
                outcome.result = event.content
            elif isinstance(event, ErrorEvent):
                outcome.error, outcome.code = event.message, "error"
                stopped = event.code == "step_limit"
            elif isinstance(event, Usage) and event.purpose == "step":
                job.steps += 1
    finally:
        host.running_tools.pop(task_id, None)
    await job.stream.close()
    if outcome.result is None and outcome.error is None:
        outcome.error = "the subagent stopped without an answer"
    # A subagent's run ends as a session's does: hooks see it (its task id says whose).
    status = "complete" if outcome.result is not None else "stopped" if stopped else "failed"
    await host.hooks.run_end(
        RunEnd(job.session_id, status, outcome.result or "", outcome.error or "", task_id)
    )
    return outcome
