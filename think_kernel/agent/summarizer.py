"""Compaction, run: when the next request would pass its share of the window, summarise.

    async for event in compact_if_needed(ctx, caller, store, session_id, parent_id,
                                         role="primary", compact_at=0.8, keep=0.4):
        yield event   # Usage of each summarizer call, then one Compaction

The ``summarizer`` role reads the compacted span (tool results as their summaries, see
:mod:`.compaction`) in pieces that fit its own window, folding each into the running summary.
If it fails, a mechanical summary (the newest lines of the span) takes its place, so a long
session never stops on a summarizer error. The summary is stored as a ``summary`` row; the
rows it covers stay in the store (the sidebar shows them behind a marker).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from .calls import ModelCaller
from .compaction import (
    fallback_summary,
    plan_compaction,
    summary_chunks,
    summary_request,
    summary_words,
)
from .context import ModelContext
from .events import Compaction, Event
from .model import ModelError

if TYPE_CHECKING:
    from .stores import MessageStore


def budget(ctx: ModelContext, caller: ModelCaller, role: str, compact_at: float) -> int:
    """The most (uncalibrated) tokens the next request may have before it is compacted."""
    ratio = caller.calibration.ratio(caller.model(role))
    return int(caller.window(role) * compact_at / ratio)


async def compact_if_needed(
    ctx: ModelContext,
    caller: ModelCaller,
    store: MessageStore,
    session_id: str,
    parent_id: str,
    *,
    role: str,
    compact_at: float,
    keep: float,
    force: bool = False,
) -> AsyncIterator[Event]:
    """Compact ``ctx`` in place when it is over budget (or ``force``); yields the events."""
    limit = budget(ctx, caller, role, compact_at)
    before = ctx.tokens()
    if before <= limit and not force:
        return
    room = max(256, limit - ctx.fixed_tokens)
    keep_tokens = int(room * keep)
    if force:
        keep_tokens //= 2  # the endpoint refused what we thought fit: keep less
    plan = plan_compaction(ctx.rows, ctx.sizes, keep_tokens, ctx.pinned)
    if plan is None:
        ctx.fit(limit)  # nothing older to summarise: cut the largest messages instead
        return
    previous = str((ctx.summary or {}).get("content") or "")
    words = summary_words(room)
    chunk_budget = max(500, int(caller.window("summarizer") * 0.6) - words * 2 - 600)
    summary = previous
    for lines in summary_chunks(plan.span, chunk_budget):
        try:
            text, usage = await caller.complete(
                summary_request(summary, lines, words),
                role="summarizer",
                purpose="compaction",
                message_id=parent_id,
            )
            yield usage
        except ModelError:
            text = ""
        if not text:
            text = fallback_summary(summary, lines, words * 8)
        summary = text[: words * 10]
    meta = _coverage(ctx.summary, plan.span, plan.tail, before)
    row = await store.add_message(
        session_id,
        "summary",
        summary,
        status="complete",
        parent_id=parent_id,
        model=caller.model("summarizer"),
        model_role="summarizer",
        compaction=meta,
    )
    ctx.compacted(row, plan)
    ctx.fit(limit)
    meta["tokens_after"] = ctx.tokens()
    await store.update_message(row["id"], compaction=meta)
    yield Compaction(
        row["id"],
        summary,
        int(meta["count"]),
        str(meta["first_id"]),
        str(meta["tail_id"]),
        int(meta["to_seq"]),
        before,
        ctx.tokens(),
        "summarizer",
        caller.model("summarizer"),
    )


def _coverage(
    previous: dict[str, Any] | None,
    span: list[dict[str, Any]],
    tail: list[dict[str, Any]],
    before: int,
) -> dict[str, Any]:
    """What a new summary covers: everything the previous one did, plus the span."""
    old = dict((previous or {}).get("compaction") or {})
    stored = [r for r in span if r.get("seq") is not None]
    first_id = old.get("first_id") or (stored[0]["id"] if stored else "")
    return {
        "first_id": first_id,
        "tail_id": next((str(r["id"]) for r in tail if r.get("id")), ""),
        "from_seq": old.get("from_seq") or (stored[0]["seq"] if stored else 0),
        "to_seq": max([int(r["seq"]) for r in stored] + [int(old.get("to_seq") or 0)]),
        "count": int(old.get("count") or 0) + len(stored),
        "tokens_before": before,
        "tokens_after": 0,
    }
