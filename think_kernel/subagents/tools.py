"""Subagent tools: delegate a task to a subagent that works in parallel, watch it, wait.

``delegate_to_subagent`` returns at once; several delegations in one step run at the same
time. ``check_subagent_status`` tells what each is doing; ``wait_for_subagents`` waits for
them and gives their results (call it in a later step than the delegations).
"""

from __future__ import annotations

import json
from typing import Any

from ..tasks.graph import TaskError
from ..tasks.tools import manager
from ..tools.base import ToolContext, ToolError, ToolFunc, ToolOutput, optional


def _report(states: list[dict[str, Any]]) -> str:
    return "\n".join(json.dumps(s, ensure_ascii=False, default=str) for s in states) or (
        "No subagents in this request."
    )


@optional
async def delegate_to_subagent(
    ctx: ToolContext,
    task: str,
    instructions: str,
    timeout: float = 0,  # noqa: ASYNC109 (the subagent's limit, not our await)
    agent: str = "",
) -> ToolOutput:
    """Start a subagent on a task: it works in parallel (own context and Python worker, your
    tools) and this returns at once; wait_for_subagents gives its result (subagents still
    running when you answer are stopped).

    Args:
        task: a task id or name (create_subtask), or the title of a new task
        instructions: self-contained: what to do and report
        timeout: seconds (default and most: 600)
        agent: an agent type (explorer: reads only; reviewer: reads, runs tests); default yours
    """
    sub = manager(ctx)
    try:
        handle = await sub.delegate(
            task,
            instructions,
            timeout=timeout or None,
            message_id=ctx.message_id or None,
            agent=agent.strip(),
        )
    except TaskError as e:
        raise ToolError(str(e), "CANNOT_DELEGATE") from None
    kind = f" as a {handle.job.agent} agent" if handle.job.agent else ""
    text = (
        f"Subagent started on task {handle.task_id} ({handle.job.task['title']}){kind} with "
        f"model {handle.model}. Call wait_for_subagents for its result."
    )
    return ToolOutput(text, summary=f"delegated {handle.task_id}")


@optional
async def check_subagent_status(ctx: ToolContext, task_ids: tuple[str, ...] = ()) -> ToolOutput:
    """What each subagent is doing (status, steps, latest text) or found.

    Args:
        task_ids: default: all of this request
    """
    states = await manager(ctx).status(list(task_ids))
    running = sum(1 for s in states if s.get("status") == "running")
    return ToolOutput(_report(states), summary=f"{running}/{len(states)} running")


@optional
async def wait_for_subagents(
    ctx: ToolContext,
    task_ids: tuple[str, ...] = (),
    timeout: float = 0,  # noqa: ASYNC109 (the model's bound on the wait)
) -> ToolOutput:
    """Wait (in a step after the delegations) until subagents end; returns their results.

    Args:
        task_ids: default: all of this request
        timeout: seconds at most (default: until they end)
    """

    async def progress(line: str) -> None:
        await ctx.progress(line)

    states = await manager(ctx).wait(list(task_ids), timeout or None, progress)
    done = [s for s in states if s.get("status") != "running"]
    ok = all(s.get("status") == "complete" for s in done)
    summary = f"{len(done)}/{len(states)} ended" + ("" if ok else ", not all complete")
    return ToolOutput(_report(states), summary=summary)


SUBAGENT_TOOLS: list[ToolFunc] = [delegate_to_subagent, check_subagent_status, wait_for_subagents]
