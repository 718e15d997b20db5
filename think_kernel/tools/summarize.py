"""Short summaries of tool inputs and outputs for the action log and for large results.

Follows Project Think's style: ``wrote hello.py: 3 lines``, ``exit=0, stdout=1234 chars``.
Large content is summarised, never stored whole in the log.
"""

from __future__ import annotations

import json
from typing import Any

LOG_CHARS = 200
MODEL_CHARS = 30_000


def clip(text: str, limit: int = LOG_CHARS) -> str:
    """Cut text to ``limit`` characters with a note of how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text) - limit} more chars]"


def summarize_input(tool: str, args: dict[str, Any] | None, raw: Any = None) -> str:
    """One line describing a call's arguments (content fields by size, not by value)."""
    if args is None:
        return clip(f"invalid arguments: {raw!r}")
    parts = []
    for key, value in args.items():
        if value is None:
            continue
        if isinstance(value, str) and (len(value) > 80 or "\n" in value):
            lines = value.count("\n") + 1
            parts.append(f"{key}=<{len(value)} chars, {lines} lines>")
        else:
            parts.append(f"{key}={json.dumps(value, default=str)}")
    return clip(", ".join(parts))


def summarize_output(text: str, summary: str = "") -> str:
    """The tool's own summary if it gave one, else the clipped first line(s) of its output."""
    if summary:
        return clip(summary)
    first = text.strip().splitlines()[0] if text.strip() else "(empty)"
    if len(text) > LOG_CHARS:
        return clip(f"{first} ({len(text)} chars)")
    return clip(text.strip()) or "(empty)"


def for_model(text: str, limit: int = MODEL_CHARS) -> str:
    """Keep outputs the model sees bounded: head and tail, with a note in between."""
    if len(text) <= limit:
        return text
    head = text[: limit * 2 // 3]
    tail = text[-limit // 3 :]
    cut = len(text) - len(head) - len(tail)
    return f"{head}\n\n[... {cut} characters omitted ...]\n\n{tail}"


def needs_whole(text: str, whole: str, limit: int = MODEL_CHARS) -> bool:
    """Whether the model sees less than the whole output (so the whole must be kept apart)."""
    return len(whole) > limit or whole != text


def output_view(text: str, whole: str, summary: str = "", limit: int = MODEL_CHARS) -> str:
    """What the model sees of a large output: a note on its size, a summary (if one was
    made) and head / tail excerpts, within ``limit`` characters."""
    lines = whole.count("\n") + 1
    seen = "a summary and excerpts" if summary else "excerpts"
    note = (
        f"[The whole output is {len(whole):,} characters, {lines:,} lines; it is stored and "
        f"you see {seen}. For a part, run the tool again on a smaller range (read_file with "
        "offset/limit, or grep, head, tail in bash).]"
    )
    head = f"{note}\nSummary: {summary}\n\n" if summary else f"{note}\n\n"
    # for_model adds its own "[... N characters omitted ...]" note (under 64 characters).
    return head + for_model(text, max(1_000, limit - len(head) - 64))
