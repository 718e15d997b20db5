"""One step's tool calls: approvals, concurrent runs, stored results, the action log.

    results: dict[str, dict] = {}
    async for event in run_tool_calls(tools, store, gate, sid, mid, calls, results, ctx, caller):
        yield event                       # ToolCall, ToolProgress..., ToolResult

Several calls of a step run at once; their events are yielded as they happen. A tool output
too large for the model reaches it as a summary and excerpts (:mod:`.outputs`); the whole of it
is stored with the tool message.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from ..hooks.spec import ToolUse
from ..tools.base import CallOutcome, ToolContext, ToolOutput, ToolRegistry
from ..tools.summarize import needs_whole, summarize_input, summarize_output
from .calls import ModelCaller
from .events import Event, ToolCall, ToolResult
from .outputs import model_view

if TYPE_CHECKING:
    from ..approvals import ApprovalGate
    from ..hooks import HookRunner
    from .stores import AgentStore, RunLog

ContextFactory = Callable[[str, str], ToolContext]
"""(message_id, call_id) -> the ToolContext for one call."""


async def run_tool_calls(
    tools: ToolRegistry,
    store: AgentStore,
    gate: ApprovalGate | None,
    session_id: str,
    mid: str,
    calls: list[dict[str, Any]],
    results: dict[str, dict[str, Any]],
    make_context: ContextFactory,
    caller: ModelCaller,
    *,
    summarize: bool = True,
    hooks: HookRunner | None = None,
) -> AsyncIterator[Event]:
    """Run one step's calls concurrently (each after its approval, if the gate asks for one);
    yield their calls, progress and results as they happen, and fill ``results`` (call id ->
    stored tool message) for the model's next request. ``hooks`` see each call before its
    approval (allow, block, rewrite) and its result after it."""
    queue: asyncio.Queue[Event | None] = asyncio.Queue()
    for c in calls:
        yield ToolCall(c["id"], c["name"], parsed_arguments(c["arguments"]), message_id=mid)

    async def one(call: dict[str, Any]) -> None:
        ctx = make_context(mid, call["id"])
        ctx.emit = queue.put_nowait
        arguments: Any = call["arguments"]
        outcome: CallOutcome | None = None
        where = hooks.workspace if hooks is not None else ""
        use = ToolUse(session_id, call["id"], call["name"], parsed_arguments(arguments), where)
        if hooks is not None and hooks.has("before_tool"):
            decided = await hooks.before_tool(use)
            if decided.blocked_by:
                # The model sees the hook's reason as the result of the call.
                text = decided.refusal(call["name"])
                out = ToolOutput(text=text, summary="blocked by a hook", ok=False, error=text)
                args = decided.arguments if isinstance(decided.arguments, dict) else None
                outcome = CallOutcome(out, 0.0, args)
            elif decided.rewritten:
                arguments = decided.arguments  # what a person approves and what runs
                use = ToolUse(session_id, call["id"], call["name"], arguments, where)
        if outcome is None and gate is not None and call["name"] in tools:  # unknown: below
            decision = await gate.check(
                session_id,
                mid,
                call["id"],
                call["name"],
                arguments,
                ctx.workspace,
                queue.put_nowait,
            )
            if decision is not None and decision.answer is not None:
                # A question (ask_user): the person's answer is the call's result.
                parsed = parsed_arguments(arguments)
                out = ToolOutput(text=decision.answer, summary="answered")
                outcome = CallOutcome(out, 0.0, parsed if isinstance(parsed, dict) else None)
            elif decision is not None and not decision.approved:
                # The model sees the person's reason as the result of the call.
                text = decision.rejection_text(call["name"])
                parsed = parsed_arguments(arguments)
                out = ToolOutput(text=text, summary="rejected", ok=False, error=text)
                outcome = CallOutcome(out, 0.0, parsed if isinstance(parsed, dict) else None)
            elif decision is not None and decision.input is not None:
                arguments = decision.input  # approved with edited arguments
        if outcome is None:
            outcome = await tools.call(call["name"], arguments, ctx)
        if hooks is not None and hooks.has("after_tool"):
            outcome.output = await hooks.after_tool(use, outcome.output)
        out = outcome.output
        whole = out.full if out.full is not None else out.text
        text, usage = await model_view(
            out.text,
            whole,
            caller,
            summarize=summarize,
            tool=call["name"],
            message_id=mid,
        )
        if usage is not None:
            queue.put_nowait(usage)
        summary = summarize_output(out.text, out.summary)
        extra: dict[str, Any] = {}
        if needs_whole(text, whole):
            # The model saw less than all of it: keep the whole output.
            extra["output_blob"] = await store.save_blob(whole.encode("utf-8"))
            extra["output_size"] = len(whole)
        images = stored_images(out.display)
        if images:
            # A reloaded chat shows them again (GET .../messages/{id}/attachments/{n}).
            extra["attachments"] = images
        row = await store.add_message(
            session_id,
            "tool",
            text,
            tool_call_id=call["id"],
            name=call["name"],
            result_summary=summary,
            parent_id=mid,
            status="complete",
            duration_ms=round(outcome.duration_ms, 3),
            ok=int(out.ok),
            error=out.error or None,
            **extra,
        )
        # In memory the model's text stays whole (the stored row may hold a preview).
        results[call["id"]] = {**row, "content": text}
        await record_action(
            store, session_id, call["name"], outcome, call["arguments"], mid, call_id=call["id"]
        )
        queue.put_nowait(
            ToolResult(
                call["id"],
                call["name"],
                text,
                round(outcome.duration_ms, 3),
                out.ok,
                summary=summary,
                display=out.display,
                result_id=row["id"],
                full_size=int(extra.get("output_size") or 0),
            )
        )

    async def all_calls() -> None:
        try:
            async with asyncio.TaskGroup() as tg:
                for c in calls:
                    tg.create_task(one(c))
        finally:
            queue.put_nowait(None)

    runner = asyncio.ensure_future(all_calls())
    try:
        while (event := await queue.get()) is not None:
            yield event
        await runner  # re-raise a failure of the store, if any
    finally:
        if not runner.done():
            runner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await runner


async def record_action(
    store: RunLog,
    session_id: str,
    tool: str,
    outcome: CallOutcome,
    raw_args: Any,
    message_id: str,
    via: str = "",
    task_id: str | None = None,
    call_id: str | None = None,
) -> str:
    """Write one action-log row for a tool call (summaries only, never whole content);
    ``task_id``: a subagent's call, made for that task; ``call_id``: the call's id (the
    files it changed are its checkpoint steps of that id, undone from this row)."""
    out = outcome.output
    action = out.summary.split(":")[0] if out.summary else tool
    return await store.log_action(
        session_id=session_id,
        tool=tool,
        action=f"{via}: {action}" if via else action,
        input_summary=summarize_input(tool, outcome.args, raw_args),
        output_summary=summarize_output(out.text, out.summary),
        duration_ms=round(outcome.duration_ms, 3),
        success=out.ok,
        error=out.error or None,
        message_id=message_id or None,
        **({"task_id": task_id} if task_id else {}),
        **({"call_id": call_id} if call_id else {}),
    )


def stored_images(display: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Attachments for a tool message: the images of its display bundles that the store keeps
    (a screenshot's ``think.blob``), with the page they show."""
    out: list[dict[str, Any]] = []
    for bundle in display or []:
        meta = bundle.get("think") if isinstance(bundle, dict) else None
        if not isinstance(meta, dict) or not isinstance(meta.get("blob"), str):
            continue
        mime = next((m for m in ("image/png", "image/jpeg") if m in bundle), "image/png")
        item = {"kind": "image", "blob": meta["blob"], "mime": mime, "name": meta.get("url") or ""}
        if isinstance(meta.get("thumbnail"), str):
            item["thumbnail"] = meta["thumbnail"]
        out.append(item)
    return out


def parsed_arguments(arguments: str) -> Any:
    """The model's arguments as JSON, or the raw text when they are not JSON."""
    try:
        return json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return arguments
