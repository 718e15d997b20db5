"""Context compaction, the pure part: which rows to summarise, and what the summarizer reads.

    plan = plan_compaction(rows, sizes, keep_tokens=1200, pinned=None)
    chunks = summary_chunks(plan.span, budget_tokens=6000)
    for chunk in chunks:
        messages = summary_request(previous_summary, chunk, words=300)
        previous_summary = <the summarizer's answer>

Rules: the first user request of the session stays verbatim (``pinned``); the
recent tail stays verbatim, at most ``keep_tokens`` but never less than the last step; a tail
never starts with a tool result (an assistant turn keeps its results); tool results inside the
compacted span reach the summarizer as their short summaries, not their whole text. Each new
summary folds in the previous one, so the model always gets exactly one summary.
Non-destructive: rows are only read; the loop stores the summary as a new ``summary`` row.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .tokens import estimate_text

# Per message of the transcript the summarizer reads; longer texts are cut in the middle.
TRANSCRIPT_CHARS = 2_000
SUMMARY_SYSTEM = """\
You compact the history of a working session between a user and Think, a coding agent in \
Jupyter, so that the agent can continue the work knowing only your summary and the most \
recent messages.

Write a summary of at most {words} words, in Markdown, covering:
- the user's goals, requests and constraints (quote exact wording where it matters);
- what was done: files created or changed, commands and code run, their results, errors and \
how they were resolved;
- facts needed later: names, paths, column names, values, settings, decisions;
- what is still open or was about to happen next.
Keep what the earlier summary says unless newer messages replace it. Do not invent anything. \
Answer with the summary only."""


@dataclass(frozen=True)
class Plan:
    """What to compact: ``span`` goes to the summarizer, ``tail`` stays verbatim."""

    pinned: dict[str, Any] | None
    span: list[dict[str, Any]]
    tail: list[dict[str, Any]]
    tail_sizes: list[int]


def plan_compaction(
    rows: Sequence[dict[str, Any]],
    sizes: Sequence[int],
    keep_tokens: int,
    pinned: dict[str, Any] | None,
) -> Plan | None:
    """Split the visible rows (those after the pinned request and the summary) into a span
    to summarise and a tail to keep; None when there is nothing to compact."""
    rows, sizes = list(rows), list(sizes)
    if pinned is None:
        first = next((i for i, r in enumerate(rows) if r.get("role") == "user"), None)
        if first is not None:
            pinned = rows.pop(first)
            sizes.pop(first)
    cut = len(rows)
    acc = 0
    for j in range(len(rows) - 1, -1, -1):
        acc += sizes[j]
        if rows[j].get("role") not in ("user", "assistant"):
            continue  # a tail starts with a request or an assistant turn, never a result
        if acc <= keep_tokens or cut == len(rows):
            cut = j
            if acc > keep_tokens:
                break  # the last step alone is over the budget: keep it, nothing more
        else:
            break
    span = rows[:cut]
    if not any(r.get("seq") is not None for r in span):
        return None
    return Plan(pinned, span, rows[cut:], sizes[cut:])


def _clip_middle(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]} [... {len(text) - 2 * half} chars ...] {text[-half:]}"


def _short_args(arguments: Any) -> str:
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{}")
        except json.JSONDecodeError:
            return _clip_middle(arguments, 200)
    return _clip_middle(json.dumps(arguments, default=str), 200)


def transcript_line(row: dict[str, Any]) -> str:
    """One stored row as the summarizer reads it (tool results by their summaries)."""
    role = row.get("role")
    content = str(row.get("content") or "")
    if role == "user":
        names = [
            str(a.get("name") or a.get("path") or a.get("kind"))
            for a in row.get("attachments") or []
            if isinstance(a, dict)
        ]
        extra = f" [attached: {', '.join(names)}]" if names else ""
        return f"User: {_clip_middle(content, TRANSCRIPT_CHARS)}{extra}"
    if role == "assistant":
        lines = [f"Assistant: {_clip_middle(content, TRANSCRIPT_CHARS)}"] if content else []
        for call in row.get("tool_calls") or []:
            if isinstance(call, dict):
                args = _short_args(call.get("arguments", call.get("input", "")))
                lines.append(f"Assistant called {call.get('name', '?')}({args})")
        return "\n".join(lines) or "Assistant: (no text)"
    if role == "tool":
        outcome = "failed" if row.get("ok") is False or row.get("error") else "ok"
        summary = str(row.get("result_summary") or "").strip()
        if not summary:
            first = content.strip().splitlines()[0] if content.strip() else "(empty)"
            summary = _clip_middle(first, 200)
        error = f"; error: {_clip_middle(str(row['error']), 300)}" if row.get("error") else ""
        return f"Result of {row.get('name') or 'tool'} ({outcome}): {summary}{error}"
    return ""


def summary_chunks(span: Sequence[dict[str, Any]], budget_tokens: int) -> list[list[str]]:
    """The span's transcript, cut into pieces the summarizer can read in one call each."""
    chunks: list[list[str]] = [[]]
    used = 0
    for row in span:
        line = transcript_line(row)
        if not line:
            continue
        size = estimate_text(line) + 2
        if chunks[-1] and used + size > budget_tokens:
            chunks.append([])
            used = 0
        chunks[-1].append(line)
        used += size
    return [c for c in chunks if c]


def summary_request(previous: str, lines: Sequence[str], words: int) -> list[dict[str, Any]]:
    """The chat messages of one summarizer call."""
    body = "\n\n".join(lines)
    earlier = previous.strip() or "(none yet)"
    return [
        {"role": "system", "content": SUMMARY_SYSTEM.format(words=words)},
        {
            "role": "user",
            "content": f"Earlier summary:\n{earlier}\n\nNew messages to fold in:\n\n{body}",
        },
    ]


def fallback_summary(previous: str, lines: Sequence[str], max_chars: int) -> str:
    """A summary without a model (the summarizer failed): the newest lines that fit."""
    head = "(Summarizer unavailable: an abbreviated log of the compacted messages.)"
    kept: list[str] = []
    room = max_chars - len(head) - len(previous) - 4
    for line in reversed(lines):
        line = _clip_middle(line, 400)
        if room - len(line) - 1 < 0:
            break
        kept.append(line)
        room -= len(line) + 1
    parts = [head, previous.strip(), "\n".join(reversed(kept))]
    return "\n\n".join(p for p in parts if p)


def summary_words(room_tokens: int) -> int:
    """How long a summary may be: a fifth of the room for history, 40 to 1,500 words."""
    return max(40, min(1_500, room_tokens // 5 * 3 // 4))
