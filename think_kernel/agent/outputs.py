"""Large tool outputs: the model gets a summary and excerpts, the store keeps the whole.

    view, usage = await model_view(text, whole, caller, summarize=True, message_id=mid)

An output up to 30,000 characters goes to the model as it is. Past that, the ``fast`` model
writes a short summary of it (skipped when ``summarize`` is off, or when the call fails: the
excerpts are enough to go on), and the model sees the summary with head and tail excerpts;
the loop stores the whole output as a blob of the tool message, for the sidebar's tool card and
``%think_output``.
"""

from __future__ import annotations

from typing import Any

from ..tools.summarize import MODEL_CHARS, for_model, needs_whole, output_view
from .calls import ModelCaller
from .events import Usage
from .model import ModelError

SUMMARY_PROMPT = """\
You summarise the output of a tool for a coding agent that cannot see all of it. In at most \
120 words say what the output shows: errors and their location, key numbers and names, the \
structure of the data. Facts only; answer with the summary."""


async def model_view(
    text: str,
    whole: str,
    caller: ModelCaller | None,
    *,
    summarize: bool,
    tool: str,
    message_id: str = "",
) -> tuple[str, Usage | None]:
    """What the model sees of a tool's output, and the usage of the summary call (if any)."""
    if not needs_whole(text, whole):
        return text, None
    if len(whole) <= MODEL_CHARS:
        return for_model(text), None  # the tool shortened it already; nothing to summarise
    summary, usage = "", None
    if summarize and caller is not None:
        # The fast model reads as much as half its window allows (about 3 chars a token).
        budget = max(4_000, min(60_000, caller.window("fast") * 3 // 2))
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": SUMMARY_PROMPT},
            {"role": "user", "content": f"Output of {tool}:\n\n{for_model(whole, budget)}"},
        ]
        try:
            summary, usage = await caller.complete(
                messages, role="fast", purpose="tool_summary", message_id=message_id
            )
        except ModelError:
            summary = ""  # excerpts alone still let the model go on
        summary = summary[:2_000]
    return output_view(text, whole, summary), usage
