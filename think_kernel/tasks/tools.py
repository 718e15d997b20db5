"""Task tools: the model plans a request as a tree of tasks the user watches.

``create_subtask``, ``list_tasks``, ``complete_task``, ``fail_task``, ``cancel_task``. They
work on the running request's tasks (its root is made when the request starts) through
``ctx.services.subagents`` (:class:`~think_kernel.subagents.manager.Subagents`), whose
board writes the store and emits ``task_created`` / ``task_updated``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from ..tools.base import ToolContext, ToolError, ToolFunc, ToolOutput, optional
from .graph import TaskError

if TYPE_CHECKING:
    from ..subagents.manager import Subagents

TaskType = Literal["explore", "code", "test", "review", "plan", "fix"]


def manager(ctx: ToolContext) -> Subagents:
    """The runtime's tasks and subagents, with a request running; ToolError otherwise."""
    found = ctx.services.subagents
    if found is None or found.root_id is None:
        raise ToolError("tasks are only available while a request runs", "NO_TASKS")
    return found


async def mine(ctx: ToolContext, task_id: str) -> dict[str, Any]:
    """A task of the running request (ToolError for another request's or an unknown id)."""
    sub = manager(ctx)
    assert sub.root_id is not None
    tasks = await sub.board.request_tasks(sub.root_id)
    wanted = sub.board.resolve(sub.root_id, task_id)
    for task in tasks:
        if task["id"] == wanted:
            return task
    known = ", ".join(t["id"] for t in tasks) or "none"
    raise ToolError(f"no task {task_id!r} in this request (its tasks: {known})", "NO_TASK")


def task_line(task: dict[str, Any]) -> str:
    """One task for the model: id, status, type, title, and what it waits for or found."""
    line = f"{'  ' * max(0, task['depth'] - 1)}- {task['id']} [{task['status']}] ({task['type']}) "
    line += task["title"]
    if task["dependencies"]:
        line += f" · after {', '.join(task['dependencies'])}"
    agent = task.get("subagent")
    if agent:
        line += f" · subagent {agent['status']}"
    note = task.get("result") if task["status"] == "complete" else task.get("error")
    if note:
        text = " ".join(str(note).split())
        line += f" · {text[:200]}{'…' if len(text) > 200 else ''}"
    return line


@optional
async def create_subtask(
    ctx: ToolContext,
    title: str,
    description: str = "",
    type: TaskType = "code",
    parent_id: str = "",
    dependencies: tuple[str, ...] = (),
    name: str = "",
) -> ToolOutput:
    """Add a task to this request's plan (a tree the user watches); returns its id.

    Args:
        title: a few words
        description: details you or a subagent need
        parent_id: default: the request itself
        dependencies: tasks (ids or names) to complete first
        name: short, unique in this request; usable as its id
    """
    sub = manager(ctx)
    assert sub.root_id is not None
    try:
        task = await sub.board.create(
            sub.root_id,
            title=title,
            type=type,
            description=description,
            parent_id=parent_id or None,
            dependencies=dependencies,
            message_id=ctx.message_id or None,
            name=name or None,
        )
    except TaskError as e:
        raise ToolError(str(e), "INVALID_TASK") from None
    state = "blocked until its dependencies complete" if task["status"] == "blocked" else "pending"
    return ToolOutput(f"Created task {task['id']} ({state}).", summary=f"created {task['id']}")


@optional
async def list_tasks(ctx: ToolContext) -> ToolOutput:
    """List this request's tasks: ids, status, dependencies, results."""
    sub = manager(ctx)
    assert sub.root_id is not None
    tasks = await sub.board.request_tasks(sub.root_id)
    root, rest = tasks[0], tasks[1:]
    head = f"Request {root['id']}: {root['title']} ({root['progress']:.0%} done)"
    body = "\n".join(task_line(t) for t in rest) or "No subtasks yet (create_subtask adds one)."
    return ToolOutput(f"{head}\n{body}", summary=f"{len(rest)} tasks")


@optional
async def complete_task(ctx: ToolContext, task_id: str, result: str = "") -> ToolOutput:
    """Mark a task complete with its result; tasks waiting on it can start.

    Args:
        result: what was done or found, briefly
    """
    return await _finish(ctx, task_id, "complete", result)


@optional
async def fail_task(ctx: ToolContext, task_id: str, error: str) -> ToolOutput:
    """Mark a task failed, saying why (its open subtasks are cancelled)."""
    return await _finish(ctx, task_id, "fail", error)


@optional
async def cancel_task(ctx: ToolContext, task_id: str, reason: str = "") -> ToolOutput:
    """Cancel a task and its open subtasks (its subagent is stopped)."""
    return await _finish(ctx, task_id, "cancel", reason)


async def _finish(ctx: ToolContext, task_id: str, how: str, text: str) -> ToolOutput:
    task = await mine(ctx, task_id)
    sub = manager(ctx)
    if how != "complete":
        await sub.cancel(task["id"], text or f"its task was {how}ed")  # stop its subagent
    try:
        if how == "complete":
            done = await sub.board.complete(task["id"], text or None)
        elif how == "fail":
            done = await sub.board.fail(task["id"], text or None)
        else:
            done = await sub.board.cancel(task["id"], text or None)
    except TaskError as e:
        raise ToolError(str(e), "INVALID_TASK") from None
    assert sub.root_id is not None
    tasks = await sub.board.request_tasks(sub.root_id)
    freed = [t["id"] for t in tasks if task["id"] in t["dependencies"] and t["status"] == "pending"]
    note = f"; now ready: {', '.join(freed)}" if freed else ""
    return ToolOutput(
        f"Task {done['id']} is {done['status']}{note}.", summary=f"{done['id']} {done['status']}"
    )


TASK_TOOLS: list[ToolFunc] = [create_subtask, list_tasks, complete_task, fail_task, cancel_task]
