"""A tool call from another agent (Think's MCP endpoint), run by a session's runtime.

The server extension's ``/api/think/mcp`` sends each call over the kernel link to the think
kernel of the client's session; there it runs as a model's call would: the approval policy
(the call waits for a decision from the sidebar or the API), the tools' one-truth rules
(edits through the rooms, disk flushed before and merged after sandboxed runs), the action
log, and the events every tab of the session sees. The session's history reads as a
transcript: an assistant step naming the call, then its result.

    output = await serve_call(runtime, "insert_cell", {"path": ..., ...}, call_id, "claude-code")
    # {"text": ..., "ok": True, "error": "", "display": [...]}
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from typing import Any

from ..agent.events import StatusEvent, ToolCall, ToolResult
from ..agent.toolcalls import record_action, stored_images
from ..store import new_id
from ..tools.base import CallOutcome, ToolOutput
from ..tools.summarize import summarize_output

#: Characters of one output sent back to the client (the whole output is stored).
MAX_TEXT = 1_000_000
MAX_DISPLAY_CHARS = 8 * 1024 * 1024


async def serve_call(
    rt: Any, name: str, arguments: Any, call_id: str = "", client: str = ""
) -> dict[str, Any]:
    """Run one call in the runtime's session; the output as plain JSON for the link."""
    if rt.store is None:
        await rt.start()
    gate = rt.ensure_gate()
    store, sid = rt.store, rt.session_id
    call_id = call_id or new_id("mcp_")
    args = arguments if isinstance(arguments, dict) else {}
    raw = json.dumps(args)
    call = {"id": call_id, "name": name, "arguments": raw}
    step = await store.add_message(sid, "assistant", "", tool_calls=[call], status="complete")
    mid = step["id"]
    await rt.emit(ToolCall(call_id, name, args, message_id=mid))
    ctx = rt.make_context(mid, call_id)
    ctx.emit = rt.emit
    started = time.perf_counter()
    try:
        outcome = await _run(rt, gate, name, args, ctx)
    except asyncio.CancelledError:
        # The client cancelled (or went away): the call is logged as such, then stops.
        text = "the client cancelled the call"
        out = ToolOutput(text=f"Error: {text}", ok=False, error=text)
        cancelled = CallOutcome(out, (time.perf_counter() - started) * 1000, args)
        with contextlib.suppress(Exception):
            await asyncio.shield(_record(rt, name, raw, cancelled, call_id, mid, client))
        raise
    if outcome.args is not None:
        raw = json.dumps(outcome.args, default=str)  # approved with edited arguments
    return await _record(rt, name, raw, outcome, call_id, mid, client)


async def _run(rt: Any, gate: Any, name: str, args: dict[str, Any], ctx: Any) -> CallOutcome:
    """The approval gate, then the tool."""
    sid, mid, call_id = rt.session_id, ctx.message_id, ctx.call_id
    if name in rt.tools:  # an unknown tool is refused by the registry, nothing to approve
        decision = await gate.check(sid, mid, call_id, name, args, ctx.workspace, rt.emit)
        if decision is not None and not decision.approved:
            text = decision.rejection_text(name)
            out = ToolOutput(text=text, summary="rejected", ok=False, error=text)
            return CallOutcome(out, 0.0, args)
        if decision is not None and decision.input is not None:
            args = decision.input
    outcome: CallOutcome = await rt.tools.call(name, args, ctx)
    return outcome


async def _record(
    rt: Any, name: str, raw: str, outcome: CallOutcome, call_id: str, mid: str, client: str
) -> dict[str, Any]:
    """The tool message, the action-log row and the result event; the output for the link."""
    store, sid = rt.store, rt.session_id
    out = outcome.output
    whole = out.full if out.full is not None else out.text
    summary = summarize_output(out.text, out.summary)
    extra: dict[str, Any] = {}
    if len(whole) > MAX_TEXT:
        extra["output_blob"] = await store.save_blob(whole.encode("utf-8"))
        extra["output_size"] = len(whole)
    images = stored_images(out.display)
    if images:
        extra["attachments"] = images
    row = await store.add_message(
        sid,
        "tool",
        whole[:MAX_TEXT],
        tool_call_id=call_id,
        name=name,
        result_summary=summary,
        parent_id=mid,
        status="complete",
        duration_ms=round(outcome.duration_ms, 3),
        ok=int(out.ok),
        error=out.error or None,
        **extra,
    )
    via = f"mcp {client}".strip()
    await record_action(store, sid, name, outcome, raw, mid, via, call_id=call_id)
    await rt.emit(
        ToolResult(
            call_id,
            name,
            out.text,
            round(outcome.duration_ms, 3),
            out.ok,
            summary=summary,
            display=out.display,
            result_id=row["id"],
            full_size=int(extra.get("output_size") or 0),
        )
    )
    await rt.emit(StatusEvent("idle"))
    return {
        "text": whole[:MAX_TEXT],
        "ok": out.ok,
        "error": out.error,
        "display": _images(out.display),
    }


def _images(display: list[dict[str, Any]]) -> list[dict[str, str]]:
    """PNG / JPEG bundles of the output (a figure of ``execute_code``), within a size cap."""
    out: list[dict[str, str]] = []
    used = 0
    for bundle in display or []:
        if not isinstance(bundle, dict):
            continue
        for mime in ("image/png", "image/jpeg"):
            data = bundle.get(mime)
            if isinstance(data, str) and used + len(data) <= MAX_DISPLAY_CHARS:
                out.append({"mime": mime, "data": data})
                used += len(data)
                break
    return out
