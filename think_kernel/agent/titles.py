"""Session titles by the ``fast`` role: a few words naming what the first request is about.

    title = await make_title(caller, "plot the distribution of price in sales.csv")

Called once per untitled session, after its first run; a failure leaves the session untitled.
"""

from __future__ import annotations

from .calls import ModelCaller
from .model import ModelError

TITLE_PROMPT = """\
Name this working session in at most six words, from the user's first request. Answer with \
the title only: no quotes, no final period."""
MAX_TITLE = 80


def clean_title(text: str) -> str:
    """The first line of a model's answer, without quotes or a final period, bounded."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    line = lines[0] if lines else ""
    line = line.strip().strip("\"'`*#").strip().rstrip(".")
    if line.lower().startswith("title:"):
        line = line[6:].strip()
    return line[:MAX_TITLE]


async def make_title(caller: ModelCaller, request: str, message_id: str = "") -> str:
    """A short title for a session from its first request ("" if the model fails)."""
    messages = [
        {"role": "system", "content": TITLE_PROMPT},
        {"role": "user", "content": request[:4000]},
    ]
    try:
        text, _usage = await caller.complete(
            messages, role="fast", purpose="title", message_id=message_id, retries=0
        )
    except ModelError:
        return ""
    return clean_title(text)
